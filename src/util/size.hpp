// Memory sizes as the command line spells them: "2560M", "8G", "512K",
// "1T", a plain byte count, or "80%" of a base (the detected capacity).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "util/result.hpp"

namespace memgate {

using Bytes = std::int64_t;  // signed: budgets are subtracted from freely

constexpr Bytes KiB = 1024;
constexpr Bytes MiB = 1024 * KiB;
constexpr Bytes GiB = 1024 * MiB;
constexpr Bytes TiB = 1024 * GiB;

// Binary units (K=1024). A percentage needs `percent_base`; without it a
// percentage is an error. Case-insensitive suffix, optional trailing "B"/"iB".
Result<Bytes> parse_size(std::string_view text, std::optional<Bytes> percent_base = std::nullopt);

// "2.5 GiB", "512 MiB", "900 KiB", "12 B": three significant digits at most.
std::string format_bytes(Bytes bytes);

// Seconds as "1.2s", "3m05s", "1h02m".
std::string format_duration(double seconds);

}  // namespace memgate
