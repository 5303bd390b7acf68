// Starting the build command and ending it: fork/exec without a shell,
// with memgate's environment changes, inside the build's cgroup, with the
// signal state a fresh process expects.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "util/result.hpp"

namespace memgate {

struct SpawnFailure {
  int exit_code = 125;  // 127 not found, 126 not executable, 125 anything else
  std::string message;
};

struct SpawnSpec {
  std::vector<std::string> argv;
  std::map<std::string, std::string> env_changes;  // applied in the child; "" unsets
  std::vector<std::string> cgroup_dirs;            // the child joins these before exec
  std::vector<int> inherit_fds;                    // close-on-exec here, inherited by the build (the jobserver's)
};

// Starts the build. On failure (including exec failure, reported back
// through a close-on-exec pipe) returns the exit status `run` should use.
// The child gets default signal dispositions and an empty signal mask.
pid_t spawn_build(const SpawnSpec& spec, SpawnFailure* failure);

// memgate's loop governs the build: a tick that waits behind the build's
// processes for a core sees memory run short late. At a wave of 500 jobs
// ending and 500 starting on 2 cores, ticks took 20 to 50 times their CPU
// time on the clock, waiting for a turn among the wrappers. So once the
// build has started (it keeps memgate's niceness: nice is inherited at
// fork, and the wrappers descend from the build), memgate raises its own
// priority to kOwnNice, as earlyoom does (-p). It costs the build little:
// memgate's own work is bounded, a few ms of CPU per job. -10 was not
// enough against 500 runnable wrappers (tick p99 60 ms, nearly all of it
// waiting on the run queue; -20: 18 ms). Only where allowed (root, or
// RLIMIT_NICE); elsewhere memgate stays as it was.
// Returns the niceness memgate now has.
inline constexpr int kOwnNice = -20;
int raise_own_priority();

// Blocks the signals memgate handles through a signalfd and returns it.
int block_and_watch_signals();

// Exit status of a waited-for process as a shell reports it: the exit
// code, or 128 + the signal.
int shell_status(int wait_status);

}  // namespace memgate
