// A fresh directory only this uid can use (mode 0700), made in a trusted
// base and held open: what memgate's socket lives in.
//
// memgate often runs as root. A private directory in a base that another
// user can write without the sticky bit can be renamed away by that user
// and replaced by a symlink to any directory, and clean-up by path then
// deletes that directory's files as root. So:
// - the base is checked all the way up (util/trusted_dir.hpp,
//   open_trusted_base: /tmp's sticky bit is fine, a 0777 directory is not);
// - the directory is made with mkdirat relative to the verified base fd,
//   opened O_NOFOLLOW, and checked to be ours and 0700;
// - removal lists and unlinks through the directory's own fd, then removes
//   the name from the base only if it is still that same directory.
// Paths into it (the socket's, which wrappers connect to) stay valid for
// its life because nobody else can rename anything on the way.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <vector>

#include "util/result.hpp"
#include "util/trusted_dir.hpp"

namespace memgate {

class PrivateDir {
 public:
  // In the first of `bases` (absolute paths) that passes the checks and
  // leaves the new path at most `max_len` bytes long; `skipped` gets why
  // each base before it was passed over, in order. The error lists them all.
  static Result<PrivateDir> create(const std::vector<std::string>& bases, std::size_t max_len,
                                   std::vector<std::string>* skipped = nullptr);

  PrivateDir(PrivateDir&&) noexcept = default;
  PrivateDir& operator=(PrivateDir&&) noexcept;
  PrivateDir(const PrivateDir&) = delete;
  PrivateDir& operator=(const PrivateDir&) = delete;
  ~PrivateDir();  // remove()

  const std::string& path() const { return path_; }
  int fd() const { return dir_.get(); }

  // Unlinks every file directly inside (through the directory's fd, never
  // by path), then the directory itself. Safe to call twice.
  Status remove();

 private:
  PrivateDir(UniqueFd base, UniqueFd dir, std::string name, std::string path);
  UniqueFd base_, dir_;
  std::string name_, path_;
};

}  // namespace memgate
