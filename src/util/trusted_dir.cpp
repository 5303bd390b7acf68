#include "util/trusted_dir.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/core.h>

namespace memgate {

UniqueFd& UniqueFd::operator=(UniqueFd&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

UniqueFd::~UniqueFd() {
  if (fd_ >= 0) ::close(fd_);
}

Result<std::vector<std::string>> list_entries(int dirfd, const std::string& shown) {
  int fd = ::openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  DIR* d = fd >= 0 ? ::fdopendir(fd) : nullptr;
  if (!d) {
    if (fd >= 0) ::close(fd);
    return Error{fmt::format("cannot list {}: {}", shown, std::strerror(errno))};
  }
  std::vector<std::string> out;
  while (const dirent* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    if (n != "." && n != "..") out.emplace_back(n);
  }
  ::closedir(d);
  return out;
}

std::string untrusted_file_reason(uid_t owner, mode_t mode, uid_t uid) {
  if (owner != 0 && owner != uid) return fmt::format("it is owned by uid {}, neither root nor uid {}", owner, uid);
  if (mode & 022) return "it is writable by group or others";
  return "";
}

std::string untrusted_reason(uid_t owner, mode_t mode, uid_t uid, bool last) {
  if (owner != 0 && owner != uid) return fmt::format("it is owned by uid {}, neither root nor uid {}", owner, uid);
  if ((mode & 022) == 0) return "";
  if (last) return "it is writable by group or others";
  if (!(mode & S_ISVTX)) return "it is writable by group or others and not sticky";
  return "";
}

namespace {

std::vector<std::string> components(const std::string& path) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < path.size()) {
    std::size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    if (j > i) out.push_back(path.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

std::string parent_of(const std::string& p) {
  auto slash = p.find_last_of('/');
  return slash == 0 || slash == std::string::npos ? "/" : p.substr(0, slash);
}

// `dir` with its existing part resolved (realpath) and the missing rest
// appended as given; "" if an existing part cannot be resolved.
std::string resolve_existing(const std::string& dir, std::size_t* missing) {
  std::string prefix = dir;
  std::vector<std::string> rest;
  char buf[PATH_MAX];
  *missing = 0;
  while (::realpath(prefix.c_str(), buf) == nullptr) {
    if (errno != ENOENT || prefix == "/") return "";
    auto slash = prefix.find_last_of('/');
    rest.insert(rest.begin(), prefix.substr(slash + 1));
    prefix = parent_of(prefix);
  }
  std::string out = buf;
  for (const auto& r : rest) {
    if (r == "." || r == "..") return "";
    out += (out == "/" ? "" : "/") + r;
  }
  *missing = rest.size();
  return out;
}

Status check(int fd, const std::string& path, uid_t uid, bool last) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return Error{fmt::format("cannot stat {}: {}", path, std::strerror(errno))};
  if (!S_ISDIR(st.st_mode)) return Error{fmt::format("{} is not a directory", path)};
  std::string why = untrusted_reason(st.st_uid, st.st_mode, uid, last);
  if (!why.empty()) return Error{fmt::format("{}: {}", path, why)};
  return ok_status();
}

// The walk behind open_trusted_dir and open_trusted_base; `strict_last`:
// the last directory may not be writable by others even if sticky.
Result<UniqueFd> walk(const std::string& dir, uid_t uid, bool create, mode_t mode, bool strict_last,
                      std::string* resolved) {
  if (dir.empty() || dir[0] != '/') return Error{fmt::format("'{}' is not an absolute path", dir)};
  std::size_t missing = 0;
  std::string real = resolve_existing(dir, &missing);
  if (real.empty()) return Error{fmt::format("cannot resolve {}: {}", dir, std::strerror(errno))};
  if (missing > 0 && !create) return Error{fmt::format("{} does not exist", dir)};
  auto parts = components(real);
  UniqueFd fd(::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return Error{fmt::format("cannot open /: {}", std::strerror(errno))};
  if (auto s = check(fd.get(), "/", uid, parts.empty() && strict_last); !s) return Error{s.error()};
  std::string so_far;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    so_far += "/" + parts[i];
    bool last = i + 1 == parts.size();
    if (i + missing >= parts.size() && ::mkdirat(fd.get(), parts[i].c_str(), mode) != 0 && errno != EEXIST)
      return Error{fmt::format("cannot create {}: {}", so_far, std::strerror(errno))};
    UniqueFd next(::openat(fd.get(), parts[i].c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!next)
      return Error{fmt::format("cannot open {}: {}", so_far,
                               errno == ELOOP || errno == ENOTDIR ? "it changed into a symlink or a file while checked"
                                                                 : std::strerror(errno))};
    if (auto s = check(next.get(), so_far, uid, last && strict_last); !s) return Error{s.error()};
    fd = std::move(next);
  }
  if (resolved) *resolved = real;
  return fd;
}

}  // namespace

Result<UniqueFd> open_trusted_dir(const std::string& dir, uid_t uid, bool create, mode_t mode, std::string* resolved) {
  return walk(dir, uid, create, mode, true, resolved);
}

Result<UniqueFd> open_trusted_base(const std::string& dir, uid_t uid, std::string* resolved) {
  return walk(dir, uid, false, 0, false, resolved);
}

Result<TrustedFile> open_trusted_file(const std::string& path, uid_t uid) {
  if (path.empty() || path[0] != '/') return Error{fmt::format("'{}' is not an absolute path", path)};
  char buf[PATH_MAX];
  if (::realpath(path.c_str(), buf) == nullptr)
    return Error{fmt::format("cannot resolve {}: {}", path, std::strerror(errno))};
  std::string real = buf;
  auto slash = real.find_last_of('/');
  std::string name = real.substr(slash + 1);
  auto dir = open_trusted_dir(parent_of(real), uid);
  if (!dir) return Error{dir.error()};
  UniqueFd fd(::openat(dir->get(), name.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY | O_NOFOLLOW));
  if (!fd) return Error{fmt::format("cannot open {}: {}", real, std::strerror(errno))};
  struct stat st;
  if (::fstat(fd.get(), &st) != 0) return Error{fmt::format("cannot stat {}: {}", real, std::strerror(errno))};
  if (!S_ISREG(st.st_mode)) return Error{fmt::format("{} is not a regular file", real)};
  if (std::string why = untrusted_file_reason(st.st_uid, st.st_mode, uid); !why.empty())
    return Error{fmt::format("{}: {}", real, why)};
  return TrustedFile{std::move(fd), real};
}

}  // namespace memgate
