// The small kernel file: plain C++, no torch headers.
#include <cstdint>

std::int64_t triangle(std::int64_t n) {
  std::int64_t s = 0;
  for (std::int64_t i = 1; i <= n; ++i) s += i;
  return s;
}
