// Directories and files memgate trusts: what it runs (its parts, the shim
// directory), what it reads as its own settings (the config file, the
// shipped priors) and where it creates and removes things (the socket's
// directory). memgate often runs as root on shared machines: a directory
// that another user can swap, or whose parent another user can write,
// would let that user choose what root runs, reads or deletes.
//
// The rule, everywhere: every directory from / down is owned by root or
// the user and writable by neither group nor others unless it is sticky
// (like /tmp, where nobody may rename or delete another's entries); the
// directory that holds the thing itself is not writable by group or others
// at all (a base for private directories, open_trusted_base, may be sticky);
// a file is owned by root or the user and writable by neither group nor
// others. Checked once, at start: since nobody else can write the chain,
// nobody else can swap anything in it later.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

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
  int release() { return std::exchange(fd_, -1); }
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
// `resolved`, if given, gets the path that was walked (symlinks resolved):
// the one to hand on, since only it was checked.
Result<UniqueFd> open_trusted_dir(const std::string& dir, uid_t uid, bool create = false, mode_t mode = 0755,
                                  std::string* resolved = nullptr);

// The same walk for a directory to make private directories in: it may
// itself be writable by others if it is sticky (/tmp), since then nobody
// else can rename or remove what we make there.
Result<UniqueFd> open_trusted_base(const std::string& dir, uid_t uid, std::string* resolved = nullptr);

// A regular file to read as trusted input or hand on to be run: its
// directory passes open_trusted_dir (after resolving symlinks, the file's
// own too), it is opened O_NOFOLLOW relative to that directory, and it is
// owned by root or `uid` and writable by neither group nor others.
struct TrustedFile {
  UniqueFd fd;       // O_RDONLY | O_CLOEXEC | O_NONBLOCK
  std::string path;  // the resolved path that was checked
};
Result<TrustedFile> open_trusted_file(const std::string& path, uid_t uid);

// The names in the open directory `dirfd` other than "." and "..", read
// through the fd (never by path); `shown` names it in the error.
Result<std::vector<std::string>> list_entries(int dirfd, const std::string& shown);

// The check open_trusted_dir makes of one directory (its fstat fields):
// "" if trusted, else why not. `last`: the directory that holds the thing
// itself, which may not be writable by others even if sticky.
std::string untrusted_reason(uid_t owner, mode_t mode, uid_t uid, bool last);
// The check open_trusted_file makes of the file itself.
std::string untrusted_file_reason(uid_t owner, mode_t mode, uid_t uid);

}  // namespace memgate
