#include "platform/cgroup_files.hpp"

#include <algorithm>

#include "platform/text.hpp"

namespace memgate::platform {

const char* to_string(CgroupVersion v) {
  switch (v) {
    case CgroupVersion::v1: return "v1";
    case CgroupVersion::v2: return "v2";
    case CgroupVersion::none: break;
  }
  return "none";
}

std::optional<std::vector<CgroupMembership>> parse_proc_cgroup(std::string_view text) {
  if (!text::ends_complete(text)) return std::nullopt;
  std::vector<CgroupMembership> out;
  for (auto line : text::lines(text)) {
    if (line.empty()) continue;
    // The path itself may contain ':', so split off only the first two.
    size_t a = line.find(':');
    size_t b = a == std::string_view::npos ? a : line.find(':', a + 1);
    if (b == std::string_view::npos) return std::nullopt;
    auto id = text::to_int(line.substr(0, a));
    auto path = line.substr(b + 1);
    if (!id || *id < 0 || path.empty() || path.front() != '/') return std::nullopt;
    CgroupMembership m;
    m.hierarchy_id = static_cast<int>(*id);
    m.path = std::string(path);
    auto ctrl = line.substr(a + 1, b - a - 1);
    if (!ctrl.empty()) {
      for (auto c : text::split(ctrl, ',')) m.controllers.emplace_back(c);
    }
    if ((m.hierarchy_id == 0) != m.controllers.empty()) return std::nullopt;
    out.push_back(std::move(m));
  }
  if (out.empty()) return std::nullopt;
  return out;
}

namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape_octal(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      auto d = s.substr(i + 1, 3);
      if (std::all_of(d.begin(), d.end(), [](char c) { return c >= '0' && c <= '7'; })) {
        out += static_cast<char>((d[0] - '0') * 64 + (d[1] - '0') * 8 + (d[2] - '0'));
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

bool is_v1_option(std::string_view opt) {
  // Super options that are not controller names.
  static constexpr std::string_view generic[] = {"rw", "ro", "noprefix", "clone_children", "xattr",
                                                 "cpuset_v2_mode", "favordynmods", "nosuid", "nodev",
                                                 "noexec", "relatime"};
  for (auto g : generic) {
    if (opt == g) return true;
  }
  return opt.find('=') != std::string_view::npos && opt.substr(0, 5) != "name=";
}

}  // namespace

std::optional<std::vector<CgroupMount>> parse_cgroup_mounts(std::string_view mountinfo) {
  if (!text::ends_complete(mountinfo)) return std::nullopt;
  std::vector<CgroupMount> out;
  for (auto line : text::lines(mountinfo)) {
    if (line.empty()) continue;
    // id parent major:minor root mount-point options [optional...] - fstype source super-options
    auto w = text::words(line);
    auto sep = std::find(w.begin(), w.end(), std::string_view("-"));
    if (w.size() < 10 || sep == w.end() || sep - w.begin() < 6 || w.end() - sep != 4) return std::nullopt;
    if (!text::to_int(w[0]) || !text::to_int(w[1]) || w[2].find(':') == std::string_view::npos) return std::nullopt;
    auto fstype = *(sep + 1);
    CgroupMount m;
    if (fstype == "cgroup2") m.version = CgroupVersion::v2;
    else if (fstype == "cgroup") m.version = CgroupVersion::v1;
    else continue;
    m.root = unescape_octal(w[3]);
    m.mount_point = unescape_octal(w[4]);
    if (m.version == CgroupVersion::v1) {
      for (auto opt : text::split(*(sep + 3), ',')) {
        if (!opt.empty() && !is_v1_option(opt)) m.controllers.emplace_back(opt);
      }
    }
    out.push_back(std::move(m));
  }
  return out;
}

std::optional<LimitValue> parse_v1_limit(std::string_view text) {
  auto v = text::to_int(text);
  if (!v || *v < 0) return std::nullopt;
  constexpr std::int64_t unlimited_from = std::int64_t{1} << 62;
  if (*v >= unlimited_from) return LimitValue{};
  return LimitValue{*v};
}

std::optional<LimitValue> parse_v2_limit(std::string_view text) {
  if (text::trim(text) == "max") return LimitValue{};
  auto v = text::to_int(text);
  if (!v || *v < 0) return std::nullopt;
  return LimitValue{*v};
}

std::optional<Bytes> parse_bytes_file(std::string_view text) {
  auto v = text::to_int(text);
  if (!v || *v < 0) return std::nullopt;
  return *v;
}

std::optional<double> parse_cpuacct_usage(std::string_view text) {
  if (!text::ends_complete(text)) return std::nullopt;  // cut inside its number
  auto v = text::to_int(text);
  if (!v || *v < 0) return std::nullopt;
  return static_cast<double>(*v) / 1e9;
}

std::optional<double> parse_cpu_stat_usage(std::string_view text) {
  auto kv = parse_keyed(text);
  if (!kv) return std::nullopt;
  auto it = kv->find("usage_usec");
  if (it == kv->end() || it->second < 0) return std::nullopt;
  return static_cast<double>(it->second) / 1e6;
}

std::optional<std::map<std::string, std::int64_t, std::less<>>> parse_keyed(std::string_view text) {
  std::map<std::string, std::int64_t, std::less<>> out;
  auto all = text::lines(text);
  for (size_t i = 0; i < all.size(); ++i) {
    if (i + 1 == all.size() && !text::ends_complete(text)) break;
    auto w = text::words(all[i]);
    if (w.empty()) continue;
    if (w.size() != 2) return std::nullopt;
    auto v = text::to_int(w[1]);
    if (!v) return std::nullopt;
    out.emplace(std::string(w[0]), *v);
  }
  if (out.empty()) return std::nullopt;
  return out;
}

std::optional<OomControl> parse_oom_control(std::string_view text) {
  auto kv = parse_keyed(text);
  if (!kv) return std::nullopt;
  auto disable = kv->find("oom_kill_disable");
  auto under = kv->find("under_oom");
  if (disable == kv->end() || under == kv->end()) return std::nullopt;
  OomControl oc;
  oc.oom_kill_disable = disable->second != 0;
  oc.under_oom = under->second != 0;
  if (auto k = kv->find("oom_kill"); k != kv->end()) oc.oom_kill = k->second;
  return oc;
}

std::optional<MemoryEvents> parse_memory_events(std::string_view text) {
  auto kv = parse_keyed(text);
  if (!kv) return std::nullopt;
  MemoryEvents ev;
  struct Field {
    std::string_view key;
    std::int64_t MemoryEvents::*member;
  };
  static constexpr Field fields[] = {{"low", &MemoryEvents::low},
                                     {"high", &MemoryEvents::high},
                                     {"max", &MemoryEvents::max},
                                     {"oom", &MemoryEvents::oom},
                                     {"oom_kill", &MemoryEvents::oom_kill}};
  for (const auto& f : fields) {
    auto it = kv->find(f.key);
    if (it == kv->end()) return std::nullopt;
    ev.*f.member = it->second;
  }
  return ev;
}

std::optional<Bytes> parse_inactive_file(std::string_view memory_stat, CgroupVersion version) {
  auto kv = parse_keyed(memory_stat);
  if (!kv) return std::nullopt;
  auto it = kv->find(version == CgroupVersion::v1 ? "total_inactive_file" : "inactive_file");
  if (it == kv->end() || it->second < 0) return std::nullopt;
  return it->second;
}

std::optional<FreezerState> parse_freezer_state(std::string_view text) {
  auto t = text::trim(text);
  if (t == "THAWED") return FreezerState::thawed;
  if (t == "FREEZING") return FreezerState::freezing;
  if (t == "FROZEN") return FreezerState::frozen;
  return std::nullopt;
}

std::optional<bool> parse_cgroup_freeze(std::string_view text) {
  auto t = text::trim(text);
  if (t == "0") return false;
  if (t == "1") return true;
  return std::nullopt;
}

namespace {
std::optional<bool> events_flag(std::string_view text, std::string_view key) {
  auto kv = parse_keyed(text);
  if (!kv) return std::nullopt;
  auto it = kv->find(key);
  if (it == kv->end() || (it->second != 0 && it->second != 1)) return std::nullopt;
  return it->second == 1;
}
}  // namespace

std::optional<bool> parse_events_frozen(std::string_view cgroup_events) { return events_flag(cgroup_events, "frozen"); }
std::optional<bool> parse_events_populated(std::string_view cgroup_events) {
  return events_flag(cgroup_events, "populated");
}

std::optional<std::vector<pid_t>> parse_cgroup_procs(std::string_view text) {
  if (!text::ends_complete(text)) return std::nullopt;
  std::vector<pid_t> out;
  for (auto line : text::lines(text)) {
    if (text::trim(line).empty()) continue;
    auto v = text::to_int(line);
    if (!v || *v <= 0 || *v > INT32_MAX) return std::nullopt;
    out.push_back(static_cast<pid_t>(*v));
  }
  return out;
}

std::vector<std::string> parse_controllers(std::string_view text) {
  std::vector<std::string> out;
  for (auto w : text::words(text::trim(text))) out.emplace_back(w);
  return out;
}

}  // namespace memgate::platform
