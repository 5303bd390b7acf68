// Writing the report files, for `memgate run --report/--trace` and
// `memgate report` alike.
#pragma once

#include <string>

#include "core/job.hpp"
#include "util/result.hpp"

namespace memgate {

// Renders and writes the HTML report to `html_path` and the Chrome trace
// to `trace_path`; an empty path skips that file. The error names the
// file and the cause.
Status write_reports(const BuildRecord& build, const std::string& html_path, const std::string& trace_path);

}  // namespace memgate
