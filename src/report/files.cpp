#include "report/files.hpp"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/core.h>

#include "report/html.hpp"
#include "report/trace.hpp"

namespace memgate {

namespace {

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

// The temporary file is made by mkostemp (O_CREAT|O_EXCL, a random name)
// in the target's own directory: memgate often runs as root, and a
// predictable name there (`<path>.tmp-<pid>`) let another user plant a
// symlink that root then wrote through. rename()
// replaces the final name itself and never follows a symlink there.
Status write_file_atomically(const std::string& path, std::string_view content) {
  const auto slash = path.find_last_of('/');
  const std::string dir = slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const std::string base = slash == std::string::npos ? path : path.substr(slash + 1);
  if (base.empty()) return Error{fmt::format("cannot write {}: not a file name", path)};
  std::string tmp = fmt::format("{}{}.{}.XXXXXX", dir == "." ? "./" : dir, base[0] == '.' ? "" : ".", base);
  int fd = ::mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) return Error{fmt::format("cannot write {}: {}", path, std::strerror(errno))};
  std::string failure = write_all(fd, content);
  // mkostemp makes the file 0600; a report is as readable as any other
  // file the user writes (their umask decides).
  const mode_t mask = ::umask(0);
  ::umask(mask);
  if (failure.empty() && ::fchmod(fd, 0644 & ~mask) != 0) failure = std::strerror(errno);
  if (::close(fd) != 0 && failure.empty()) failure = std::strerror(errno);
  if (failure.empty() && std::rename(tmp.c_str(), path.c_str()) != 0) failure = std::strerror(errno);
  if (!failure.empty()) {
    ::unlink(tmp.c_str());
    return Error{fmt::format("cannot write {}: {}", path, failure)};
  }
  return ok_status();
}

Status write_reports(const BuildRecord& build, const std::string& html_path, const std::string& trace_path) {
  if (!html_path.empty()) {
    Status st = write_file_atomically(html_path, render_html_report(build));
    if (!st) return Error{"the HTML report was not written: " + st.error()};
  }
  if (!trace_path.empty()) {
    Status st = write_file_atomically(trace_path, render_trace_json(build));
    if (!st) return Error{"the trace was not written: " + st.error()};
  }
  return ok_status();
}

}  // namespace memgate
