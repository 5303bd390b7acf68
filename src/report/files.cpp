#include "report/files.hpp"

#include <fcntl.h>
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

Status write_file_atomically(const std::string& path, std::string_view content) {
  const std::string tmp = fmt::format("{}.tmp-{}", path, ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Error{fmt::format("cannot write {}: {}", path, std::strerror(errno))};
  std::string failure = write_all(fd, content);
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
