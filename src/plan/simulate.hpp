// The discrete-event simulation under `memgate plan`: jobs run on a
// machine of `cores` cores, and their memory follows their progress.
//
// CPU model (processor sharing). A job computes on its threads for a
// share f of its idle-machine duration W and waits for the rest; alone it
// keeps d = f * threads cores busy. While the running jobs' demand D = sum d
// exceeds the cores, every computing thread gets s = cores / D of a core,
// so the CPU part of a job stretches by 1/s and its progress rate is
//   rate = 1 / (W * ((1 - f) + f / s)).
// A sleeping or remote job (f = 0) is never slowed and slows nobody.
// Using the idle-machine demand (not the stretched one) for D is a fluid
// approximation; it is exact for jobs that compute all the time or never.
//
// Rates only change when a job starts, ends, freezes or thaws, so the
// scheduling pass only stops there; memory is then swept exactly over the
// piecewise-linear profiles (the build's peak lies on a profile point or
// a rate change of some job).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "governor/governor.hpp"
#include "plan/workload.hpp"

namespace memgate::plan {

// The share of a core each computing thread gets.
double cpu_share(double demand, int cores);
// Fraction of the job done per second at that share.
double progress_rate(const PlanJob& job, double share);

// A job's progress over one attempt: linear between points; the first is
// its start, the last its end (p = 1 if it finished).
struct PathPoint {
  double t = 0;
  double p = 0;
};
struct Trace {
  int job = 0;  // index into the job list
  std::vector<PathPoint> path;
};

struct StaticRun {
  double wall_s = 0;
  std::vector<Trace> traces;
};

// make/ninja `-j max_jobs`: jobs start in `order` whenever fewer than
// max_jobs run. `order` holds indices into `jobs`.
StaticRun simulate_static(const std::vector<PlanJob>& jobs, const std::vector<int>& order, int max_jobs, int cores);

// The build's peak memory over these attempts. With `stop_above`, returns
// as soon as memory passes it (the value returned is then above it, but
// not necessarily the peak).
Bytes peak_memory(const std::vector<PlanJob>& jobs, const std::vector<Trace>& traces,
                  std::optional<Bytes> stop_above = std::nullopt);

struct MemgateSimOptions {
  double tick_s = 0.25;  // how often the runner samples memory and steps the governor
  // The governor's admission policy (governor.hpp): plan runs the same
  // Governor as `memgate run`, so it predicts what either policy does.
  AdmissionPolicy admission = GovernorConfig{}.admission;
};

struct MemgateRun {
  double wall_s = 0;
  Bytes peak = 0;
  bool finished = true;  // false: the simulation gave up (it ran far past any sane time)
  int failed = 0;        // jobs memgate gave up on (killed by memory max_attempts times)
  // The governor's own counters ("admitted", "frozen", "requeued",
  // "oom_killed", "ran_alone", ...).
  Counters counters;
  std::vector<Trace> traces;
};

// memgate's policy: the real Governor, driven in simulated time. All jobs
// are offered at once (memgate raises MAX_JOBS so the build tool offers
// enough), predictions are the jobs' recorded figures (a warm run), slots
// are the cores and the budget is capacity - reserve. A frozen job makes
// no progress; a killed one starts over. Memory above capacity - reserve
// (memgate's confinement) is an OOM kill of the largest job, as the
// kernel would pick it.
MemgateRun simulate_memgate(const std::vector<PlanJob>& jobs, const Machine& machine,
                            const MemgateSimOptions& options = {});

}  // namespace memgate::plan
