// Compilers that escaped the gate (anything that still escapes is found
// in the build's cgroup, measured, and named in the summary).
//
// Every tick the runner knows the processes of the build's cgroup tree and
// those inside job cgroups. A process that is a compiler or linker (the
// table in src/preload/compilers.h, by argv[0] or by its executable), runs
// in the build but outside every job, and is not below another such
// process, is an ungated job: a statically linked tool's compiler, a
// user's `env -u LD_PRELOAD g++`, anything the interception missed. Its
// memory is the RSS of its whole process tree (the cc1plus under a g++).
//
// Version probes (`g++ --version`, marked MEMGATE_JOB=probe by the wrapper)
// are ungated by design and never reported.
#pragma once

#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "util/size.hpp"

namespace memgate {

struct UngatedProcess {
  pid_t pid = 0;
  std::uint64_t starttime = 0;     // with pid, one process for its whole life
  pid_t ppid = 0;
  std::string exe;                 // /proc/PID/exe ("" if unreadable)
  std::vector<std::string> argv;   // /proc/PID/cmdline
  std::string tool;                // the name that made it a compiler (argv[0]'s or exe's basename)
  std::string parent;              // the parent's exe, else its comm
  std::string how;                 // why it is ungated, and what to do about it
  Bytes rss = 0;                   // the process and its descendants, now
};

// Pure over the /proc tree at `proc_root` (tests point it at a fixture):
// the ungated compilers among `build_pids` (the processes in the build's
// cgroups outside the jobs' own), never taking those in `job_pids` (known
// to be gated: the wrappers connected to memgate, the trees of jobs
// measured from /proc) or their children (a wrapper's program between its
// fork and its joining the job's cgroup).
// Ordered by pid. `wrappers`, if given, receives the pids read as
// memgate's own wrapper (one still waiting to connect), which are never
// ungated.
std::vector<UngatedProcess> find_ungated(const std::vector<pid_t>& build_pids, const std::vector<pid_t>& job_pids,
                                         const std::string& proc_root = "/proc",
                                         std::vector<pid_t>* wrappers = nullptr);

// Why a process with this environment and this executable is ungated
// (the `how` of UngatedProcess); exposed for tests. `environ` is
// /proc/PID/environ as read ("" if unreadable), `exe_static` whether its
// executable has no program interpreter.
std::string ungated_reason(const std::string& environ, bool exe_static, const std::string& parent);

// Accumulates the ticks of one build: each ungated process once, with its
// peak RSS over the ticks it was seen in.
class UngatedTracker {
 public:
  struct Entry {
    UngatedProcess process;  // as first seen
    Bytes peak = 0;          // the largest tree RSS seen
    double first_seen_s = 0, last_seen_s = 0;
  };

  void observe(const std::vector<UngatedProcess>& now, double t_s);
  const std::vector<Entry>& entries() const { return entries_; }
  std::size_t count() const { return entries_.size(); }
  // The largest sum of their tree RSS seen in one tick.
  Bytes peak_together() const { return peak_together_; }

  // Summary lines: a header, then the heaviest `max_lines` processes (the
  // rest as "... and N more"):
  //   "ungated: 2 compiler processes ran outside memgate's gate (peak 412 MiB together at most)"
  //   "  /usr/bin/x86_64-linux-gnu-g++-12 (g++ -c a.cpp -o a.o), started by /usr/bin/env: peak 120 MiB; <how>"
  std::vector<std::string> summary_lines(std::size_t max_lines = 6) const;

 private:
  std::vector<Entry> entries_;
  Bytes peak_together_ = 0;
  std::map<std::pair<pid_t, std::uint64_t>, std::size_t> index_;
};

// The runner's scan for compilers that escaped the gate, every 0.5 s:
// the build's processes outside every job's cgroup, less the wrappers
// still connected (their socket is close-on-exec: a wrapper that exec'd
// anything would have hung up) and their children (a granted job's
// program on its way into its cgroup), are read from /proc. So a scan
// reads the build tool's own processes, not every waiting wrapper nor
// every running job: its cost does not grow with the build.
class UngatedScan {
 public:
  explicit UngatedScan(std::string proc_root = "/proc") : proc_root_(std::move(proc_root)) {}
  // Whether a scan is due at `t`; if so, the next one is after kScan_s.
  bool due(double t);
  // How long a loop may wait at `t` before the next scan is due.
  int ms_until_due(double t) const { return static_cast<int>(std::max(0.0, next_scan_ - t) * 1000.0) + 1; }
  // memgate's parts could not be handed on: every compiler is ungated,
  // and each found says so.
  void gated_nothing() { gated_nothing_ = true; }
  // One scan at `t`: `build` the processes of the build outside the jobs'
  // cgroups, `known` those known to be gated (find_ungated's job_pids).
  void scan(std::vector<pid_t> build, const std::vector<pid_t>& known, double t);
  const UngatedTracker& found() const { return tracker_; }

  static constexpr double kScan_s = 0.5;
  // A wrapper read as waiting to connect is read again this many scans
  // later, not every scan: past the open-file limit thousands may wait,
  // and reading each every 0.5 s was most of a scan. Every new pid is read
  // at once, and a wrapper that gave up and ran its compiler (keeping its
  // pid) is seen within this many scans.
  static constexpr std::uint64_t kWrapperRecheck = 4;

 private:
  std::string proc_root_;
  UngatedTracker tracker_;
  bool gated_nothing_ = false;
  double next_scan_ = 0;
  // Wrappers waiting to connect, by pid: the scan they were last read in.
  std::unordered_map<pid_t, std::uint64_t> waiting_wrappers_;
  std::uint64_t scans_ = 0;
};

}  // namespace memgate
