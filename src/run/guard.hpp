// What ends the build when memgate is killed together with everything it
// started, as CI runners cancel a job (`timeout -s KILL 13 memgate run`,
// `kill -9 -- -PGID`). Nothing of memgate's is left to thaw then: a
// wrapper that would thaw its job when the socket hangs up (wrap/client)
// died in the same instant, and a job frozen at that moment stays frozen,
// its compiler in D state holding its memory (on cgroup v1 a frozen task
// cannot even die), until some later memgate run cleans up.
//
// So `memgate run` starts a guard first: a small process of its own
// session (double fork, setsid), so no process group kill, terminal
// signal or hang-up aimed at the build reaches it, and not memgate's
// descendant, so memgate's own kill-everything never hits it. It holds only
// the read end of a pipe whose write end only memgate has (close-on-exec:
// no build process inherits it), and stderr. It waits for that pipe to
// close:
// - memgate says it is done first (disarm, on every way out of `run`):
//   the guard exits and does nothing;
// - the pipe closes without that: memgate is dead. The guard thaws its
//   memgate-<pid> cgroups, ends every process in them (the build and its
//   jobs: nobody is left to wait for them) and removes them, then exits.
// It does the same as the next run's stale clean-up (platform/cgroup_stale),
// at once instead of some day.
#pragma once

#include <sys/types.h>

#include <cstddef>

namespace memgate {

class DeathGuard {
 public:
  DeathGuard() = default;
  // Starts the guard of this process. Without one (fork failed) it only
  // warns: the next run's clean-up remains.
  static DeathGuard start();
  DeathGuard(DeathGuard&& o) noexcept;
  DeathGuard& operator=(DeathGuard&& o) noexcept;
  DeathGuard(const DeathGuard&) = delete;
  DeathGuard& operator=(const DeathGuard&) = delete;
  ~DeathGuard();  // disarm()

  // memgate is ending by itself (its cgroups are its own to remove): the
  // guard goes without doing anything.
  void disarm();

 private:
  explicit DeathGuard(int fd) : fd_(fd) {}
  int fd_ = -1;  // the pipe's write end
};

// What the guard does once memgate `pid` is dead: thaws, ends and removes
// that pid's memgate-<pid> cgroups beside this process's own.
struct CleanedUp {
  std::size_t cgroups = 0;    // memgate-<pid> trees found
  std::size_t processes = 0;  // processes still inside them, ended
};
CleanedUp clean_up_after(pid_t pid);

}  // namespace memgate
