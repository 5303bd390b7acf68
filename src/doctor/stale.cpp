#include "doctor/stale.hpp"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>
#include <unordered_map>

#include "platform/proc.hpp"

namespace memgate::doctor {

namespace {

bool digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// "clang-17", "gcc-12": a name followed by a version number.
bool versioned(std::string_view comm, std::string_view base) {
  return comm.size() > base.size() + 1 && comm.substr(0, base.size()) == base && comm[base.size()] == '-' &&
         digits(comm.substr(base.size() + 1));
}

// Compiler drivers: part of a compile's process chain, like the compilers.
bool is_driver(std::string_view comm) {
  return comm == "gcc" || comm == "g++" || comm == "cc" || comm == "c++" || comm == "c89" || comm == "c99" ||
         versioned(comm, "gcc") || versioned(comm, "g++");
}

bool is_memgate_wrapper(const platform::ProcInfo& p, const std::set<pid_t>& runs) {
  return p.comm == "memgate" && !runs.count(p.pid);
}

}  // namespace

bool is_compiler_name(std::string_view comm) {
  static constexpr std::string_view names[] = {
      "nvcc",   "cicc",   "ptxas",  "cudafe++", "fatbinary", "nvlink", "cc1",     "cc1plus", "cc1obj",
      "lto1",   "lto-wrapper", "collect2", "as", "ld",        "ld.bfd", "ld.gold", "ld.lld",  "lld",
      "mold",   "hipcc",  "clang",  "clang++",  "rustc"};
  if (std::find(std::begin(names), std::end(names), comm) != std::end(names)) return true;
  if (is_driver(comm) || versioned(comm, "clang") || versioned(comm, "clang++")) return true;
  // Cross tools: "aarch64-linux-gnu-gcc", cut to 15 bytes by the kernel.
  return comm.find("-linux-") != std::string_view::npos;
}

bool is_init_like(std::string_view comm) {
  static constexpr std::string_view names[] = {"systemd", "init", "tini", "dumb-init", "docker-init", "catatonit",
                                               "s6-svscan"};
  return std::find(std::begin(names), std::end(names), comm) != std::end(names);
}

std::vector<StaleProcess> find_stale(const std::vector<platform::ProcInfo>& all, uid_t uid,
                                     const std::set<pid_t>& memgate_runs) {
  std::unordered_map<pid_t, const platform::ProcInfo*> by_pid;
  for (const auto& p : all) by_pid[p.pid] = &p;
  auto under_memgate_run = [&](pid_t pid) {
    for (size_t hops = 0; pid > 0 && hops <= all.size(); ++hops) {
      if (memgate_runs.count(pid)) return true;
      auto it = by_pid.find(pid);
      if (it == by_pid.end()) return false;
      pid = it->second->ppid;
    }
    return false;
  };
  // Climbs the compile chain from `p`; true if it ends at an init-like parent.
  auto orphaned = [&](const platform::ProcInfo& p) {
    const platform::ProcInfo* cur = &p;
    for (size_t hops = 0; hops <= all.size(); ++hops) {
      if (cur->pid == 1) return false;
      if (cur->ppid == 1) return true;
      auto it = by_pid.find(cur->ppid);
      if (it == by_pid.end()) return false;  // parent outside our view: cannot tell
      const auto& parent = *it->second;
      if (is_init_like(parent.comm)) return true;
      if (!is_compiler_name(parent.comm) && !is_memgate_wrapper(parent, memgate_runs)) return false;
      cur = &parent;
    }
    return false;
  };
  std::vector<StaleProcess> out;
  for (const auto& p : all) {
    if (!is_compiler_name(p.comm) || p.state == 'Z' || p.state == 'X' || p.uid != uid) continue;
    if (under_memgate_run(p.pid) || !orphaned(p)) continue;
    out.push_back({p.pid, p.ppid, p.comm, p.rss, p.starttime});
  }
  return out;
}

std::set<pid_t> find_memgate_runs(const std::vector<platform::ProcInfo>& all, const std::string& proc_root) {
  std::set<pid_t> out;
  for (const auto& p : all) {
    if (p.comm != "memgate") continue;
    auto argv = platform::read_cmdline(p.pid, proc_root);
    if (argv && argv->size() >= 2 && (*argv)[1] == "run") out.insert(p.pid);
  }
  return out;
}

std::vector<StaleProcess> detect_stale(const std::string& proc_root) {
  auto all = platform::read_all_processes(proc_root);
  return find_stale(all, ::getuid(), find_memgate_runs(all, proc_root));
}

Bytes total_rss(const std::vector<StaleProcess>& stale) {
  Bytes sum = 0;
  for (const auto& s : stale) sum += s.rss;
  return sum;
}

namespace {

// One listed process on its way out.
struct Target {
  const StaleProcess* listed;
  int pidfd = -1;  // -1: no pidfd (old kernel); identity re-checked by start time
  bool done = false;
  KillOutcome outcome;
};

// The listed process still runs as itself (not gone, not a zombie, not a
// new process that got the same pid).
bool same_process_alive(const StaleProcess& s, const std::string& proc_root) {
  auto st = platform::read_proc_stat(s.pid, proc_root);
  return st && st->starttime == s.starttime && st->state != 'Z' && st->state != 'X';
}

// Sends `sig` to the target, or settles its outcome if it is already gone.
void signal_target(Target& t, int sig, const std::string& proc_root) {
  if (t.done) return;
  int rc;
  if (t.pidfd >= 0) {
    rc = static_cast<int>(::syscall(SYS_pidfd_send_signal, t.pidfd, sig, nullptr, 0));
  } else {
    if (!same_process_alive(*t.listed, proc_root)) {
      t.done = true;
      t.outcome.ended = true;
      t.outcome.result = sig == SIGTERM ? "already gone" : "terminated";
      return;
    }
    rc = ::kill(t.listed->pid, sig);
  }
  if (rc != 0 && errno == ESRCH) {
    t.done = true;
    t.outcome.ended = true;
    t.outcome.result = sig == SIGTERM ? "already gone" : "terminated";
  } else if (rc != 0) {
    t.done = true;
    t.outcome.result = std::string("cannot signal: ") + std::strerror(errno);
  }
}

bool exited(const Target& t, const std::string& proc_root) {
  if (t.pidfd >= 0) {
    pollfd p{t.pidfd, POLLIN, 0};
    return ::poll(&p, 1, 0) > 0;
  }
  return !same_process_alive(*t.listed, proc_root);
}

// Waits until every pending target exits or `limit` passes; marks them.
void wait_exits(std::vector<Target>& ts, std::chrono::milliseconds limit, const char* result,
                const std::string& proc_root) {
  auto deadline = std::chrono::steady_clock::now() + limit;
  for (;;) {
    std::vector<pollfd> fds;
    bool pending_without_fd = false;
    for (auto& t : ts) {
      if (t.done) continue;
      if (exited(t, proc_root)) {
        t.done = t.outcome.ended = true;
        t.outcome.result = result;
      } else if (t.pidfd >= 0) {
        fds.push_back({t.pidfd, POLLIN, 0});
      } else {
        pending_without_fd = true;
      }
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if ((fds.empty() && !pending_without_fd) || left.count() <= 0) return;
    // A pidfd becomes readable when its process exits: an event, not a
    // poll loop. Without pidfds, /proc is re-read every 50 ms.
    int wait_ms = static_cast<int>(pending_without_fd ? std::min<long>(50, left.count()) : left.count());
    if (fds.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    else ::poll(fds.data(), fds.size(), wait_ms);
  }
}

}  // namespace

std::vector<KillOutcome> kill_stale(const std::vector<StaleProcess>& stale, std::chrono::milliseconds grace,
                                    const std::string& proc_root) {
  std::vector<Target> ts;
  for (const auto& s : stale) {
    Target t{&s, -1, false, {s.pid, s.comm, "", false}};
    t.pidfd = static_cast<int>(::syscall(SYS_pidfd_open, s.pid, 0));
    // Any failure other than "no such process" (an old kernel, no fds
    // left) falls back to re-checking the start time before each signal.
    bool gone = t.pidfd < 0 && errno == ESRCH;
    // Checked after pinning: if the start time still matches now, the pidfd
    // refers to the very process we listed.
    if (gone || !same_process_alive(s, proc_root)) {
      auto now = platform::read_proc_stat(s.pid, proc_root);
      t.done = t.outcome.ended = true;
      t.outcome.result = now && now->starttime != s.starttime ? "pid reused: left alone" : "already gone";
    }
    ts.push_back(std::move(t));
  }
  for (auto& t : ts) signal_target(t, SIGTERM, proc_root);
  wait_exits(ts, grace, "terminated", proc_root);
  for (auto& t : ts) signal_target(t, SIGKILL, proc_root);
  wait_exits(ts, std::chrono::milliseconds(2000), "killed", proc_root);
  std::vector<KillOutcome> out;
  for (auto& t : ts) {
    if (!t.done) t.outcome.result = "still running after SIGKILL";
    if (t.pidfd >= 0) ::close(t.pidfd);
    out.push_back(std::move(t.outcome));
  }
  return out;
}

}  // namespace memgate::doctor
