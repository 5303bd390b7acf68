#include "report/files.hpp"

#include <fmt/core.h>

#include "report/html.hpp"
#include "report/trace.hpp"
#include "util/atomic_file.hpp"

namespace memgate {

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
