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

// At most `max_points` points of a time- (or progress-) ordered profile:
// the first and last kept (the start and the duration survive), and from
// each stretch between them its highest point (so peaks survive). One rule
// for every profile memgate keeps: a job's samples (MemSample) and plan's
// progress profiles (plan::ProfilePoint); any point type with `.bytes`.
template <class Point>
std::vector<Point> downsample_keeping_peaks(const std::vector<Point>& profile, std::size_t max_points) {
  if (profile.size() <= max_points || max_points < 3) return profile;
  std::vector<Point> out{profile.front()};
  out.reserve(max_points);
  const std::size_t inner = profile.size() - 2;
  const std::size_t buckets = max_points - 2;
  for (std::size_t b = 0; b < buckets; ++b) {
    std::size_t from = 1 + b * inner / buckets, to = 1 + (b + 1) * inner / buckets;
    if (from >= to) continue;
    std::size_t best = from;
    for (std::size_t i = from + 1; i < to; ++i)
      if (profile[i].bytes > profile[best].bytes) best = i;
    out.push_back(profile[best]);
  }
  out.push_back(profile.back());
  return out;
}

// Fills in the CPU clock (MemSample::cpu_s) of the points between two
// that read it, linearly in wall time; points after the last reading stay
// unread (< 0). Readings are made non-decreasing. A job's profile starts
// with {0, 0, 0} and ends with its CPU time, so once it has ended every
// point has a clock.
void interpolate_cpu_clock(std::vector<MemSample>& profile);

inline std::vector<MemSample> downsample_profile(const std::vector<MemSample>& profile, std::size_t max_points = 64) {
  return downsample_keeping_peaks(profile, max_points);
}

}  // namespace memgate
