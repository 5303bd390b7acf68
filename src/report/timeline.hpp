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

// Memory the governor held for running jobs, over the build, as a step
// series (two samples at each change: the level before, then after).
//
// History does not record it: a build keeps its used memory over time
// (BuildRecord::memory) but no reservation samples. So it is derived here
// from the jobs: each attempt holds, from its start to its end, what its
// first admission reserved (JobRecord::predicted: the prediction as the
// governor used it), and a rerun after memgate or the kernel killed an
// attempt at least the peak that attempt reached (the governor adds a
// margin on top). An approximation of what Governor::reservation held:
// it releases a job's reservation once the job is past its peak for good,
// and raises it for a job that overshoots, and neither moment is
// recorded. Jobs with no prediction (older records) add nothing. Empty
// when no job had a prediction.
// Changes within `merge_s` of each other are drawn as one step (the
// HTML report passes one pixel's time), so a job that starts a few
// milliseconds after another ends leaves no hairline dip.
std::vector<MemSample> reserved_series(const BuildRecord& build, double merge_s = 0);

// At most `max_points` samples (>= 4), sorted by time, keeping each
// bucket's minimum and maximum so peaks survive thinning.
std::vector<MemSample> downsample(const std::vector<MemSample>& series, size_t max_points);

}  // namespace memgate
