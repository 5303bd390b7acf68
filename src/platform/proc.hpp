// Processes as /proc shows them. Every reader takes a proc root so tests can
// point it at a fixture tree (tests/fixtures/proc/tree); a process that
// vanishes mid-read is a nullopt, never an error.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/size.hpp"

namespace memgate::platform {

// The fields of /proc/PID/stat memgate uses. Times are in clock ticks
// (sysconf(_SC_CLK_TCK)); starttime is since boot and, with the pid,
// identifies one process for its whole life (pids are recycled).
struct ProcStat {
  pid_t pid = 0;
  std::string comm;  // at most 15 bytes, may contain spaces and ')'
  char state = '?';  // R, S, D, Z, T, ...
  pid_t ppid = 0;
  pid_t pgrp = 0;
  pid_t session = 0;
  std::uint64_t utime = 0, stime = 0;
  std::uint64_t cutime = 0, cstime = 0;  // of the children it has waited for (fields 16, 17)
  std::uint64_t starttime = 0;  // field 22
  std::int64_t rss_pages = 0;   // field 24
};

// comm is whatever lies between the first '(' and the LAST ')', because a
// program may name itself "a) b (c". nullopt for anything malformed.
std::optional<ProcStat> parse_proc_stat(std::string_view text);

struct ProcStatus {
  std::string name;
  char state = '?';
  pid_t ppid = 0;
  uid_t uid = 0;                // real uid
  std::optional<Bytes> vm_rss;  // absent for kernel threads and zombies
};

// Needs Name, State, PPid and Uid; nullopt otherwise.
std::optional<ProcStatus> parse_proc_status(std::string_view text);

// NUL-separated /proc/PID/cmdline. Empty for kernel threads and zombies.
std::vector<std::string> parse_cmdline(std::string_view text);

// What the rest of memgate wants to know about one process.
struct ProcInfo {
  pid_t pid = 0;
  pid_t ppid = 0;
  std::string comm;
  char state = '?';
  uid_t uid = 0;
  std::uint64_t starttime = 0;  // clock ticks since boot
  std::uint64_t utime = 0, stime = 0;
  std::uint64_t cutime = 0, cstime = 0;
  Bytes rss = 0;  // VmRSS; 0 when the kernel shows none (zombie, kernel thread)
};

std::optional<ProcInfo> read_process(pid_t pid, const std::string& proc_root = "/proc");
std::optional<std::vector<std::string>> read_cmdline(pid_t pid, const std::string& proc_root = "/proc");

// Only the stat file: cheap enough to re-check a pid's identity right
// before signalling it.
std::optional<ProcStat> read_proc_stat(pid_t pid, const std::string& proc_root = "/proc");

// Numeric entries of the proc root, ascending.
std::vector<pid_t> list_pids(const std::string& proc_root = "/proc");

// Every process readable right now; vanished ones are skipped.
std::vector<ProcInfo> read_all_processes(const std::string& proc_root = "/proc");

// Pure: `root` (if present in `all`) and all its descendants by ppid,
// root first, then breadth-first.
std::vector<pid_t> descendants(pid_t root, const std::vector<ProcInfo>& all);

// Readers over a fresh snapshot. process_tree is empty if `root` is gone.
std::vector<pid_t> process_tree(pid_t root, const std::string& proc_root = "/proc");
Bytes tree_rss(pid_t root, const std::string& proc_root = "/proc");
// Pure counterpart of tree_rss over a snapshot.
Bytes tree_rss(pid_t root, const std::vector<ProcInfo>& all);
// CPU time of a process tree in clock ticks: each live member's own
// time and that of the children it has waited for (a finished cicc is
// counted in nvcc's cutime). Children nobody waited for yet are missed.
std::uint64_t tree_cpu_ticks(pid_t root, const std::vector<ProcInfo>& all);
// ... over a fresh snapshot, in seconds.
double tree_cpu_s(pid_t root, const std::string& proc_root = "/proc");

// Whether `pid` is `ancestor` or one of its descendants, walking ppid
// links up from `pid` (bounded: a damaged or cyclic chain is "no"). How a
// pid a wrapper reports is trusted: it must lie below the wrapper itself.
bool descends_from(pid_t pid, pid_t ancestor, const std::string& proc_root = "/proc");

double ticks_to_seconds(std::uint64_t ticks);

// One /proc snapshot shared by every reader within `max_age_s` (by the
// monotonic clock): N jobs measured from /proc in one tick cost one scan
// of /proc, not N. Not for killing or freezing, which want a fresh tree.
class ProcSnapshot {
 public:
  explicit ProcSnapshot(double max_age_s = 0.05, std::string proc_root = "/proc");
  const std::vector<ProcInfo>& all();
  int scans() const { return scans_; }

 private:
  double max_age_s_;
  std::string proc_root_;
  double taken_s_ = -1;
  int scans_ = 0;
  std::vector<ProcInfo> all_;
};

}  // namespace memgate::platform
