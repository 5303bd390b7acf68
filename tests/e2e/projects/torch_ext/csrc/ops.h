// The extension's functions (defined in ops_*.cpp and kernel.cpp).
#pragma once

#include <cstdint>

#include <torch/extension.h>

torch::Tensor add_scaled(const torch::Tensor& a, const torch::Tensor& b, double alpha);
torch::Tensor sum_of_squares(const torch::Tensor& t);
std::int64_t triangle(std::int64_t n);  // kernel.cpp, no torch headers
