#include "util/trusted_dir.hpp"

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

}  // namespace

Result<UniqueFd> open_trusted_dir(const std::string& dir, uid_t uid, bool create, mode_t mode) {
  if (dir.empty() || dir[0] != '/') return Error{fmt::format("'{}' is not an absolute path", dir)};
  std::size_t missing = 0;
  std::string real = resolve_existing(dir, &missing);
  if (real.empty()) return Error{fmt::format("cannot resolve {}: {}", dir, std::strerror(errno))};
  if (missing > 0 && !create) return Error{fmt::format("{} does not exist", dir)};
  auto parts = components(real);
  UniqueFd fd(::open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) return Error{fmt::format("cannot open /: {}", std::strerror(errno))};
  if (auto s = check(fd.get(), "/", uid, parts.empty()); !s) return Error{s.error()};
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
    if (auto s = check(next.get(), so_far, uid, last); !s) return Error{s.error()};
    fd = std::move(next);
  }
  return fd;
}

}  // namespace memgate
