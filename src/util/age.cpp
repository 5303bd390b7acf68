#include "util/age.hpp"

#include <fmt/core.h>

#include "util/text.hpp"

namespace memgate {

Result<double> parse_age(std::string_view text) {
  auto bad = [&] {
    return Error{fmt::format("an age is a whole number and a unit (s, m, h, d or w), e.g. 30d, 12h or 2w; not '{}'",
                             printable(text))};
  };
  if (text.size() < 2 || text.size() > 12) return bad();
  double unit = 0;
  switch (text.back()) {
    case 's': unit = 1; break;
    case 'm': unit = 60; break;
    case 'h': unit = 3600; break;
    case 'd': unit = 86400; break;
    case 'w': unit = 7 * 86400; break;
    default: return bad();
  }
  double n = 0;
  for (char c : text.substr(0, text.size() - 1)) {
    if (c < '0' || c > '9') return bad();
    n = n * 10 + (c - '0');
  }
  const double seconds = n * unit;
  if (seconds > 100 * 366 * 86400.0) return Error{fmt::format("an age of at most 100 years, not '{}'", printable(text))};
  return seconds;
}

}  // namespace memgate
