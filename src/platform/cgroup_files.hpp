// Pure parsers for the files of cgroup v1 and v2, for /proc/self/cgroup and
// for /proc/self/mountinfo. They never touch the filesystem, so tests feed
// them recorded files (tests/fixtures/cgroup1, cgroup2, proc). Anything
// malformed or truncated is nullopt: "unknown", never a guess.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/size.hpp"

namespace memgate::platform {

enum class CgroupVersion { none, v1, v2 };
const char* to_string(CgroupVersion v);  // "none", "v1", "v2"

// One line of /proc/PID/cgroup: "4:memory:/a/b", "2:cpu,cpuacct:/x",
// "9:name=systemd:/" (v1) or "0::/x" (v2, no controllers).
struct CgroupMembership {
  int hierarchy_id = 0;
  std::vector<std::string> controllers;  // "name=systemd" kept as is
  std::string path;                      // relative to the hierarchy's root
};
std::optional<std::vector<CgroupMembership>> parse_proc_cgroup(std::string_view text);

// A cgroup or cgroup2 mount from /proc/PID/mountinfo.
struct CgroupMount {
  CgroupVersion version = CgroupVersion::none;
  std::string root;         // which cgroup of the hierarchy is mounted (usually "/")
  std::string mount_point;  // octal escapes (\040) decoded
  std::vector<std::string> controllers;  // v1: from the super options; v2: empty
};
// Only cgroup and cgroup2 mounts are returned; other mounts are skipped,
// but a line that does not have mountinfo's shape makes the whole file
// unknown.
std::optional<std::vector<CgroupMount>> parse_cgroup_mounts(std::string_view mountinfo);

// A memory limit: a byte count, or no limit at all.
struct LimitValue {
  std::optional<Bytes> bytes;  // nullopt = unlimited
  bool unlimited() const { return !bytes; }
};
// v1 memory.limit_in_bytes: the kernel shows "no limit" as a huge
// page-rounded number, so anything >= 2^62 counts as unlimited.
std::optional<LimitValue> parse_v1_limit(std::string_view text);
// v2 memory.max / memory.high: "max" or a byte count.
std::optional<LimitValue> parse_v2_limit(std::string_view text);

// A file holding one non-negative byte count: usage_in_bytes,
// max_usage_in_bytes, memory.current, memory.peak.
std::optional<Bytes> parse_bytes_file(std::string_view text);

// CPU time of a cgroup, in seconds: v1 cpuacct.usage (nanoseconds, one
// number) and v2 cpu.stat's usage_usec line (present without the cpu
// controller). nullopt for anything malformed or cut short.
std::optional<double> parse_cpuacct_usage(std::string_view text);
std::optional<double> parse_cpu_stat_usage(std::string_view text);

// "key value" lines (memory.stat, memory.events, memory.oom_control,
// cgroup.events). A last line without '\n' is dropped, since it may have
// been cut inside its number.
std::optional<std::map<std::string, std::int64_t, std::less<>>> parse_keyed(std::string_view text);

// v1 memory.oom_control. oom_kill is missing on kernels before 4.13.
struct OomControl {
  bool oom_kill_disable = false;
  bool under_oom = false;
  std::optional<std::int64_t> oom_kill;
};
std::optional<OomControl> parse_oom_control(std::string_view text);

// v2 memory.events (hierarchical) or memory.events.local.
struct MemoryEvents {
  std::int64_t low = 0, high = 0, max = 0, oom = 0, oom_kill = 0;
};
std::optional<MemoryEvents> parse_memory_events(std::string_view text);

// Page cache the kernel can drop first, from memory.stat: v1
// "total_inactive_file" (hierarchical), v2 "inactive_file".
std::optional<Bytes> parse_inactive_file(std::string_view memory_stat, CgroupVersion version);

enum class FreezerState { thawed, freezing, frozen };
std::optional<FreezerState> parse_freezer_state(std::string_view text);  // v1 freezer.state
std::optional<bool> parse_cgroup_freeze(std::string_view text);          // v2 cgroup.freeze: "0"/"1"
// v2 cgroup.events "frozen" (the state reached, where cgroup.freeze is only
// the state asked for) and "populated".
std::optional<bool> parse_events_frozen(std::string_view cgroup_events);
std::optional<bool> parse_events_populated(std::string_view cgroup_events);

// cgroup.procs: one pid per line.
std::optional<std::vector<pid_t>> parse_cgroup_procs(std::string_view text);

// cgroup.controllers / cgroup.subtree_control: space-separated names.
std::vector<std::string> parse_controllers(std::string_view text);

}  // namespace memgate::platform
