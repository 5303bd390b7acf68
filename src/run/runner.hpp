// `memgate run`: the governed build.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace memgate {

struct RunOptions {
  std::vector<std::string> command;
  std::optional<std::string> memory;   // --memory SIZE
  std::optional<std::string> reserve;  // --reserve SIZE
  std::optional<int> jobs;             // --jobs N (CPU slots)
  std::string history;                 // --history PATH ("" = MEMGATE_HISTORY or the default)
  std::string prior;                   // --prior FILE ("" = MEMGATE_PRIOR, else none): profiles for this run only
  std::string report_html;             // --report FILE.html
  std::string trace_json;              // --trace FILE.json
  std::string summary_json;            // --summary-json FILE: the record, as `history --build ID --json` has it
  bool record_empty = false;           // --record-empty: keep a build that gated no job in history too
  bool no_confine = false;
  bool quiet = false;
  bool verbose = false;  // --verbose: the full summary
  // Distributed compilation (engine/engine.hpp).
  std::string offload;              // --offload ENGINE: send jobs waiting for memory there
  std::optional<int> offload_jobs;  // --offload-jobs N (default: the engine's remote slots)
  double decline_after_s = 0;       // --decline-after S: a build server declines jobs that waited this long
  std::string admission;            // --admission POLICY ("" = the governor's default; governor.hpp)
  // The jobserver (run/jobserver.hpp, docs/jobserver.md).
  std::string jobserver = "auto";   // --jobserver auto|always|off
  bool jobserver_fifo = false;      // --jobserver-fifo: name it fifo:PATH (make 4.4) instead of R,W
  std::string jobserver_log;        // --jobserver-log FILE: "t held waiting" whenever they change
};

// Runs the build to completion and returns `run`'s exit status, which
// scripts rely on: the build's own status, 128+signal, 125 if memgate could
// not start it, 126 if the command cannot be executed, 127 if it was not
// found.
int run_build(const RunOptions& options);

}  // namespace memgate
