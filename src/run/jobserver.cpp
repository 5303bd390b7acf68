#include "run/jobserver.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <string_view>
#include <cstring>

#include <fmt/core.h>

#include "util/text.hpp"

namespace memgate {

namespace {

bool names_jobs(std::string_view a) {
  if (a == "-j" || a == "--jobs" || a.starts_with("--jobs=") || a == "--parallel" || a.starts_with("--parallel="))
    return true;
  if (a.size() < 2 || a[0] != '-' || a[1] == '-') return false;
  // A cluster of short flags: letters up to the j (`-kj8`, `-j8`).
  for (std::size_t i = 1; i < a.size(); ++i) {
    if (a[i] == 'j') return true;
    if (!std::isalpha(static_cast<unsigned char>(a[i]))) return false;
  }
  return false;
}

bool flags_name_jobs(const std::string& flags) {
  if (flags.find("--jobserver-auth") != std::string::npos || flags.find("--jobserver-fds") != std::string::npos)
    return true;
  for (std::string_view w : split(flags, ' '))
    if (names_jobs(w)) return true;
  return false;
}

Result<UniqueFd> open_fifo(int dir_fd, int flags) {
  int fd = ::openat(dir_fd, "jobserver", flags | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Error{fmt::format("cannot open the jobserver fifo: {}", std::strerror(errno))};
  UniqueFd f(fd);
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode) || st.st_uid != ::geteuid() || (st.st_mode & 077) != 0)
    return Error{"the jobserver fifo is not a private fifo of ours"};
  return f;
}

}  // namespace

bool user_chose_parallelism(const std::vector<std::string>& command, const std::string& makeflags,
                            const std::string& cargo_makeflags) {
  for (std::size_t i = 1; i < command.size(); ++i) {
    if (command[i] == "--") break;
    if (names_jobs(command[i])) return true;
  }
  return flags_name_jobs(makeflags) || flags_name_jobs(cargo_makeflags);
}

int tokens_holdable(const std::vector<TokenOpener>& openers) {
  int n = 0;
  for (const TokenOpener& o : openers) n += std::max(0, o.children - 1) + std::max(0, o.threads - 1);
  return n;
}

int LeakWatch::observe(int held, int holdable, double t) {
  int excess = held - holdable;
  if (excess <= 0) {
    since_ = -1;
    return 0;
  }
  if (since_ < 0) {
    since_ = t;
    least_ = excess;
    return 0;
  }
  least_ = std::min(least_, excess);
  if (t - since_ < kHold_s) return 0;
  int n = least_;
  since_ = -1;
  return n;
}

Result<TokenPool> TokenPool::create(int dir_fd, const std::string& dir_path) {
  if (::mkfifoat(dir_fd, "jobserver", 0600) != 0)
    return Error{fmt::format("cannot make the jobserver fifo: {}", std::strerror(errno))};
  TokenPool p;
  p.path_ = dir_path + "/jobserver";
  // memgate's own opening first: with it open for reading and writing,
  // the build's openings never block.
  auto own = open_fifo(dir_fd, O_RDWR);
  if (!own) return Error{own.error()};
  auto rd = open_fifo(dir_fd, O_RDONLY);
  if (!rd) return Error{rd.error()};
  auto wr = open_fifo(dir_fd, O_WRONLY);
  if (!wr) return Error{wr.error()};
  // Clients block on the read end as they do on make's own pipe.
  for (int fd : {rd->get(), wr->get()})
    if (::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK) != 0)
      return Error{fmt::format("cannot set up the jobserver fifo: {}", std::strerror(errno))};
  struct stat st {};
  if (::fstat(own->get(), &st) != 0) return Error{"cannot stat the jobserver fifo"};
  p.dev_ = st.st_dev;
  p.ino_ = st.st_ino;
  p.own_ = std::move(*own);
  p.rd_ = std::move(*rd);
  p.wr_ = std::move(*wr);
  return p;
}

std::string TokenPool::makeflags(JobserverForm form, int slots, const std::string& existing) const {
  std::string auth = form == JobserverForm::fifo ? "fifo:" + path_
                                                 : fmt::format("{},{}", rd_.get(), wr_.get());
  std::string mine = fmt::format("-j{} --jobserver-auth={}", std::max(1, slots), auth);
  return existing.empty() ? mine : existing + " " + mine;
}

int TokenPool::waiting() const {
  int n = 0;
  if (::ioctl(own_.get(), FIONREAD, &n) != 0) return 0;
  return std::max(0, n);
}

int TokenPool::held() const {
  int h = std::max(0, issued_ - waiting());
  if (h > 0) client_seen_ = true;
  return h;
}

int TokenPool::offer(int target, int held_seen) {
  int now = waiting();
  // A client that wrote more than it took: the extra were never ours.
  if (now > issued_) issued_ = now;
  if (held_seen >= 0) target = std::max(0, target - std::max(0, (issued_ - now) - held_seen));
  char buf[256];
  while (now < target) {
    int n = std::min<int>(target - now, sizeof buf);
    std::memset(buf, '+', static_cast<std::size_t>(n));
    ssize_t w = ::write(own_.get(), buf, static_cast<std::size_t>(n));
    if (w <= 0) break;
    issued_ += static_cast<int>(w);
    issued_total_ += static_cast<int>(w);
    now += static_cast<int>(w);
  }
  while (now > target) {
    int n = std::min<int>(now - target, sizeof buf);
    ssize_t r = ::read(own_.get(), buf, static_cast<std::size_t>(n));
    if (r <= 0) break;
    issued_ -= static_cast<int>(r);
    now -= static_cast<int>(r);
  }
  return now;
}

void TokenPool::reclaim(int n) { issued_ = std::max(waiting(), issued_ - std::max(0, n)); }

}  // namespace memgate
