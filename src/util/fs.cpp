#include "util/fs.hpp"

#include <fcntl.h>
#include <limits.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/core.h>

namespace memgate {

namespace {

// The whole file open as `fd` (closed here; < 0: none). With
// `short_is_end`, a read shorter than the buffer ends it (kernel files,
// see read_kernel_file), else only a read of 0 does.
std::optional<std::string> read_fd(int fd, bool short_is_end) {
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      return std::nullopt;
    }
    out.append(buf, static_cast<size_t>(n));
    if (n == 0 || (short_is_end && static_cast<size_t>(n) < sizeof buf)) break;
  }
  ::close(fd);
  return out;
}

}  // namespace

std::optional<std::string> read_file(const std::string& path) {
  return read_fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC), false);
}
std::optional<std::string> read_kernel_file(const std::string& path) {
  return read_fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC), true);
}
std::optional<std::string> read_kernel_file_at(int dirfd, const std::string& rel) {
  if (dirfd < 0 || rel.empty() || rel.front() == '/') return std::nullopt;
  return read_fd(::openat(dirfd, rel.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW), true);
}

Status write_file(const std::string& path, std::string_view content, bool create) {
  int flags = O_WRONLY | O_CLOEXEC | (create ? (O_CREAT | O_TRUNC) : 0);
  int fd = ::open(path.c_str(), flags, 0644);
  if (fd < 0) return Error{fmt::format("cannot open {}: {}", path, std::strerror(errno))};
  ssize_t n;
  do {
    n = ::write(fd, content.data(), content.size());
  } while (n < 0 && errno == EINTR);
  int saved = errno;
  ::close(fd);
  if (n < 0) return Error{fmt::format("cannot write {}: {}", path, std::strerror(saved))};
  if (static_cast<size_t>(n) != content.size()) return Error{fmt::format("short write to {}", path)};
  return ok_status();
}

bool path_exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string join_path(std::string_view a, std::string_view b) {
  std::string out(a);
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  while (!b.empty() && b.front() == '/') b.remove_prefix(1);
  if (b.empty()) return out;
  if (out.empty() || out.back() != '/') out += '/';
  out += b;
  return out;
}

std::string random_letters(std::size_t n) {
  static constexpr char kChars[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  std::string bytes(n, '\0');
  if (::getrandom(bytes.data(), n, 0) != static_cast<ssize_t>(n)) return "";
  for (char& c : bytes) c = kChars[static_cast<unsigned char>(c) % (sizeof kChars - 1)];
  return bytes;
}

std::string current_dir() {
  char buf[PATH_MAX];
  return ::getcwd(buf, sizeof buf) ? std::string(buf) : std::string(".");
}

}  // namespace memgate
