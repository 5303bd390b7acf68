// Helpers shared by the libFuzzer targets (tests/fuzz/README.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace memgate::fuzz {

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
  return {reinterpret_cast<const char*>(data), size};
}

// The input cut at NUL bytes: how the targets that take several strings
// (argv, two files) read one input, so seeds stay readable.
inline std::vector<std::string> split_nul(std::string_view text) {
  std::vector<std::string> out;
  for (;;) {
    std::size_t nul = text.find('\0');
    out.emplace_back(text.substr(0, nul));
    if (nul == std::string_view::npos) return out;
    text.remove_prefix(nul + 1);
  }
}

// A failed invariant: abort, so libFuzzer saves the input as a crash.
[[noreturn]] void invariant_failed(const char* what);

}  // namespace memgate::fuzz

#define FUZZ_CHECK(cond)                                      \
  do {                                                        \
    if (!(cond)) ::memgate::fuzz::invariant_failed(#cond);    \
  } while (0)
