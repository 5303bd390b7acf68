// analyze_command (src/predict/identity.hpp): a compiler command line as
// any build may write it, read by every wrapper.
//
// Input: strings separated by NUL bytes: cwd, NVCC_PREPEND_FLAGS,
// HCC_AMDGPU_TARGET, then argv (argv[0] first; may be empty).
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_input.hpp"
#include "predict/identity.hpp"

using namespace memgate;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::vector<std::string> parts = fuzz::split_nul(fuzz::as_text(data, size));
  parts.resize(std::max<std::size_t>(parts.size(), 3));
  const std::string cwd = parts[0];
  std::vector<std::string> argv(parts.begin() + 3, parts.end());

  argv = with_nvcc_env_flags(argv, parts[1], parts[1]);
  argv = with_hip_env_targets(argv, parts[2]);
  CommandInfo info = analyze_command(argv, cwd);
  FUZZ_CHECK(!info.key.identity.empty());
  FUZZ_CHECK(info.key.cpu_weight >= 1);
  FUZZ_CHECK(info.mode == "compile" || info.mode == "preprocess" || info.mode == "link" || info.mode == "probe");
  // Deterministic: the same command is the same job.
  CommandInfo again = analyze_command(argv, cwd);
  FUZZ_CHECK(again.key.identity == info.key.identity);
  FUZZ_CHECK(argv_digest(argv) == argv_digest(argv));
  return 0;
}
