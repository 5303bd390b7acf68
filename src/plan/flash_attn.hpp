// Our model of the flash-attn 2.8 CUDA kernel build, which memgate exists
// for (and which the measurements in tests/fixtures/flash-attn cover in
// part): the list of kernel files it compiles, and for a file that was not
// measured, the measured file most like it.
//
// The list: 4 kinds {fwd, fwd_split, fwd_split_align, bwd} x head dims
// {32, 64, 96, 128, 192, 256} x {fp16, bf16} x {plain, causal}, named
// flash_<kind>_hdim<H>_<dtype>[_causal]_sm80.cu: 96 files. flash_api.cpp
// (host C++) is not part of it. "Most like it": same kind, nearest head
// dim (log scale, the larger on a tie), then same dtype, then causality.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "plan/jobs_csv.hpp"

namespace memgate::plan {

// The 96 kernel files, in build order.
std::vector<std::string> flash_attn_kernel_files();

// Whether a file name is one of the model's kernels.
bool is_flash_attn_kernel(std::string_view file);

// The measured job most like `file`; nullptr when no measured job is of
// its kind (or `file` is not a kernel of the model).
const MeasuredRow* nearest_flash_attn_kernel(const std::vector<MeasuredRow>& measured, std::string_view file);

}  // namespace memgate::plan
