#pragma once
#include <string>
std::string greet(const std::string& who);
int sum_of_squares(int n);
