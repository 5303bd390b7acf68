// What `memgate plan` simulates: a list of jobs in the order the build
// tool submits them, each with the time it needs alone, its CPU use and
// its memory over its life, plus the machine to run them on.
//
// Memory follows a job's progress, not the clock: a profile point is a
// fraction of the job's work (0 = start, 1 = done), so a job slowed down
// by CPU contention reaches its peak later, as a real compiler does.
//
// Assumptions every input shares:
// - Dependencies are not recorded. The submit order is taken to be a
//   valid topological order and every job to be available from the start
//   (the recorded build's own order; its links were late in it anyway).
// - A job's CPU use is even over its life: it computes for cpu_s seconds
//   on `threads` threads and waits (I/O, sleep, a remote compiler) for the
//   rest.
#pragma once

#include <string>
#include <vector>

#include "core/capacity.hpp"
#include "core/job.hpp"
#include "util/size.hpp"

namespace memgate::plan {

// A point of a job's memory profile: `p` is the fraction of its work done.
struct ProfilePoint {
  double p = 0;
  Bytes bytes = 0;
};

struct PlanJob {
  std::string name;       // for messages: the identity or output
  JobKey key;             // what memgate's governor sees (identity, tool, cpu_weight)
  double work_s = 1;      // duration on an otherwise idle machine
  double cpu_s = 0;       // CPU time over all threads; 0 = sleeps or runs remotely
  int threads = 1;        // CPU threads it keeps busy while computing
  Bytes peak = 0;         // == the profile's largest point
  std::vector<ProfilePoint> profile;  // sorted by p, from p = 0 to p = 1
  Prediction predicted;   // what a warm memgate run would know of it

  // The share of its idle-machine duration the job spends computing on
  // all its threads (0..1).
  double cpu_fraction() const;
  // Cores it keeps busy on an idle machine: cpu_fraction() * threads.
  double cpu_demand() const;
};

struct Machine {
  int cores = 1;
  Bytes capacity = 0;
  Bytes reserve = 0;
  // What static job counts must stay within to be called safe, and what
  // memgate's governor may hand to jobs (core's budget_for, as in `run`).
  Bytes budget() const { return budget_for(capacity, reserve).budget; }
};

// Memory of a job at progress p (linear between profile points).
Bytes memory_at(const std::vector<ProfilePoint>& profile, double p);
// The largest memory between progress a and b (a <= b).
Bytes max_between(const std::vector<ProfilePoint>& profile, double a, double b);

// At most this many points per profile, like the recorded profiles: the
// simulation's cost grows with it.
inline constexpr size_t kMaxProfilePoints = 64;

// A recorded profile (t relative to the attempt start) as a function of
// progress over an attempt of `duration_s`. The recorded peak is put in at
// `t_peak_s` if the (downsampled) samples missed it, and the profile is
// held flat before the first and after the last sample. It is simplified
// to within 1% of its peak, then downsampled to kMaxProfilePoints.
std::vector<ProfilePoint> profile_from_samples(const std::vector<MemSample>& samples, double duration_s,
                                               Bytes peak, double t_peak_s);

// A profile for a job known only by its figures: a linear ramp to the peak
// at `peak_at` (fraction of the job), held until `peak_over` (the last
// moment near the peak; 1 = held to the end, which is what an unknown
// shape must assume), then `after` for the rest.
std::vector<ProfilePoint> synthesize_profile(Bytes peak, double peak_at, double peak_over, Bytes after);

// Drops the points that lie within `tolerance` of the line through their
// neighbours that are kept (Douglas-Peucker), always keeping the ends and
// the peak: the simulation's cost grows with the points, and recorded
// profiles are mostly straight ramps and plateaus with sampling noise.
std::vector<ProfilePoint> simplify(const std::vector<ProfilePoint>& profile, Bytes tolerance);

// Shrinks a profile to at most `max_points`, keeping its first and last
// points and, in each of the buckets it is cut into, the largest point, so
// peaks survive.
std::vector<ProfilePoint> downsample(const std::vector<ProfilePoint>& profile, size_t max_points);

// The part of a prediction the profile determines: the peak, the last
// moment the job is within 90% of it (peak_over_frac, as the recorder
// defines it), the most it uses after that, and its future-max envelope
// (what admission reads).
void fill_prediction_from_profile(const std::vector<ProfilePoint>& profile, Prediction& p);
// The future-max envelope of a progress profile (predict/envelope.hpp).
Envelope envelope_of_profile(const std::vector<ProfilePoint>& profile);

// Sets peak from the profile, clamps the fields the simulation relies on
// (work_s > 0, threads >= 1, cpu_s >= 0) and, if no prediction was given,
// predicts what the profile shows.
void normalize(PlanJob& job);

}  // namespace memgate::plan
