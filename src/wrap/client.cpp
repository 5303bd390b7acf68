#include "wrap/client.hpp"

#include <fcntl.h>
#include <linux/magic.h>
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/vfs.h>
#include <sys/un.h>
#include <poll.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/engine.hpp"
#include "platform/cgroup_files.hpp"
#include "platform/proc.hpp"
#include "predict/identity.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"
#include "util/text.hpp"
#include "wrap/find_program.hpp"
#include "wrap/protocol.hpp"
#include "wrap/request.hpp"

namespace memgate {
namespace {

// Signals a wrapper passes on to its program rather than dying of them:
// the build tool (or the user) meant them for the compiler.
constexpr int kForwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
constexpr int kNumForwarded = sizeof kForwarded / sizeof kForwarded[0];

volatile sig_atomic_t g_child = 0;
volatile sig_atomic_t g_forwarded = 0;  // a signal was passed on this attempt

void forward_signal(int sig) {
  pid_t child = g_child;
  if (child > 0) ::kill(child, sig);
  g_forwarded = 1;
}

int connect_to(const std::string& path) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof addr.sun_path) return -1;
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  // CLOEXEC: the program must not hold the governor's connection open.
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int r;
  do {
    r = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  } while (r != 0 && errno == EINTR);
  if (r != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

// Everything the child needs, prepared before it exists: it shares the
// wrapper's memory (CLONE_VM | CLONE_VFORK) and may only make system calls.
// Unlike fork, nothing of the wrapper is copied, which matters where
// page-table updates are expensive (VMs; see bench/overhead).
struct ChildPlan {
  const char* exe = nullptr;
  std::vector<char*> argv;
  std::vector<std::string> env_storage;
  std::vector<char*> envp;
  std::vector<int> cgroup_procs;          // DIR/cgroup.procs to join, opened by the parent
  sigset_t mask{};                        // the signal mask the program starts with
  int exec_errno = 0;                     // set by the child if execve failed
};

// The granted cgroups' cgroup.procs, opened here in the wrapper rather
// than by path in the child: O_NOFOLLOW, and the file must be on a cgroup
// filesystem (fstatfs), so neither a symlink nor a directory swapped after
// the grant was checked can turn the pid write into a write elsewhere.
// A dir that fails is left out (the runner then measures the job through
// /proc).
std::vector<int> open_cgroup_procs(const std::vector<std::string>& dirs) {
  std::vector<int> fds;
  for (const auto& dir : dirs) {
    int fd = ::open(join_path(dir, "cgroup.procs").c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
    struct statfs fs {};
    if (fd >= 0 && ::fstatfs(fd, &fs) == 0 &&
        (fs.f_type == CGROUP_SUPER_MAGIC || fs.f_type == CGROUP2_SUPER_MAGIC)) {
      fds.push_back(fd);
      continue;
    }
    if (fd >= 0) ::close(fd);
    log::warn("not joining {}: its cgroup.procs is not a cgroup file", dir);
  }
  return fds;
}

// `extra_env` ("NAME=value") replaces what the environment has of NAME.
ChildPlan plan_child(const Launch& launch, const GrantMsg& grant, const sigset_t& mask,
                     const std::vector<std::string>& extra_env) {
  ChildPlan c;
  c.exe = launch.exe.c_str();
  for (const auto& a : launch.argv) c.argv.push_back(const_cast<char*>(a.c_str()));
  c.argv.push_back(nullptr);
  auto replaced = [&](std::string_view kv) {
    if (kv.rfind("PATH=", 0) == 0 || kv.rfind("MEMGATE_JOB=", 0) == 0) return true;
    for (const auto& x : extra_env)
      if (auto eq = x.find('='); eq != std::string::npos && kv.substr(0, eq + 1) == std::string_view(x).substr(0, eq + 1))
        return true;
    return false;
  };
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    if (!replaced(kv)) c.env_storage.emplace_back(kv);
  }
  c.env_storage.push_back("PATH=" + launch.path_env);
  c.env_storage.push_back("MEMGATE_JOB=" + std::to_string(grant.job));
  for (const auto& x : extra_env) c.env_storage.push_back(x);
  for (auto& kv : c.env_storage) c.envp.push_back(kv.data());
  c.envp.push_back(nullptr);
  c.cgroup_procs = open_cgroup_procs(grant.cgroups);
  c.mask = mask;
  return c;
}

// The child: join the job's cgroups (one that cannot be joined is not
// fatal: the governor then measures the job through /proc), restore the
// signal mask, exec. The pid is formatted by hand: no allocation here.
int child_main(void* arg) {
  auto* c = static_cast<ChildPlan*>(arg);
  char digits[16];
  char* p = digits + sizeof digits;
  for (unsigned long v = static_cast<unsigned long>(::getpid()); p == digits + sizeof digits || v; v /= 10)
    *--p = static_cast<char>('0' + v % 10);
  for (int fd : c->cgroup_procs) {
    ssize_t n = ::write(fd, p, static_cast<std::size_t>(digits + sizeof digits - p));
    (void)n;
  }
  ::sigprocmask(SIG_SETMASK, &c->mask, nullptr);
  ::execve(c->exe, c->argv.data(), c->envp.data());
  c->exec_errno = errno;
  ::_exit(exec_failure_status(errno));
}

pid_t spawn_child(ChildPlan& plan) {
  constexpr std::size_t kStack = 64 * 1024;
  alignas(16) static char stack[kStack];  // the wrapper is single-threaded and runs one child at a time
  return ::clone(child_main, stack + kStack, CLONE_VM | CLONE_VFORK | SIGCHLD, &plan);
}

struct AttemptResult {
  int status = 0;  // raw wait status
  bool rerun = false;
};

// Forwarding handlers for the signals the wrapper was not told to ignore;
// the originals come back once the child is reaped, so a signal while
// waiting for the next grant ends the wrapper as usual.
class Forwarding {
 public:
  explicit Forwarding(pid_t child) {
    g_child = child;
    g_forwarded = 0;
    for (int i = 0; i < kNumForwarded; ++i) {
      ::sigaction(kForwarded[i], nullptr, &old_[i]);
      if (old_[i].sa_handler == SIG_IGN) continue;
      struct sigaction sa {};
      sa.sa_handler = forward_signal;
      sa.sa_flags = SA_RESTART;
      sigemptyset(&sa.sa_mask);
      ::sigaction(kForwarded[i], &sa, nullptr);
    }
  }
  ~Forwarding() {
    g_child = 0;
    for (int i = 0; i < kNumForwarded; ++i) ::sigaction(kForwarded[i], &old_[i], nullptr);
  }
  Forwarding(const Forwarding&) = delete;
  Forwarding& operator=(const Forwarding&) = delete;

 private:
  struct sigaction old_[kNumForwarded] {};
};

// The governor may still want a rerun after a failed spawn (it was likely
// short of memory or pids, like a kill it ordered itself).
AttemptResult report_spawn_failure(const Launch& launch, int fd, int error) {
  log::error("cannot start '{}': {}", launch.argv[0], std::strerror(error));
  AttemptResult r{126 << 8, false};
  if (fd >= 0 && write_message(fd, ExitMsg{r.status, 0, 0, false})) {
    auto v = read_message(fd);
    if (v && std::holds_alternative<VerdictMsg>(*v)) r.rerun = std::get<VerdictMsg>(*v).rerun;
  }
  return r;
}

ExitMsg exit_report(int status, const rusage& ru) {
  ExitMsg exit;
  exit.status = status;
  exit.cpu_s = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
               static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  exit.maxrss_bytes = static_cast<Bytes>(ru.ru_maxrss) * KiB;
  return exit;
}

// The runner died while this job ran (it never speaks during a run, so
// anything readable now is its hang-up). Whatever it froze or stopped
// would stay so for ever: thaw the job's cgroups and continue its tree,
// then let it finish ungated. Best effort; the grant's paths were checked
// when it came (accept_grant).
void thaw_orphaned_job(const Launch& launch, const GrantMsg& grant, pid_t child) {
  for (const auto& dir : grant.cgroups) {
    for (auto [file, value] : {std::pair{"/freezer.state", "THAWED"}, std::pair{"/cgroup.freeze", "0"}}) {
      int fd = ::open((dir + file).c_str(), O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) continue;
      ssize_t n = ::write(fd, value, std::strlen(value));
      (void)n;
      ::close(fd);
    }
  }
  for (pid_t p : platform::process_tree(child)) ::kill(p, SIGCONT);
  log::warn("memgate run went away while '{}' ran; letting it finish ungated",
            launch.argv.empty() ? launch.exe : launch.argv[0]);
}

// Waits until the child exits (leaving it a zombie, so its pid stays its
// own). Watches the runner's socket meanwhile: a hang-up there means the
// runner died, and the job must not stay frozen. Returns whether the
// runner is still there.
bool wait_for_child(pid_t pid, int fd, const Launch& launch, const GrantMsg& grant) {
  int pidfd = fd >= 0 ? static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)) : -1;
  bool connected = fd >= 0;
  if (pidfd >= 0) {
    for (;;) {
      pollfd fds[2] = {{pidfd, POLLIN, 0}, {fd, POLLIN, 0}};
      int n = ::poll(fds, connected ? 2 : 1, -1);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 || (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) break;
      if (connected && fds[1].revents) {
        connected = false;
        thaw_orphaned_job(launch, grant, pid);
      }
    }
    ::close(pidfd);
  }
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR) {
  }
  return connected;
}

