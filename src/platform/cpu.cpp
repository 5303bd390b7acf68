#include "platform/cpu.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>

#include "platform/text.hpp"
#include "util/fs.hpp"

namespace memgate::platform {

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
