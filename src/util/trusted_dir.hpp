// Directories memgate trusts with something it will run (the fallback shim
// directory). memgate often runs as root on shared machines: a directory
// that another user can swap, or whose parent another user can write,
// would let that user choose what root runs.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>

#include "util/result.hpp"

namespace memgate {

// An owned file descriptor, closed on destruction.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  UniqueFd(UniqueFd&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept;
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  ~UniqueFd();
  int get() const { return fd_; }
  explicit operator bool() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// Opens the absolute directory `dir` for use with openat and friends,
// after checking the whole chain: every directory from / down must be
// owned by root or `uid`, and writable by neither group nor others unless
// it is sticky (like /tmp); `dir` itself must not be writable by group or
// others at all. Symbolic links in `dir` are resolved first (realpath) and
// the resolved chain is then walked with O_NOFOLLOW, one openat per
// component relative to the verified parent, so swapping a component
// after the check makes the walk fail instead of leading elsewhere.
// With `create`, missing trailing components are made (mkdirat, `mode`).
Result<UniqueFd> open_trusted_dir(const std::string& dir, uid_t uid, bool create = false, mode_t mode = 0755);

// The check open_trusted_dir makes of one directory (its fstat fields):
// "" if trusted, else why not.
std::string untrusted_reason(uid_t owner, mode_t mode, uid_t uid, bool last);

}  // namespace memgate