// One attempt: spawn, wait, report. `fd` < 0 once the governor is
// lost; the attempt still runs to the end and is never rerun.
// `engine`: the distributed engine the launch goes through, if any.
AttemptResult run_attempt(const Launch& launch, const GrantMsg& grant, int fd, const Engine* engine) {
  std::unique_ptr<EngineAttempt> watch = engine ? engine->watch() : nullptr;
  std::vector<std::string> extra_env = watch ? watch->environment() : std::vector<std::string>{};
  sigset_t block, old;
  sigemptyset(&block);
  for (int s : kForwarded) sigaddset(&block, s);
  ::sigprocmask(SIG_BLOCK, &block, &old);  // nothing slips past before forwarding is set up
  ChildPlan plan = plan_child(launch, grant, old, extra_env);
  pid_t pid = spawn_child(plan);
  for (int cg : plan.cgroup_procs) ::close(cg);
  if (pid > 0 && plan.exec_errno != 0)
    log::error("cannot run '{}': {}", launch.argv.empty() ? launch.exe : launch.argv[0], std::strerror(plan.exec_errno));
  if (pid < 0) {
    int e = errno;
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    return report_spawn_failure(launch, fd, e);
  }

  bool connected = fd >= 0;
  {
    Forwarding forwarding(pid);
    ::sigprocmask(SIG_SETMASK, &old, nullptr);
    if (connected && !write_message(fd, StartedMsg{static_cast<int>(pid)})) connected = false;
    // Wait without reaping first: while forwarding is on, the pid must stay
    // the child's (a zombie), never a recycled one that a signal could hit.
    connected = wait_for_child(pid, connected ? fd : -1, launch, grant);
  }
  int status = 0;
  rusage ru{};
  while (::wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
  }
  AttemptResult r{status, false};
  ExitMsg report = exit_report(status, ru);
  report.ran_here = watch && watch->ran_here(pid);
  if (!connected || !write_message(fd, report)) return r;
  // Told to stop (Ctrl-C, the build tool's SIGTERM): the build is ending,
  // so no verdict is awaited from a governor that may be shutting down.
  if (g_forwarded) return r;
  auto verdict = read_message(fd);
  if (verdict && std::holds_alternative<VerdictMsg>(*verdict)) r.rerun = std::get<VerdictMsg>(*verdict).rerun;
  return r;
}

