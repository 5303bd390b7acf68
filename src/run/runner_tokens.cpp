#include "run/runner_tokens.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/core.h>

#include "platform/proc.hpp"
#include "util/log.hpp"

namespace memgate {

namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

std::string RunnerTokens::serve(const RunOptions& opt, const PrivateDir& dir, int slots,
                                std::map<std::string, std::string>& env, std::vector<int>& fds) {
  if (opt.jobserver == "off") return "";
  const std::string makeflags = env_or_empty("MAKEFLAGS");
  if (opt.jobserver != "always" && user_chose_parallelism(opt.command, makeflags, env_or_empty("CARGO_MAKEFLAGS"))) {
    log::debug("jobserver not served: the build's parallelism is the user's (-j or an outer jobserver)");
    return "";
  }
  auto pool = TokenPool::create(dir.fd(), dir.path());
  if (!pool) {
    log::warn("no jobserver for this build: {}", pool.error());
    return pool.error();
  }
  pool_.emplace(std::move(*pool));
  const JobserverForm form = opt.jobserver_fifo ? JobserverForm::fifo : JobserverForm::pipe;
  env["MAKEFLAGS"] = pool_->makeflags(form, slots, makeflags);
  env["CARGO_MAKEFLAGS"] = pool_->makeflags(form, slots, "");
  fds.push_back(pool_->build_read_fd());
  fds.push_back(pool_->build_write_fd());
  if (!opt.jobserver_log.empty()) {
    log_ = std::fopen(opt.jobserver_log.c_str(), "we");
    if (!log_) log::warn("cannot write the jobserver log {}", opt.jobserver_log);
  }
  return "";
}

std::vector<TokenOpener> RunnerTokens::openers() const {
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
        if (S_ISFIFO(st.st_mode) && pool_->is_fifo(st.st_dev, st.st_ino)) {
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

void RunnerTokens::tell(Governor& gov, double t) {
  if (!pool_) return;
  int held = pool_->held();
  if (held > 0 && t >= next_leak_scan_) {
    next_leak_scan_ = t + 0.25;
    if (int n = leaks_.observe(held, tokens_holdable(openers()), t); n > 0) {
      pool_->reclaim(n);
      reclaimed_ += n;
      log::info("jobserver: {} token(s) held by exited clients reclaimed", n);
      held = pool_->held();
    }
  }
  told_held_ = held;
  gov.set_jobserver(held, pool_->client_seen());
}

void RunnerTokens::offer(const Governor& gov, const MemoryView& view, double t) {
  if (!pool_) return;
  int waiting = pool_->offer(gov.tokens_to_offer(view, t), told_held_);
  int held = pool_->held();
  if (log_ && (held != logged_held_ || waiting != logged_waiting_)) {
    std::fprintf(log_, "%.3f held %d waiting %d reclaimed %d\n", t, held, waiting, reclaimed_);
    std::fflush(log_);
  }
  logged_held_ = held;
  logged_waiting_ = waiting;
}

void RunnerTokens::close() {
  pool_.reset();
  if (log_) std::fclose(log_), log_ = nullptr;
}

}  // namespace memgate
