// What a job's memory profile says about when its peak comes and what it
// needs afterwards. The runner calls this when a job finishes; the
// predictor learns the results, and admission uses them to release a
// job's reservation once it is past its peak for good.
#pragma once

#include <cstddef>
#include <vector>

#include "core/job.hpp"

namespace memgate {

struct PeakTiming {
  Bytes peak = 0;
  double t_peak_s = 0;          // first time the profile reached its peak
  // The last moment memory was within `high_frac` of the peak, as a
  // fraction of the duration. Sampled profiles only show that memory was
  // high at one sample and lower at the next, so the moment is taken as
  // the next sample's time: never earlier than the truth.
  double peak_over_frac = 1.0;
  Bytes after_peak_bytes = 0;   // the most memory after that moment
};

// `profile` is time-ordered, t relative to the job's start. `duration_s`
// is the job's wall time; 0 takes the last sample's time. A job with
// several peaks (archs compiled one after another) gets the last of them;
// one that stays high to the end gets 1.0 and after_peak = peak.
PeakTiming peak_timing(const std::vector<MemSample>& profile, double duration_s = 0,
                       double high_frac = 0.9);

// At most `max_points` samples, keeping each stretch's highest sample (so
// peaks survive) and the last sample (so the duration does).
std::vector<MemSample> downsample_profile(const std::vector<MemSample>& profile, std::size_t max_points = 64);

}  // namespace memgate
