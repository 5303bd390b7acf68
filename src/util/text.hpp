// String helpers with nothing memgate-specific in them, used from the
// wrapper to the parsers. Views point into the caller's text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace memgate {

// Splits on every `sep`: "a::b" gives "a", "", "b"; "" gives one "".
inline std::vector<std::string_view> split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  for (;;) {
    auto at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) return out;
    s.remove_prefix(at + 1);
  }
}

// The last path component: "a/b/c.o" gives "c.o", "c.o" itself, "a/" "".
inline std::string_view base_name(std::string_view path) {
  auto slash = path.find_last_of('/');
  return slash == std::string_view::npos ? path : path.substr(slash + 1);
}

// 64-bit FNV-1a: a fast, stable, non-cryptographic hash for names and
// digests that must not change between versions. Feed pieces in order by
// passing the previous result as `h`.
inline constexpr std::uint64_t kFnvOffset = 14695981039346656037ULL;
inline std::uint64_t fnv1a64(std::string_view s, std::uint64_t h = kFnvOffset) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return h;
}

// Text that came from outside (commands, paths, identities: any byte a
// build or another user chose) made safe for a terminal: every C0 control
// (newline and ESC included), DEL and every C1 control (U+0080..U+009F,
// which UTF-8 spells C2 80..C2 9F) becomes '?', so it can neither break a
// line nor drive the terminal. Everything else, UTF-8 included, is kept.
inline std::string printable(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    if (c == 0xC2 && i + 1 < s.size() && (static_cast<unsigned char>(s[i + 1]) & 0xE0) == 0x80) {
      out += '?';
      ++i;
    } else {
      out += (c < 0x20 || c == 0x7f) ? '?' : static_cast<char>(c);
    }
  }
  return out;
}

}  // namespace memgate
