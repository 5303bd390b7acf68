// The Runner's side of the jobserver (run/jobserver.hpp): serving it to
// the build, telling the governor what its clients hold, and keeping as
// many tokens on offer as the governor allows.
#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/core.h>

#include "platform/proc.hpp"
#include "run/runner_impl.hpp"
#include "util/log.hpp"

namespace memgate {

namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

void Runner::serve_tokens(std::map<std::string, std::string>& env, std::vector<int>& fds) {
  if (opt_.jobserver == "off" || !socket_dir_) return;
  const std::string makeflags = env_or_empty("MAKEFLAGS");
  if (opt_.jobserver != "always" &&
      user_chose_parallelism(opt_.command, makeflags, env_or_empty("CARGO_MAKEFLAGS"))) {
    log::debug("jobserver not served: the build's parallelism is the user's (-j or an outer jobserver)");
    return;
  }
  auto pool = TokenPool::create(socket_dir_->fd(), socket_dir_->path());
  if (!pool) {
    log::warn("no jobserver for this build: {}", pool.error());
    degraded_.push_back("no jobserver: " + pool.error());
    return;
  }
  tokens_.emplace(std::move(*pool));
  const JobserverForm form = opt_.jobserver_fifo ? JobserverForm::fifo : JobserverForm::pipe;
  env["MAKEFLAGS"] = tokens_->makeflags(form, slots_, makeflags);
  env["CARGO_MAKEFLAGS"] = tokens_->makeflags(form, slots_, "");
  fds.push_back(tokens_->build_read_fd());
  fds.push_back(tokens_->build_write_fd());
  if (!opt_.jobserver_log.empty()) {
    tokens_log_ = std::fopen(opt_.jobserver_log.c_str(), "we");
    if (!tokens_log_) log::warn("cannot write the jobserver log {}", opt_.jobserver_log);
  }
  offer_tokens(now());
}

// The processes below memgate that have the fifo open, with their
// children and threads (see LeakWatch).
std::vector<TokenOpener> Runner::token_openers() const {
  std::vector<platform::ProcInfo> all = platform::read_all_processes();
  std::vector<TokenOpener> out;
  const pid_t self = ::getpid();
  for (pid_t pid : platform::descendants(self, all)) {
    if (pid == self) continue;
    const std::string proc = fmt::format("/proc/{}", pid);
    bool opened = false;
    if (DIR* d = ::opendir((proc + "/fd").c_str())) {
      while (dirent* e = ::readdir(d)) {
        struct stat st {};
        if (e->d_name[0] == '.' || ::stat((proc + "/fd/" + e->d_name).c_str(), &st) != 0) continue;
        if (S_ISFIFO(st.st_mode) && tokens_->is_fifo(st.st_dev, st.st_ino)) {
          opened = true;
          break;
        }
      }
      ::closedir(d);
    }
    if (!opened) continue;
    TokenOpener o;
    o.children = static_cast<int>(std::count_if(all.begin(), all.end(), [&](const auto& p) { return p.ppid == pid; }));
    o.threads = 0;
    if (DIR* d = ::opendir((proc + "/task").c_str())) {
      while (dirent* e = ::readdir(d)) o.threads += e->d_name[0] != '.';
      ::closedir(d);
    }
    out.push_back(o);
  }
  return out;
}

void Runner::tell_tokens(double t) {
  if (!tokens_) return;
  int held = tokens_->held();
  if (held > 0 && t >= next_leak_scan_) {
    next_leak_scan_ = t + 0.25;
    if (int n = token_leaks_.observe(held, tokens_holdable(token_openers()), t); n > 0) {
      tokens_->reclaim(n);
      tokens_reclaimed_ += n;
      log::info("jobserver: {} token(s) held by exited clients reclaimed", n);
      held = tokens_->held();
    }
  }
  tokens_max_held_ = std::max(tokens_max_held_, held);
  tokens_told_held_ = held;
  gov_->set_jobserver(held, tokens_->client_seen());
}

void Runner::offer_tokens(double t) {
  if (!tokens_) return;
  int waiting = tokens_->offer(gov_->tokens_to_offer(view_, t), tokens_told_held_);
  int held = tokens_->held();
  if (tokens_log_ && (held != tokens_logged_held_ || waiting != tokens_logged_waiting_)) {
    std::fprintf(tokens_log_, "%.3f held %d waiting %d reclaimed %d\n", t, held, waiting, tokens_reclaimed_);
    std::fflush(tokens_log_);
  }
  tokens_logged_held_ = held;
  tokens_logged_waiting_ = waiting;
}

}  // namespace memgate
