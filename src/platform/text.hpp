// Tokenising helpers shared by the kernel-file parsers. Kernel files are
// small and line-oriented; these never throw, and the pieces they return
// are views into the caller's text.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "util/text.hpp"

namespace memgate::platform::text {

std::string_view trim(std::string_view s);

// Lines without their '\n'. A final line without '\n' is kept, so callers
// can tell a truncated last line from a complete one with ends_complete().
std::vector<std::string_view> lines(std::string_view s);
bool ends_complete(std::string_view s);  // empty, or ends with '\n'

// Splits on runs of spaces and tabs.
std::vector<std::string_view> words(std::string_view s);
using memgate::split;  // util/text.hpp

// The whole (trimmed) text must be a decimal integer; no sign for unsigned.
std::optional<std::int64_t> to_int(std::string_view s);
std::optional<std::uint64_t> to_uint(std::string_view s);
std::optional<double> to_double(std::string_view s);

}  // namespace memgate::platform::text
