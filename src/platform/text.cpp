#include "platform/text.hpp"

#include <charconv>
#include <cmath>

namespace memgate::platform::text {

std::string_view trim(std::string_view s) {
  const char* ws = " \t\n\r";
  size_t b = s.find_first_not_of(ws);
  if (b == std::string_view::npos) return {};
  size_t e = s.find_last_not_of(ws);
  return s.substr(b, e - b + 1);
}

std::vector<std::string_view> lines(std::string_view s) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    size_t nl = s.find('\n');
    if (nl == std::string_view::npos) {
      out.push_back(s);
      break;
    }
    out.push_back(s.substr(0, nl));
    s.remove_prefix(nl + 1);
  }
  return out;
}

bool ends_complete(std::string_view s) { return s.empty() || s.back() == '\n'; }

std::vector<std::string_view> words(std::string_view s) {
  std::vector<std::string_view> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
    size_t start = i;
    while (i < s.size() && s[i] != ' ' && s[i] != '\t') ++i;
    if (i > start) out.push_back(s.substr(start, i - start));
  }
  return out;
}

std::optional<std::int64_t> to_int(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<std::uint64_t> to_uint(std::string_view s) {
  s = trim(s);
  if (s.empty() || s.front() == '-') return std::nullopt;
  std::uint64_t v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
  return v;
}

std::optional<double> to_double(std::string_view s) {
  s = trim(s);
  if (s.empty()) return std::nullopt;
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

}  // namespace memgate::platform::text
