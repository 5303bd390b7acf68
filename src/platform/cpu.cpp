#include "platform/cpu.hpp"

#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "platform/text.hpp"
#include "util/fs.hpp"

namespace memgate::platform {

std::optional<double> parse_proc_stat_busy_s(std::string_view text, long ticks_per_s) {
  if (ticks_per_s <= 0 || text.substr(0, 4) != "cpu ") return std::nullopt;
  std::vector<std::string_view> w = text::words(text.substr(0, text.find('\n')));
  // cpu user nice system idle iowait irq softirq steal [guest guest_nice];
  // guest time is in user already.
  if (w.size() < 5) return std::nullopt;
  double busy = 0;
  for (size_t i : {1, 2, 3, 6, 7, 8}) {
    if (i >= w.size()) break;
    auto v = text::to_int(w[i]);
    if (!v || *v < 0) return std::nullopt;
    busy += static_cast<double>(*v);
  }
  return busy / static_cast<double>(ticks_per_s);
}

std::optional<double> read_machine_busy_s(const std::string& path) {
  auto text = read_file(path);
  if (!text) return std::nullopt;
  return parse_proc_stat_busy_s(*text, ::sysconf(_SC_CLK_TCK));
}

double self_and_children_cpu_s() {
  double total = 0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    struct rusage u {};
    if (::getrusage(who, &u) != 0) continue;
    total += static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
             static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
  }
  return total;
}

std::optional<CpuQuota> parse_cpu_max(std::string_view text) {
  auto w = text::words(text::trim(text));
  if (w.size() != 2) return std::nullopt;
  auto period = text::to_int(w[1]);
  if (!period || *period <= 0) return std::nullopt;
  CpuQuota q;
  q.period_us = *period;
  if (w[0] == "max") return q;
  auto quota = text::to_int(w[0]);
  if (!quota || *quota <= 0) return std::nullopt;
  q.quota_us = *quota;
  return q;
}

std::optional<CpuQuota> parse_cfs_quota(std::string_view quota_text, std::string_view period_text) {
  auto quota = text::to_int(quota_text);
  auto period = text::to_int(period_text);
  if (!quota || !period || *period <= 0 || *quota == 0 || *quota < -1) return std::nullopt;
  CpuQuota q;
  q.period_us = *period;
  if (*quota > 0) q.quota_us = *quota;
  return q;
}

std::optional<int> quota_cores(const CpuQuota& quota) {
  if (!quota.quota_us || quota.period_us <= 0) return std::nullopt;
  // Rounded up without adding first: quota + period - 1 overflows for a
  // quota near 2^63 (cpu.max takes up to that).
  const std::int64_t q = *quota.quota_us;
  std::int64_t cores = q / quota.period_us + (q % quota.period_us > 0 ? 1 : 0);
  return static_cast<int>(std::clamp<std::int64_t>(cores, 1, 1 << 20));
}

int usable_cores(int affinity, std::optional<int> quota) {
  int n = std::max(affinity, 1);
  if (quota) n = std::min(n, std::max(*quota, 1));
  return n;
}

int affinity_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0) {
    int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  long online = ::sysconf(_SC_NPROCESSORS_ONLN);
  return online > 0 ? static_cast<int>(online) : 1;
}

bool cgroup_cpu_weight_raised(const CgroupLayout& layout) {
  if (layout.cpu_version == CgroupVersion::none || layout.cpu_dir.empty()) return false;
  const bool v2 = layout.cpu_version == CgroupVersion::v2;
  for (const auto& dir : walk_up(layout.cpu_dir, layout.cpu_root)) {
    auto text = read_file(join_path(dir, v2 ? "cpu.weight" : "cpu.shares"));
    if (!text) continue;
    auto weight = text::to_int(*text);
    if (weight && *weight > (v2 ? 100 : 1024)) return true;
  }
  return false;
}

std::optional<int> cgroup_quota_cores(const CgroupLayout& layout) {
  if (layout.cpu_version == CgroupVersion::none || layout.cpu_dir.empty()) return std::nullopt;
  std::optional<int> best;
  for (const auto& dir : walk_up(layout.cpu_dir, layout.cpu_root)) {
    std::optional<CpuQuota> q;
    if (layout.cpu_version == CgroupVersion::v2) {
      if (auto t = read_file(join_path(dir, "cpu.max"))) q = parse_cpu_max(*t);
    } else {
      auto quota = read_file(join_path(dir, "cpu.cfs_quota_us"));
      auto period = read_file(join_path(dir, "cpu.cfs_period_us"));
      if (quota && period) q = parse_cfs_quota(*quota, *period);
    }
    auto cores = q ? quota_cores(*q) : std::nullopt;
    if (cores && (!best || *cores < *best)) best = cores;
  }
  return best;
}

int detect_cores(const CgroupLayout& layout) { return usable_cores(affinity_cores(), cgroup_quota_cores(layout)); }

int detect_cores() { return detect_cores(detect_cgroups()); }

}  // namespace memgate::platform
