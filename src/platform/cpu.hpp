// How many cores this process may really use: its CPU affinity, lowered by
// any cgroup CPU quota on the way up the hierarchy (a container with
// --cpus=4 on a 128-core host gets 4, not 128).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "platform/cgroup.hpp"

namespace memgate::platform {

// A CFS bandwidth limit: `quota_us` of CPU time every `period_us`.
struct CpuQuota {
  std::optional<std::int64_t> quota_us;  // nullopt = no limit
  std::int64_t period_us = 100000;
};

// v2 cpu.max: "max 100000" or "200000 100000".
std::optional<CpuQuota> parse_cpu_max(std::string_view text);
// v1 cpu.cfs_quota_us ("-1" = no limit) and cpu.cfs_period_us.
std::optional<CpuQuota> parse_cfs_quota(std::string_view quota_text, std::string_view period_text);

// ceil(quota / period), at least 1; nullopt when there is no limit.
std::optional<int> quota_cores(const CpuQuota& quota);

// Pure: min(affinity, quota cores), at least 1.
int usable_cores(int affinity_cores, std::optional<int> quota_cores);

// sched_getaffinity's count (falls back to the online CPUs, then 1).
int affinity_cores();

// The tightest quota from our cpu cgroup up to its hierarchy's root, in
// cores; nullopt when none limits us or there is no cpu controller.
std::optional<int> cgroup_quota_cores(const CgroupLayout& layout);

// The machine's busy CPU time in seconds, all CPUs together (user, nice,
// system, irq, softirq, steal), from the first line of /proc/stat, whose
// figures are in ticks of `ticks_per_s` (USER_HZ). Subtracting the build's
// own CPU from it over the build says how loaded the machine was beside it.
std::optional<double> parse_proc_stat_busy_s(std::string_view text, long ticks_per_s);
std::optional<double> read_machine_busy_s(const std::string& path = "/proc/stat");

// Whether our cpu cgroup, or one above it, has a CPU weight above the
// default (v1 cpu.shares > 1024, v2 cpu.weight > 100): then what others use
// is what the build leaves, not CPU taken from it.
bool cgroup_cpu_weight_raised(const CgroupLayout& layout);

// CPU time of this process and of its children it has reaped (with theirs,
// when they reaped theirs): a finished build's whole tree.
double self_and_children_cpu_s();

// usable_cores(affinity_cores(), cgroup_quota_cores(detect_cgroups())).
int detect_cores(const CgroupLayout& layout);
int detect_cores();

}  // namespace memgate::platform
