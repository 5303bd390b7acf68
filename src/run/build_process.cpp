#include "run/build_process.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fmt/core.h>

namespace memgate {

namespace {

const int kWatched[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD};
// SIGHUP ignored by nohup stays ignored, for memgate and for the build.
bool g_hup_ignored = false;

// In the child between fork and exec: async-signal-safe calls only where
// it matters (we are single-threaded, so setenv is fine here).
[[noreturn]] void exec_child(const SpawnSpec& spec, pid_t parent, int err_fd) {
  // If memgate dies (SIGKILL, a crash), the build is told as if by Ctrl-C's
  // cousin, SIGTERM: it stops starting jobs, and its wrappers, which lose
  // their socket at the same moment, thaw and finish what they run
  // (wrap/client.cpp). Nothing is left frozen or waiting for memgate.
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != parent) _exit(125);  // memgate died before prctl took effect
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  for (int sig : kWatched) signal(sig, SIG_DFL);
  if (g_hup_ignored) signal(SIGHUP, SIG_IGN);
  signal(SIGPIPE, SIG_DFL);
  for (const auto& dir : spec.cgroup_dirs) {
    std::string path = dir + "/cgroup.procs";
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd >= 0) {
      std::string pid = std::to_string(getpid());
      ssize_t n = ::write(fd, pid.data(), pid.size());
      (void)n;
      ::close(fd);
    }
  }
  for (int fd : spec.inherit_fds) ::fcntl(fd, F_SETFD, 0);
  for (const auto& [k, v] : spec.env_changes) {
    if (v.empty()) unsetenv(k.c_str());
    else setenv(k.c_str(), v.c_str(), 1);
  }
  std::vector<char*> argv;
  for (const auto& a : spec.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  int e = errno;
  ssize_t n = ::write(err_fd, &e, sizeof e);
  (void)n;
  _exit(127);
}

}  // namespace

pid_t spawn_build(const SpawnSpec& spec, SpawnFailure* failure) {
  if (spec.argv.empty()) {
    *failure = {125, "no command given"};
    return -1;
  }
  int pipefd[2];
  if (pipe2(pipefd, O_CLOEXEC) != 0) {
    *failure = {125, fmt::format("cannot create a pipe: {}", std::strerror(errno))};
    return -1;
  }
  pid_t parent = ::getpid();
  pid_t pid = fork();
  if (pid < 0) {
    *failure = {125, fmt::format("cannot fork: {}", std::strerror(errno))};
    ::close(pipefd[0]);
    ::close(pipefd[1]);
    return -1;
  }
  if (pid == 0) {
    ::close(pipefd[0]);
    exec_child(spec, parent, pipefd[1]);
  }
  ::close(pipefd[1]);
  int child_errno = 0;
  ssize_t n;
  do {
    n = ::read(pipefd[0], &child_errno, sizeof child_errno);
  } while (n < 0 && errno == EINTR);
  ::close(pipefd[0]);
  if (n == static_cast<ssize_t>(sizeof child_errno)) {
    int status;
    waitpid(pid, &status, 0);
    bool missing = child_errno == ENOENT || child_errno == ENOTDIR;
    failure->exit_code = missing ? 127 : (child_errno == EACCES || child_errno == ENOEXEC) ? 126 : 125;
    failure->message = missing ? fmt::format("command not found: {}", spec.argv[0])
                               : fmt::format("cannot run {}: {}", spec.argv[0], std::strerror(child_errno));
    return -1;
  }
  return pid;
}

int raise_own_priority() {
  errno = 0;
  const int now = ::getpriority(PRIO_PROCESS, 0);
  if (errno != 0 || now <= kOwnNice) return now;
  if (::setpriority(PRIO_PROCESS, 0, kOwnNice) != 0) return now;
  return kOwnNice;
}

int block_and_watch_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : kWatched) sigaddset(&set, sig);
  // A shell starts background jobs with SIGINT and SIGQUIT ignored; an
  // ignored signal is discarded even while blocked, so memgate could never
  // be interrupted. It handles them itself through the signalfd.
  struct sigaction old {};
  sigaction(SIGHUP, nullptr, &old);
  g_hup_ignored = old.sa_handler == SIG_IGN;
  for (int sig : kWatched)
    if (!(sig == SIGHUP && g_hup_ignored)) signal(sig, SIG_DFL);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  signal(SIGPIPE, SIG_IGN);
  return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

int shell_status(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return 128 + WTERMSIG(wait_status);
  return 125;
}

}  // namespace memgate
