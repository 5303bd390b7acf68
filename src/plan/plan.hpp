// `memgate plan`: for each static job count N, how long the build takes,
// how much memory it peaks at, and how likely it is to OOM; then what
// memgate itself would do, and the one N to use where memgate cannot wrap.
//
// - Wall time and "peak" are for the jobs in their recorded order.
// - OOM risk is the share of `orders` random orders (a seeded shuffle, the
//   same orders for every N) whose peak exceeds the capacity: the build
//   tool may well run the jobs in another order (other dependencies, a
//   changed file, ninja's own ordering).
// - "worst peak" is the largest peak over the recorded order and all of
//   those orders.
// - A job count is safe when its worst peak stays within capacity -
//   reserve, and so does every smaller count's: peak is treated as
//   non-decreasing in N, so that more memory never recommends fewer jobs.
//   The sum of the N largest job peaks bounds the peak of any order, so
//   the counts below that bound need no simulation.
// - The recommendation is the smallest safe N whose wall time is within
//   5% of the best safe wall time. None if even N = 1 is unsafe (one job
//   alone needs more than capacity - reserve).
// - The default range is 1 .. max(2 x cores, 8), cut at the number of
//   jobs (more slots than jobs change nothing). The recommendation always
//   considers every N of the range; the table shows every N when there are
//   at most 32, otherwise the powers of two, the ends, the core count, the
//   recommendation with its neighbours and the first unsafe N.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plan/simulate.hpp"
#include "plan/workload.hpp"

namespace memgate::plan {

struct PlanOptions {
  int jobs_from = 0;  // 0: the default range
  int jobs_to = 0;
  int orders = 200;   // random orders sampled for the OOM risk
  std::uint64_t seed = 1;
  double within = 0.05;  // "as fast as the best" tolerance of the recommendation
  bool memgate = true;   // also simulate memgate's policy
  bool rows = true;      // fill the table (false: the recommendation only)
  MemgateSimOptions memgate_options;
};

struct PlanRow {
  int jobs = 0;
  double wall_s = 0;
  double objects_per_min = 0;
  Bytes peak = 0;        // recorded order
  Bytes worst_peak = 0;  // over the recorded order and every sampled order
  double oom_risk = 0;   // share of sampled orders whose peak exceeds the capacity
  bool safe = false;     // see above
};

struct MemgateRow {
  double wall_s = 0;
  double objects_per_min = 0;
  Bytes peak = 0;
  bool finished = true;
  int failed = 0;
  AdmissionPolicy admission = AdmissionPolicy::longest_first;  // the policy simulated
  Counters counters;
};

struct PlanResult {
  Machine machine;
  int job_count = 0;
  int jobs_from = 1, jobs_to = 1;
  int orders = 0;
  std::vector<PlanRow> rows;  // the rows to show, by N
  std::optional<MemgateRow> memgate;
  std::optional<int> recommended;
  int safe_up_to = 0;         // the largest safe N (0: none in the range)
  double best_safe_wall_s = 0;
  std::string largest_job;    // the job with the highest peak, and that peak
  Bytes largest_peak = 0;
};

PlanResult make_plan(const std::vector<PlanJob>& jobs, const Machine& machine, const PlanOptions& options = {});

// The random orders make_plan samples: `count` permutations of 0..n-1
// from a seeded Fisher-Yates shuffle (its own generator, so they are the
// same on every platform).
std::vector<std::vector<int>> random_orders(int n, int count, std::uint64_t seed);

// The sum of the `n` largest job peaks: no order of -j n can exceed it.
Bytes largest_peaks_sum(const std::vector<PlanJob>& jobs, int n);

}  // namespace memgate::plan
