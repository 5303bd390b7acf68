// The fallback shim directory: names, marker, creation and checks.
#include "wrap/shims.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <optional>
#include <vector>

#include <fmt/core.h>

#include "util/fs.hpp"
#include "util/trusted_dir.hpp"
#include "wrap/parts.hpp"

namespace memgate {
namespace {

constexpr std::string_view kMarkerText =
    "memgate shim directory: each compiler name here is a symlink to memgate's wrapper,\n"
    "which gates the call when run under `memgate run` and otherwise runs the real compiler.\n"
    "Nothing else may be in this directory: memgate refuses to use it then.\n";

// Our own temporary names: ".NAME.PID.tmp" (links and the marker being
// replaced by a concurrent run). Nobody runs a program by such a name, so
// they cannot shadow anything.
bool is_our_temp(std::string_view name) {
  if (name.size() < 6 || name[0] != '.' || name.substr(name.size() - 4) != ".tmp") return false;
  std::string_view mid = name.substr(1, name.size() - 5);
  auto dot = mid.find_last_of('.');
  if (dot == std::string_view::npos || dot + 1 == mid.size()) return false;
  std::string_view pid = mid.substr(dot + 1), base = mid.substr(0, dot);
  if (!std::all_of(pid.begin(), pid.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
  return is_shim_name(base) || base == kShimMarker;
}

std::string temp_name(std::string_view name) { return fmt::format(".{}.{}.tmp", name, ::getpid()); }

Status check_entries(int dirfd, const std::string& dir) {
  auto entries = list_entries(dirfd, dir);
  if (!entries) return Error{entries.error()};
  for (const auto& name : *entries) {
    if (name == kShimMarker || is_shim_name(name) || is_our_temp(name)) continue;
    return Error{fmt::format(
        "refusing shim directory {}: it holds '{}', which is not a compiler shim and would shadow a program of "
        "that name for the whole build; remove it",
        dir, name)};
  }
  return ok_status();
}

bool owned_by_us_or_root(const struct stat& st) { return st.st_uid == 0 || st.st_uid == ::geteuid(); }

Status write_marker(int dirfd, const std::string& dir) {
  struct stat st;
  if (::fstatat(dirfd, std::string(kShimMarker).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0) {
    if (S_ISREG(st.st_mode) && owned_by_us_or_root(st)) return ok_status();
    return Error{fmt::format("refusing shim directory {}: its {} is not a regular file of ours", dir, kShimMarker)};
  }
  std::string tmp = temp_name(kShimMarker);
  ::unlinkat(dirfd, tmp.c_str(), 0);
  int fd = ::openat(dirfd, tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return Error{fmt::format("cannot create {}/{}: {}", dir, tmp, std::strerror(errno))};
  bool written = ::write(fd, kMarkerText.data(), kMarkerText.size()) == static_cast<ssize_t>(kMarkerText.size());
  ::close(fd);
  if (!written || ::renameat(dirfd, tmp.c_str(), dirfd, std::string(kShimMarker).c_str()) != 0) {
    int e = errno;
    ::unlinkat(dirfd, tmp.c_str(), 0);
    return Error{fmt::format("cannot create {}/{}: {}", dir, kShimMarker, std::strerror(e))};
  }
  return ok_status();
}

std::optional<std::pair<dev_t, ino_t>> identity_of(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return std::pair{st.st_dev, st.st_ino};
}

// Whether the shim `name` is a link of ours that says `exe` or leads to
// one of `targets`.
bool shim_is_good(int dirfd, std::string_view name, const std::string& exe,
                  const std::vector<std::pair<dev_t, ino_t>>& targets) {
  std::string n(name);
  struct stat link, target;
  if (::fstatat(dirfd, n.c_str(), &link, AT_SYMLINK_NOFOLLOW) != 0) return false;
  if (!S_ISLNK(link.st_mode) || !owned_by_us_or_root(link)) return false;
  char buf[PATH_MAX];
  ssize_t len = ::readlinkat(dirfd, n.c_str(), buf, sizeof buf);
  if (len > 0 && std::string_view(buf, static_cast<std::size_t>(len)) == exe) return true;
  if (::fstatat(dirfd, n.c_str(), &target, 0) != 0) return false;
  return std::find(targets.begin(), targets.end(), std::pair{target.st_dev, target.st_ino}) != targets.end();
}

Status link_shim(int dirfd, const std::string& dir, std::string_view name, const std::string& exe) {
  std::string tmp = temp_name(name), n(name);
  ::unlinkat(dirfd, tmp.c_str(), 0);
  if (::symlinkat(exe.c_str(), dirfd, tmp.c_str()) != 0)
    return Error{fmt::format("cannot create {}/{}: {}", dir, tmp, std::strerror(errno))};
  if (::renameat(dirfd, tmp.c_str(), dirfd, n.c_str()) != 0) {
    int e = errno;
    ::unlinkat(dirfd, tmp.c_str(), 0);
    return Error{fmt::format("cannot install shim {}/{}: {}", dir, name, std::strerror(e))};
  }
  return ok_status();
}

std::string parent_of(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

}  // namespace

bool is_shim_name(std::string_view name) {
  return std::find(kShimNames.begin(), kShimNames.end(), name) != kShimNames.end();
}

bool is_shim_dir(const std::string& dir) {
  struct stat st;
  return ::stat(join_path(dir, kShimMarker).c_str(), &st) == 0;
}

std::string default_shim_dir() { return find_parts().shim_dir; }

Result<std::string> ensure_shim_dir(const std::string& dir, const std::string& memgate_exe) {
  if (dir.empty() || dir[0] != '/') return Error{fmt::format("shim directory must be absolute: '{}'", dir)};
  if (memgate_exe.empty() || memgate_exe[0] != '/')
    return Error{fmt::format("memgate's path must be absolute: '{}'", memgate_exe)};
  auto fd = open_trusted_dir(dir, ::geteuid(), true, 0755);
  if (!fd) return Error{fmt::format("refusing shim directory {}: {}", dir, fd.error())};
  if (auto s = check_entries(fd->get(), dir); !s) return Error{s.error()};
  if (auto s = write_marker(fd->get(), dir); !s) return Error{s.error()};
  std::vector<std::pair<dev_t, ino_t>> targets;
  for (const auto& t : {memgate_exe, join_path(parent_of(dir), kWrapperName)})
    if (auto id = identity_of(t)) targets.push_back(*id);
  for (auto name : kShimNames) {
    if (shim_is_good(fd->get(), name, memgate_exe, targets)) continue;
    if (auto s = link_shim(fd->get(), dir, name, memgate_exe); !s) return Error{s.error()};
  }
  return dir;
}

}  // namespace memgate
