// Ages as the command line spells them: "30d", "12h", "2w".
#pragma once

#include <string_view>

#include "util/result.hpp"

namespace memgate {

// A whole number and one unit, s, m (minutes), h, d or w ("30d", "12h",
// "2w"), at most 100 years; in seconds. The error says what is expected.
Result<double> parse_age(std::string_view text);

}  // namespace memgate