// Exits the way the program did, so the build tool sees the same thing it
// would have seen without memgate.
[[noreturn]] void exit_like(int status) {
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    rlimit no_core{0, 0};  // the program's crash, not ours: no core of the wrapper
    ::setrlimit(RLIMIT_CORE, &no_core);
    ::signal(sig, SIG_DFL);
    sigset_t s;
    sigemptyset(&s);
    sigaddset(&s, sig);
    ::sigprocmask(SIG_UNBLOCK, &s, nullptr);
    ::raise(sig);
    ::_exit(128 + sig);
  }
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : 1);
}

// The status of a job a build server declined: what a failed compile
// exits with, so the distcc client compiles the file itself.
constexpr int kDeclinedStatus = 1;

// The launch through a distributed engine (`distcc PROGRAM ARGS`), when
// the runner offloads the job; the launch itself when the engine is not
// in PATH (it then runs here, and pressure control has the last word).
Launch through_engine(const Launch& launch, const Engine& engine) {
  auto found = find_program(std::string(engine.name()), launch.path_env, self_exe_id());
  if (!found) {
    log::warn("'{}' is not in PATH; running '{}' here instead of offloading it", engine.name(),
              launch.argv.empty() ? launch.exe : launch.argv[0]);
    return launch;
  }
  Launch out = launch;
  out.exe = *found;
  out.argv = engine.command(*found, launch.argv);
  return out;
}

int fail_open(const Launch& launch, const std::string& socket_path, int fd) {
  if (fd >= 0) ::close(fd);
  warn_ungated_once(socket_path);
  return exec_program(launch);
}

}  // namespace

