// The geometry shared by the HTML report and the Chrome trace: which slot
// (lane) each job attempt ran in, short display names, and a memory series
// thinned to a drawable size.
#pragma once

#include <string>
#include <vector>

#include "core/job.hpp"

namespace memgate {

// One run of one job, placed in a lane.
struct TimelineBar {
  int job = 0;            // index into BuildRecord::jobs
  int attempt = 0;        // index into the job's attempt_log (0 if it has none)
  int attempts = 1;       // how many attempts the job had
  double start_s = 0;
  double end_s = 0;
  int lane = 0;
  bool last = true;       // the job's final attempt (the report's one bar per job)
  Outcome outcome = Outcome::ok;
  Bytes peak_bytes = 0;
};

struct Timeline {
  std::vector<TimelineBar> bars;  // sorted by start time
  int lanes = 0;
  double end_s = 0;               // the latest end of any bar
};

// Every attempt of every job, assigned greedily by start time to the
// lowest lane that is free, so the lane count is the build's peak
// concurrency. A job without an attempt log is one attempt spanning its
// start and end.
Timeline layout_timeline(const BuildRecord& build);

// A name that fits a bar or a trace slice: the job's source stem, else the
// last path component of its identity, at most 48 bytes.
std::string short_name(const JobRecord& job);

// At most `max_points` samples (>= 4), sorted by time, keeping each
// bucket's minimum and maximum so peaks survive thinning.
std::vector<MemSample> downsample(const std::vector<MemSample>& series, size_t max_points);

}  // namespace memgate
