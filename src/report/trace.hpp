// The build as a Chrome Trace Event Format file, for Perfetto and
// chrome://tracing: one complete ("X") slice per job attempt on the lane
// (thread) it ran in, instant events for the governor's freeze, thaw,
// requeue and OOM decisions, and a memory counter track with the budget.
#pragma once

#include <string>

#include "core/job.hpp"

namespace memgate {

// A JSON object {"traceEvents": [...], "displayTimeUnit": "ms", ...}.
// Times are microseconds since the build started. pid 1 is the build;
// tid 0 carries the governor's instant events, tid N+1 is lane N.
// Counter events come in time order. Invalid UTF-8 in identities is
// replaced, never fatal.
std::string render_trace_json(const BuildRecord& build);

}  // namespace memgate
