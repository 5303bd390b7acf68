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

// Blocks the signals memgate handles through a signalfd and returns it.
int block_and_watch_signals();

// Exit status of a waited-for process as a shell reports it: the exit
// code, or 128 + the signal.
int shell_status(int wait_status);

}  // namespace memgate
