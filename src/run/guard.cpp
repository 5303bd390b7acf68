#include "run/guard.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "platform/cgroup_stale.hpp"
#include "util/log.hpp"

namespace memgate {
namespace {

constexpr char kDone = 'D';

// In the guard: everything but the pipe and stderr closed, so it keeps no
// terminal, socket or database of memgate's alive.
void keep_only(int pipe_fd) {
  if (::dup2(pipe_fd, 3) < 0) _exit(1);
  int null_fd = ::open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd >= 0) {
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(null_fd, STDOUT_FILENO);
  }
  ::close_range(4, ~0U, 0);
  signal(SIGPIPE, SIG_IGN);
  if (::chdir("/") != 0) {
    // Nothing depends on it: it only keeps a directory from being unmounted.
  }
}

[[noreturn]] void guard_main(pid_t memgate) {
  char c = 0;
  ssize_t n;
  do {
    n = ::read(3, &c, 1);
  } while (n < 0 && errno == EINTR);
  if (n == 1 && c == kDone) _exit(0);
  // Said whenever something was left, even with no process in it (the
  // kill may have reached every job first): a frozen cgroup with its limit
  // is what a user would otherwise find later.
  const CleanedUp done = clean_up_after(memgate);
  if (done.cgroups > 0)
    log::warn("memgate run (pid {}) was killed; its guard thawed and ended the {} process(es) left of its build "
              "and removed its cgroups",
              memgate, done.processes);
  _exit(0);
}

}  // namespace

CleanedUp clean_up_after(pid_t pid) {
  CleanedUp done;
  // `pid` is dead though it may not be reaped yet: only its own cgroups.
  auto dead = [pid](pid_t p) { return p != pid; };
  for (const auto& stale : platform::find_stale_cgroups(platform::detect_cgroups(), dead)) {
    if (stale.pid != pid) continue;
    ++done.cgroups;
    done.processes += stale.processes.size();
    if (auto st = platform::clean_stale_cgroup(stale); !st)
      log::warn("cannot remove the cgroups of memgate {}: {}", pid, st.error());
  }
  return done;
}

DeathGuard DeathGuard::start() {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) {
    log::warn("cannot start memgate's guard: {}", std::strerror(errno));
    return DeathGuard();
  }
  const pid_t memgate = ::getpid();
  pid_t mid = ::fork();
  if (mid == 0) {
    ::close(p[1]);
    ::setsid();
    if (::fork() != 0) _exit(0);  // the guard is reparented, no longer our descendant
    keep_only(p[0]);
    guard_main(memgate);
  }
  ::close(p[0]);
  if (mid < 0) {
    log::warn("cannot start memgate's guard: {}", std::strerror(errno));
    ::close(p[1]);
    return DeathGuard();
  }
  int status = 0;
  while (::waitpid(mid, &status, 0) < 0 && errno == EINTR) {
  }
  return DeathGuard(p[1]);
}

DeathGuard::DeathGuard(DeathGuard&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}

DeathGuard& DeathGuard::operator=(DeathGuard&& o) noexcept {
  if (this != &o) {
    disarm();
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

DeathGuard::~DeathGuard() { disarm(); }

void DeathGuard::disarm() {
  if (fd_ < 0) return;
  ssize_t n;
  do {
    n = ::write(fd_, &kDone, 1);
  } while (n < 0 && errno == EINTR);
  ::close(fd_);
  fd_ = -1;
}

}  // namespace memgate
