// Writing the report files, for `memgate run --report/--trace` and
// `memgate report` alike.
#pragma once

#include <string>
#include <string_view>

#include "core/job.hpp"
#include "util/result.hpp"

namespace memgate {

// Writes `content` to a temporary file beside `path` and renames it over
// `path`, so a reader (or a browser reloading the report) never sees half
// a file and a failed write leaves the old file alone. The temporary file
// has an unpredictable name and is created exclusively (mkostemp), and a
// symlink at `path` itself is replaced, never written through: nothing
// another user plants in the directory can redirect the write.
Status write_file_atomically(const std::string& path, std::string_view content);

// Renders and writes the HTML report to `html_path` and the Chrome trace
// to `trace_path`; an empty path skips that file. The error names the
// file and the cause.
Status write_reports(const BuildRecord& build, const std::string& html_path, const std::string& trace_path);

}  // namespace memgate
