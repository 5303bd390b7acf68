#include "util/atomic_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/core.h>

#include "util/fs.hpp"
#include "util/trusted_dir.hpp"

namespace memgate {
namespace {

constexpr int kNameTries = 64;

// The reason a write failed, or "" if all of `content` went to `fd`.
std::string write_all(int fd, std::string_view content) {
  while (!content.empty()) {
    ssize_t n = ::write(fd, content.data(), content.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return n < 0 ? std::strerror(errno) : "nothing written";
    content.remove_prefix(static_cast<size_t>(n));
  }
  return "";
}

}  // namespace

namespace {

struct Target {
  UniqueFd dir;
  std::string base;
};

Result<Target> open_target(const std::string& path) {
  const auto slash = path.find_last_of('/');
  std::string dir = slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.empty() || base == "." || base == "..") return Error{fmt::format("cannot write {}: not a file name", path)};
  if (dir[0] != '/') dir = join_path(current_dir(), dir);
  auto dirfd = open_trusted_base(dir, ::geteuid());
  if (!dirfd) return Error{fmt::format("cannot write {}: {}", path, dirfd.error())};
  return Target{std::move(*dirfd), base};
}

}  // namespace

Status check_writable_output(const std::string& path) {
  auto target = open_target(path);
  if (!target) return Error{target.error()};
  struct stat st {};
  if (::fstatat(target->dir.get(), target->base.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode))
    return Error{fmt::format("cannot write {}: it is a directory", path)};
  for (int i = 0; i < kNameTries; ++i) {
    std::string letters = random_letters(6);
    if (letters.empty()) return Error{fmt::format("cannot write {}: no random bytes for a name", path)};
    std::string tmp = fmt::format("{}{}.{}", target->base[0] == '.' ? "" : ".", target->base, letters);
    UniqueFd fd(::openat(target->dir.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (fd) {
      ::unlinkat(target->dir.get(), tmp.c_str(), 0);
      return ok_status();
    }
    if (errno != EEXIST) return Error{fmt::format("cannot write {}: {}", path, std::strerror(errno))};
  }
  return Error{fmt::format("cannot write {}: no free temporary name beside it", path)};
}

Status write_file_atomically(const std::string& path, std::string_view content, mode_t mode) {
  auto target = open_target(path);
  if (!target) return Error{target.error()};
  const std::string& base = target->base;
  const UniqueFd& dirfd = target->dir;
  std::string tmp;
  UniqueFd fd;
  for (int i = 0; i < kNameTries && !fd; ++i) {
    std::string letters = random_letters(6);
    if (letters.empty()) return Error{fmt::format("cannot write {}: no random bytes for a name", path)};
    tmp = fmt::format("{}{}.{}", base[0] == '.' ? "" : ".", base, letters);
    fd = UniqueFd(::openat(dirfd.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd && errno != EEXIST) return Error{fmt::format("cannot write {}: {}", path, std::strerror(errno))};
  }
  if (!fd) return Error{fmt::format("cannot write {}: no free temporary name beside it", path)};
  std::string failure = write_all(fd.get(), content);
  const mode_t mask = ::umask(0);
  ::umask(mask);
  if (failure.empty() && ::fchmod(fd.get(), mode & ~mask) != 0) failure = std::strerror(errno);
  if (failure.empty() && ::fsync(fd.get()) != 0) failure = std::strerror(errno);
  if (::close(fd.release()) != 0 && failure.empty()) failure = std::strerror(errno);
  if (failure.empty() && ::renameat(dirfd.get(), tmp.c_str(), dirfd.get(), base.c_str()) != 0)
    failure = std::strerror(errno);
  if (!failure.empty()) {
    ::unlinkat(dirfd.get(), tmp.c_str(), 0);
    return Error{fmt::format("cannot write {}: {}", path, failure)};
  }
  return ok_status();
}

}  // namespace memgate
