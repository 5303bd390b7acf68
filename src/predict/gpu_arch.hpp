// GPU target flags of nvcc and clang/hipcc, normalised. Every virtual arch
// is one cicc (or device clang) pipeline inside the job: that is what
// multiplies its memory, and what nvcc --threads runs in parallel.
#pragma once

#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace memgate {

class GpuArchs {
 public:
  // "arch=compute_90a,code=[sm_90a,compute_90a]" (quotes and brackets allowed).
  void add_gencode(std::string_view value);
  // -arch / --gpu-architecture: "sm_80", "compute_90", "all", or a list.
  void add_arch(std::string_view value);
  // -code / --gpu-code: a list of targets for the -arch virtual arch.
  void add_code(std::string_view value);
  // clang/hipcc --offload-arch, --cuda-gpu-arch, hipcc --amdgpu-target:
  // "gfx90a", "gfx90a:xnack+", "sm_80", a list. Each target is one device
  // compile (features make their own code object).
  void add_offload(std::string_view value);
  // clang --no-offload-arch: drops targets given before it ("all": every one).
  void remove_offload(std::string_view value);

  // Sorted, de-duplicated targets, e.g. {"sm_80", "sm_90a", "compute_90a"}.
  std::vector<std::string> targets() const;
  // Distinct virtual archs (pipelines); 0 if no GPU flag was seen.
  int pipelines() const;

 private:
  std::set<std::string> targets_, virtual_;   // from -gencode and offload flags
  std::vector<std::string> arch_, code_;      // -arch / -code, combined at the end
};

// "sm_80" -> "compute_80"; "lto_90a" -> "compute_90a"; others unchanged.
std::string virtual_arch_of(std::string_view target);

// Order targets by number, then variant: sm_80 < sm_90 < sm_90a < sm_100f.
bool arch_less(const std::string& a, const std::string& b);

}  // namespace memgate
