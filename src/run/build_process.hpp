// Starting the build command and ending it: fork/exec without a shell,
// with memgate's environment changes, inside the build's cgroup, with the
// signal state a fresh process expects; and BuildProcess, the build's
// life as the runner follows it: the guard that ends it if memgate is
// killed (run/guard.hpp), the signals memgate handles, reaping (memgate
// is a subreaper, so orphans of the build are its own too), the abort on
// Ctrl-C or SIGTERM with its grace, and the exit status `run` gives back.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "run/guard.hpp"
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

class Confinement;

class BuildProcess {
 public:
  BuildProcess() = default;
  BuildProcess(const BuildProcess&) = delete;
  BuildProcess& operator=(const BuildProcess&) = delete;
  ~BuildProcess();

  // Starts the guard, first of all: from then on, memgate killed with the
  // build means the build ends too. disarm_guard() once memgate's cgroups
  // are gone, with nothing left for it to do.
  void guard() { guard_ = DeathGuard::start(); }
  void disarm_guard() { guard_.disarm(); }

  // Blocks the signals memgate handles; they arrive on signal_fd().
  void watch_signals();
  int signal_fd() const { return sigfd_; }
  // The signals that arrived since the last call, each but SIGCHLD (which
  // reaps) returned in order: what to abort on.
  std::vector<int> read_signals();

  // Starts the build (spawn_build), after reading the machine's busy CPU
  // and memgate's own (other_cpu_ms). False if it could not start:
  // `failure` says why, and exit_status() is its code.
  bool start(const SpawnSpec& spec, SpawnFailure* failure);
  bool started() const { return pid_ >= 0; }
  // Every exited child is reaped; only the build's own status is kept.
  void reap();
  bool done() const { return done_; }
  // The build tool while it runs, to watch (0 once it has exited).
  pid_t running_pid() const { return done_ ? 0 : pid_; }

  // Ctrl-C or SIGTERM: the build gets a grace period to stop by itself.
  // False if an abort is under way already (a second Ctrl-C: no more
  // grace, the caller kills everything).
  bool begin_abort(int sig, double now);
  bool aborting() const { return abort_signal_ != 0; }
  // The grace is over and everything has not been killed yet.
  bool grace_over(double now) const { return aborting() && !killed_all_ && now >= abort_deadline_; }
  // Sends `sig` to every process of the build, by cgroup and by tree.
  void forward(int sig, const Confinement& cgroups) const;
  // Kills everything memgate started, by cgroup and by process tree: after
  // an abort no build process is left running.
  void kill_everything(const Confinement& cgroups);

  // What `run` exits with: the build's status as a shell gives it, 128 +
  // the signal that aborted it, or why it could not start.
  int exit_status() const;
  // CPU time others took on the machine beside the build since it started
  // (Counter::other_cpu_ms, for plan); none where it cannot be told.
  std::optional<std::int64_t> other_cpu_ms() const;

 private:
  DeathGuard guard_;
  int sigfd_ = -1;
  pid_t pid_ = -1;
  bool done_ = false;
  int wait_status_ = 0;
  int start_failure_ = 0;  // spawn_build's exit code when it could not start
  int abort_signal_ = 0;
  double abort_deadline_ = 0;
  bool killed_all_ = false;
  // The machine's busy CPU and our tree's CPU when the build started.
  std::optional<double> machine_busy_at_start_;
  double own_cpu_at_start_ = 0;
};

}  // namespace memgate
