// The GNU make jobserver memgate serves for a build (governor/jobserver.hpp
// decides how many tokens are on offer; this carries it out).
//
// One pool, two names: a fifo in memgate's private run directory (the
// socket's), which make 4.4 and later name `fifo:PATH`, and two descriptors
// the build inherits opened on that same fifo, which make 4.3 names
// `--jobserver-auth=R,W`. memgate itself holds a third, non-blocking
// opening of it to put tokens in and take them back out, so the build's
// descriptors stay blocking as clients expect. Tokens memgate put in
// (issued) less those waiting in the fifo are what the clients hold.
//
// The fifo crosses a trust boundary (memgate may run as root): it is made
// with mkfifoat in the verified private directory (it fails if the name
// exists), opened with O_NOFOLLOW relative to that directory, and checked
// to be a fifo of ours with mode 0600 before anything is handed on.
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

#include "util/result.hpp"
#include "util/trusted_dir.hpp"

namespace memgate {

enum class JobserverMode { auto_, always, off };
enum class JobserverForm { pipe, fifo };

// Whether the user already chose the build's parallelism: `-j`, `-jN`,
// `--jobs[=N]`, `--parallel[=N]` (cmake --build) or a short-flag cluster
// with j (`-kj8`) in the command's
// arguments, or a MAKEFLAGS / CARGO_MAKEFLAGS (as inherited) that names
// -j or an outer jobserver. Pure.
bool user_chose_parallelism(const std::vector<std::string>& command, const std::string& makeflags,
                            const std::string& cargo_makeflags);

// Token leaks. A client killed while holding tokens never returns them,
// and the build would run narrower for the rest of its life. Tokens can
// only be held by a process that has the fifo open, for a child it runs
// beyond the one on its implicit (or its parent's) token, or for a thread
// of its own beyond its first: at most (children - 1) + (threads - 1) each
// (a client returns a token whenever one of its jobs ends). Held tokens
// above the sum over the live openers, for LeakWatch::kHold_s on end (a
// client between reading a token and starting its child is not a leak),
// are reclaimed. Pure.
struct TokenOpener {
  int children = 0;
  int threads = 1;
};
int tokens_holdable(const std::vector<TokenOpener>& openers);

class LeakWatch {
 public:
  static constexpr double kHold_s = 1.0;
  // Held and holdable at `t`: how many tokens to reclaim now.
  int observe(int held, int holdable, double t);

 private:
  double since_ = -1;
  int least_ = 0;  // the smallest excess seen since then
};

class TokenPool {
 public:
  // In the private directory `dir_fd` (named `dir_path`).
  static Result<TokenPool> create(int dir_fd, const std::string& dir_path);

  TokenPool(TokenPool&&) noexcept = default;
  TokenPool& operator=(TokenPool&&) noexcept = default;

  const std::string& fifo_path() const { return path_; }
  // Whether `st` (a stat of some /proc/PID/fd/N) is this fifo.
  bool is_fifo(dev_t dev, ino_t ino) const { return dev == dev_ && ino == ino_; }
  // The descriptors the build inherits (close-on-exec here; the spawn
  // clears the flag in the child).
  int build_read_fd() const { return rd_.get(); }
  int build_write_fd() const { return wr_.get(); }
  // What MAKEFLAGS and CARGO_MAKEFLAGS carry, after `existing` flags.
  std::string makeflags(JobserverForm form, int slots, const std::string& existing) const;

  int waiting() const;  // tokens in the fifo now
  int held() const;     // tokens the clients hold now
  // Puts tokens in or takes them out until `target` wait in the fifo (as
  // far as the clients leave them there). Returns how many are waiting.
  // `held_seen`: the held count `target` was worked out for (< 0: now).
  // Tokens the clients took since count against it: a target meant for 1
  // held, written once a client had taken a second, gave make a job more
  // than the slots (CI: 4 compiles at once at --jobs 3).
  int offer(int target, int held_seen = -1);
  // `n` held tokens will never come back (their holders are gone): they
  // stop counting as held, so offer() puts new ones in their place.
  void reclaim(int n);
  bool client_seen() const { return client_seen_; }
  int issued_total() const { return issued_total_; }  // tokens ever put in

 private:
  TokenPool() = default;
  UniqueFd own_, rd_, wr_;
  std::string path_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
  int issued_ = 0;  // in circulation: waiting in the fifo or held
  int issued_total_ = 0;
  mutable bool client_seen_ = false;
};

}  // namespace memgate
