#include "run/build_process.hpp"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include <fmt/core.h>

#include "platform/cgroup.hpp"
#include "platform/cpu.hpp"
#include "platform/proc.hpp"
#include "run/confinement.hpp"

namespace memgate {

namespace {

const int kWatched[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD};
// After Ctrl-C or SIGTERM the build gets this long to stop by itself
// before everything left is killed.
constexpr double kAbortGrace_s = 2.0;
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

BuildProcess::~BuildProcess() {
  if (sigfd_ >= 0) ::close(sigfd_);
}

void BuildProcess::watch_signals() { sigfd_ = block_and_watch_signals(); }

std::vector<int> BuildProcess::read_signals() {
  std::vector<int> out;
  signalfd_siginfo si;
  while (::read(sigfd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
    int sig = static_cast<int>(si.ssi_signo);
    if (sig == SIGCHLD) reap();
    else out.push_back(sig);
  }
  return out;
}

bool BuildProcess::start(const SpawnSpec& spec, SpawnFailure* failure) {
  machine_busy_at_start_ = platform::read_machine_busy_s();
  own_cpu_at_start_ = platform::self_and_children_cpu_s();
  pid_ = spawn_build(spec, failure);
  if (pid_ < 0) start_failure_ = failure->exit_code;
  return pid_ >= 0;
}

void BuildProcess::reap() {
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    if (pid == pid_) {
      done_ = true;
      wait_status_ = status;
    }
  }
}

bool BuildProcess::begin_abort(int sig, double now) {
  if (abort_signal_) return false;
  abort_signal_ = sig;
  abort_deadline_ = now + kAbortGrace_s;
  return true;
}

void BuildProcess::forward(int sig, const Confinement& cgroups) const {
  std::vector<pid_t> pids = cgroups.processes();
  for (pid_t p : platform::process_tree(::getpid())) pids.push_back(p);
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  for (pid_t p : pids)
    if (p != ::getpid()) ::kill(p, sig);
}

void BuildProcess::kill_everything(const Confinement& cgroups) {
  killed_all_ = true;
  for (int round = 0; round < 3; ++round) {
    cgroups.kill_all();
    std::vector<pid_t> pids = platform::process_tree(::getpid());
    bool any = false;
    for (pid_t p : pids) {
      if (p == ::getpid()) continue;
      ::kill(p, SIGKILL);
      ::kill(p, SIGCONT);
      any = true;
    }
    if (!any) break;
  }
}

int BuildProcess::exit_status() const {
  if (!started()) return start_failure_;
  return abort_signal_ ? 128 + abort_signal_ : shell_status(wait_status_);
}

// A build given more CPU weight than its neighbours (bench/plan-accuracy
// does) leaves them only what it does not use: not contention.
std::optional<std::int64_t> BuildProcess::other_cpu_ms() const {
  auto busy = platform::read_machine_busy_s();
  if (!busy || !machine_busy_at_start_ || platform::cgroup_cpu_weight_raised(platform::detect_cgroups()))
    return std::nullopt;
  double own = platform::self_and_children_cpu_s() - own_cpu_at_start_;
  double others = std::max(0.0, *busy - *machine_busy_at_start_ - own);
  return std::llround(others * 1000);
}

}  // namespace memgate
