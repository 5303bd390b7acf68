#include "util/size.hpp"

#include <fmt/core.h>

#include <cctype>
#include <cmath>
#include <cstdlib>

namespace memgate {

Result<Bytes> parse_size(std::string_view text, std::optional<Bytes> percent_base) {
  std::string s(text);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  size_t start = 0;
  while (start < s.size() && std::isspace(static_cast<unsigned char>(s[start]))) ++start;
  s = s.substr(start);
  if (s.empty()) return Error{"empty size"};

  // Decimal digits with at most one point: strtod alone would also take
  // "0x10" (hex), "1e3", "inf" and "nan".
  const char* begin = s.c_str();
  const char* end = begin;
  while (std::isdigit(static_cast<unsigned char>(*end))) ++end;
  const bool fraction = end != begin && *end == '.' && std::isdigit(static_cast<unsigned char>(end[1]));
  if (fraction)
    for (++end; std::isdigit(static_cast<unsigned char>(*end));) ++end;
  if (end == begin || (!std::isalpha(static_cast<unsigned char>(*end)) && *end != '%' && *end != '\0')) {
    return Error{fmt::format("invalid size '{}': expected a number with K, M, G or T, or a percentage", text)};
  }
  const double number = std::strtod(std::string(begin, end).c_str(), nullptr);
  if (!std::isfinite(number)) return Error{fmt::format("invalid size '{}': too large", text)};
  std::string suffix(end);
  for (auto& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));

  if (suffix == "%") {
    if (!percent_base) return Error{fmt::format("invalid size '{}': a percentage needs a known capacity", text)};
    if (number > 100) return Error{fmt::format("invalid size '{}': a percentage above 100%", text)};
    return static_cast<Bytes>(std::floor(static_cast<double>(*percent_base) * number / 100.0));
  }
  if (suffix.size() >= 2 && suffix.substr(suffix.size() - 2) == "IB") suffix.resize(suffix.size() - 2);
  else if (suffix.size() >= 2 && suffix.back() == 'B') suffix.pop_back();

  if ((suffix.empty() || suffix == "B") && fraction)
    return Error{fmt::format("invalid size '{}': a fraction of a byte (give a unit: K, M, G or T)", text)};
  double scale = 0;
  if (suffix.empty() || suffix == "B") scale = 1;
  else if (suffix == "K") scale = static_cast<double>(KiB);
  else if (suffix == "M") scale = static_cast<double>(MiB);
  else if (suffix == "G") scale = static_cast<double>(GiB);
  else if (suffix == "T") scale = static_cast<double>(TiB);
  else return Error{fmt::format("invalid size '{}': unknown unit '{}' (use K, M, G or T)", text, end)};

  double bytes = number * scale;
  if (bytes > 9.0e18) return Error{fmt::format("invalid size '{}': too large", text)};
  return static_cast<Bytes>(std::llround(bytes));
}

std::string format_bytes(Bytes bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  bool negative = bytes < 0;
  double v = std::fabs(static_cast<double>(bytes));
  int u = 0;
  while (v >= 1024.0 && u < 4) {
    v /= 1024.0;
    ++u;
  }
  std::string out;
  if (u == 0) out = fmt::format("{} B", static_cast<long long>(v));
  else if (v >= 100) out = fmt::format("{:.0f} {}", v, units[u]);
  else if (v >= 10) out = fmt::format("{:.1f} {}", v, units[u]);
  else out = fmt::format("{:.2f} {}", v, units[u]);
  return negative ? "-" + out : out;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) seconds = 0;
  if (seconds < 60) return fmt::format("{:.1f}s", seconds);
  long long s = std::llround(seconds);
  if (s < 3600) return fmt::format("{}m{:02d}s", s / 60, static_cast<int>(s % 60));
  return fmt::format("{}h{:02d}m", s / 3600, static_cast<int>((s % 3600) / 60));
}

}  // namespace memgate