int exec_program(const Launch& launch) {
  std::vector<char*> argv;
  argv.reserve(launch.argv.size() + 1);
  for (const auto& a : launch.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  ::setenv("PATH", launch.path_env.c_str(), 1);
  ::execv(launch.exe.c_str(), argv.data());
  int e = errno;
  log::error("cannot run '{}': {}", launch.argv.empty() ? launch.exe : launch.argv[0], std::strerror(e));
  return exec_failure_status(e);
}

int run_gated(const Launch& launch, const std::string& socket_path) {
  // Made before connecting: measuring a compile's size may take a second,
  // and a connection that says nothing for long is dropped.
  RequestMsg request = make_request(launch);
  int fd = connect_to(socket_path);
  if (fd < 0) return fail_open(launch, socket_path, -1);
  if (std::string why = untrusted_governor(fd); !why.empty()) {
    // Not memgate run of this user (or root): a stale MEMGATE_SOCKET that
    // someone else now serves. Never talk to it; the job runs ungated.
    ::close(fd);
    log::warn("not using the governor at {}: {}; running '{}' ungated", socket_path, why,
              launch.argv.empty() ? launch.exe : launch.argv[0]);
    return exec_program(launch);
  }
  if (!write_message(fd, request)) return fail_open(launch, socket_path, fd);
  std::optional<std::vector<platform::CgroupMount>> mounts;  // read at the first grant with cgroups
  for (;;) {
    // The wrapper spends most of its life here, blocked in read(), until
    // the governor admits the job.
    auto msg = read_message(fd);
    if (!msg || !std::holds_alternative<GrantMsg>(*msg)) {
      if (!msg && !is_closed_error(msg.error())) log::debug("wrapper: {}", msg.error());
      return fail_open(launch, socket_path, fd);
    }
    GrantMsg grant = std::get<GrantMsg>(*msg);
    if (grant.decline) {
      log::error("'{}' declined: this build server has no memory for it now; compile it elsewhere",
                 printable(launch.argv.empty() ? launch.exe : launch.argv[0]));
      ::close(fd);
      return kDeclinedStatus;
    }
    if (!grant.cgroups.empty() && !mounts)
      mounts = platform::parse_cgroup_mounts(read_file("/proc/self/mountinfo").value_or("")).value_or(
          std::vector<platform::CgroupMount>{});
    accept_grant(grant, mounts ? *mounts : std::vector<platform::CgroupMount>{});
    // An offload to an engine this wrapper does not know runs here.
    const Engine* offload = grant.offload.empty() ? nullptr : find_engine(grant.offload);
    AttemptResult r = offload ? run_attempt(through_engine(launch, *offload), grant, fd, offload)
                              : run_attempt(launch, grant, fd, find_engine(request.engine));
    if (!r.rerun) {
      ::close(fd);
      exit_like(r.status);
    }
    log::debug("wrapper: rerunning '{}' as the governor asked", launch.argv[0]);
  }
}

std::string untrusted_governor(int fd) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || len != sizeof cred)
    return fmt::format("cannot tell who serves it ({})", std::strerror(errno));
  if (cred.uid != ::geteuid() && cred.uid != 0)
    return fmt::format("it runs as uid {}, not as uid {} or root", cred.uid, ::geteuid());
  return "";
}

std::string grant_path_problem(const std::string& dir, const std::vector<platform::CgroupMount>& mounts) {
  if (dir.empty() || dir[0] != '/') return "not an absolute path";
  for (std::string_view part : split(std::string_view(dir).substr(1), '/'))
    if (part == "." || part == "..") return "has a '.' or '..' component";
  for (const auto& m : mounts) {
    bool usable = m.version == platform::CgroupVersion::v2;
    for (const auto& c : m.controllers) usable = usable || c == "memory" || c == "freezer";
    if (!usable || m.mount_point.empty()) continue;
    std::string_view mp = m.mount_point;
    while (mp.size() > 1 && mp.back() == '/') mp.remove_suffix(1);
    if (dir.size() > mp.size() + 1 && dir.compare(0, mp.size(), mp) == 0 && (mp == "/" || dir[mp.size()] == '/'))
      return "";
  }
  return "not below a memory, freezer or cgroup2 mount";
}

void accept_grant(GrantMsg& grant, const std::vector<platform::CgroupMount>& mounts) {
  std::erase_if(grant.cgroups, [&](const std::string& dir) {
    std::string why = grant_path_problem(dir, mounts);
    if (!why.empty()) log::warn("ignoring the granted cgroup {}: {}", printable(dir), why);
    return !why.empty();
  });
}

void warn_ungated_once(const std::string& socket_path) {
  constexpr int kFlags = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC;
  int fd = ::open((socket_path + ".warned").c_str(), kFlags, 0600);
  if (fd < 0 && errno != EEXIST) {
    // The private directory is gone (or unwritable): one marker per build
    // under /tmp, named after the socket path that build used.
    std::string marker = fmt::format("/tmp/memgate-warned-{}-{:016x}", ::geteuid(), fnv1a64(socket_path));
    fd = ::open(marker.c_str(), kFlags, 0600);
  }
  if (fd < 0 && errno == EEXIST) return;  // someone else warned already
  if (fd >= 0) ::close(fd);
  log::warn("governor at {} is not answering; running jobs ungated", socket_path);
}

}  // namespace memgate
