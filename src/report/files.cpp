#include "report/files.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include <fmt/core.h>

#include "report/html.hpp"
#include "report/trace.hpp"
#include "util/fs.hpp"

namespace memgate {

Status write_file_atomically(const std::string& path, std::string_view content) {
  const std::string tmp = fmt::format("{}.tmp-{}", path, ::getpid());
  Status st = write_file(tmp, content, true);
  if (!st) {
    ::unlink(tmp.c_str());
    return st;
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int saved = errno;
    ::unlink(tmp.c_str());
    return Error{fmt::format("cannot write {}: {}", path, std::strerror(saved))};
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
