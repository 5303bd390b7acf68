#include "fuzz_input.hpp"

#include <cstdio>
#include <cstdlib>

namespace memgate::fuzz {

void invariant_failed(const char* what) {
  std::fprintf(stderr, "fuzz invariant failed: %s\n", what);
  std::abort();
}

}  // namespace memgate::fuzz
