#include "platform/meminfo.hpp"

#include "platform/text.hpp"
#include "util/fs.hpp"

namespace memgate::platform {

namespace {

// "MemTotal:       24683620 kB": only values with their "kB" unit count,
// so a line cut short by truncation cannot pass as a tiny number.
std::optional<Bytes> kb_value(std::string_view rest) {
  auto w = text::words(rest);
  if (w.size() != 2 || w[1] != "kB") return std::nullopt;
  auto kb = text::to_int(w[0]);
  if (!kb || *kb < 0 || *kb > (INT64_MAX / 1024)) return std::nullopt;
  return *kb * 1024;
}

}  // namespace

MemInfo parse_meminfo(std::string_view text) {
  MemInfo m;
  struct Field {
    std::string_view key;
    std::optional<Bytes> MemInfo::*member;
  };
  static constexpr Field fields[] = {
      {"MemTotal", &MemInfo::total},   {"MemAvailable", &MemInfo::available},
      {"MemFree", &MemInfo::free},     {"Cached", &MemInfo::cached},
      {"Shmem", &MemInfo::shmem},      {"SwapTotal", &MemInfo::swap_total},
      {"SwapFree", &MemInfo::swap_free},
  };
  for (auto line : text::lines(text)) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    auto key = line.substr(0, colon);
    for (const auto& f : fields) {
      if (key == f.key) m.*f.member = kb_value(line.substr(colon + 1));
    }
  }
  return m;
}

std::optional<MemInfo> read_meminfo(const std::string& path) {
  auto text = read_kernel_file(path);
  if (!text) return std::nullopt;
  return parse_meminfo(*text);
}

}  // namespace memgate::platform
