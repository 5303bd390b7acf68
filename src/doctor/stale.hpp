// Stale compiler processes: what is left of an aborted build (make or
// ninja SIGKILLed, pip killed, a CI step timed out) and still holds memory.
// These are the leftovers users end with `pkill -9 cicc`; memgate finds them
// precisely and ends exactly them.
//
// The rule (pure, see find_stale), for a process P:
//  1. P's comm is a compiler name (is_compiler_name) and P is not a zombie;
//  2. P's real uid is the caller's;
//  3. no ancestor of P is a live `memgate run` (its builds are managed);
//  4. P is orphaned: climb from P through ancestors that are themselves
//     part of a compile (compiler names, compiler drivers such as gcc or
//     nvcc, memgate wrappers). The first ancestor outside that chain must be
//     init-like: pid 1, or a process named systemd, init, tini, dumb-init,
//     docker-init, catatonit or s6-svscan (the usual subreapers that adopt
//     orphans). No member of the chain may itself be pid 1 (a container
//     whose entry point is the compiler).
// A compile the user started from a shell, make, ninja or pip stops at that
// live parent and is never stale, however long it runs. A compiler whose
// parent is outside our pid namespace (ppid 0, e.g. `docker exec nvcc`)
// is not stale either: we cannot tell, so we leave it alone.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "platform/proc.hpp"
#include "util/size.hpp"

namespace memgate::doctor {

// nvcc, cicc, ptxas, cudafe++, fatbinary, nvlink, cc1, cc1plus, cc1obj,
// lto1, lto-wrapper, collect2, as, ld, ld.bfd, ld.gold, ld.lld, lld, mold,
// hipcc, clang, clang++, clang-<N>, clang++-<N>, rustc, gcc, g++, cc, c++,
// gcc-<N>, g++-<N>, and cross tools named <triplet>-<tool> (comm keeps
// only 15 bytes, so "x86_64-linux-gnu-g++" shows as "x86_64-linux-gn").
bool is_compiler_name(std::string_view comm);
bool is_init_like(std::string_view comm);

struct StaleProcess {
  pid_t pid = 0;
  pid_t ppid = 0;
  std::string comm;
  Bytes rss = 0;
  std::uint64_t starttime = 0;  // identifies this process; checked again before any signal
};

// Pure. `memgate_runs` are the pids of live `memgate run` processes.
std::vector<StaleProcess> find_stale(const std::vector<platform::ProcInfo>& all, uid_t uid,
                                     const std::set<pid_t>& memgate_runs);

// Pids of processes named "memgate" whose command is `memgate run ...`.
std::set<pid_t> find_memgate_runs(const std::vector<platform::ProcInfo>& all, const std::string& proc_root);

// Scans proc_root for the caller's (getuid()) stale compiler processes.
std::vector<StaleProcess> detect_stale(const std::string& proc_root = "/proc");

Bytes total_rss(const std::vector<StaleProcess>& stale);

struct KillOutcome {
  pid_t pid = 0;
  std::string comm;
  std::string result;  // "terminated", "killed", "already gone", "pid reused: left alone", or an error
  bool ended = false;  // the process we listed no longer runs
};

// SIGTERM each, wait up to `grace`, SIGKILL those still there. Each process
// is pinned with a pidfd whose start time is checked against the listed one
// before the first signal, so a recycled pid is never signalled (without
// pidfds, the start time is re-read right before each signal instead).
std::vector<KillOutcome> kill_stale(const std::vector<StaleProcess>& stale,
                                    std::chrono::milliseconds grace = std::chrono::milliseconds(2000),
                                    const std::string& proc_root = "/proc");

}  // namespace memgate::doctor
