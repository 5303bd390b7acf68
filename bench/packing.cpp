// Issue 13, "packing, not just longest-first": the governor's admission
// policies against each other in plan's simulator (the real Governor in
// simulated time, as `memgate plan` runs it), on the measured flash-attn
// nvcc jobs, warm (every job predicted from its own measured profile).
//
//   bench_packing [JOBS_CSV [PROFILES_DIR]]
//
// JOBS_CSV defaults to tests/fixtures/flash-attn/flash-attn-nvcc-jobs.csv
// (a copy of shared/data's). Two workloads, each on 16 cores / 48 GiB and
// 128 cores / 432 GiB (the seed's machine) with the default reserve:
//   - the 25 measured jobs, each row one job as measured (plan's
//     measured_job: contended rows timed by their CPU);
//   - the 96-file flash-attn 2.8 build plan models from them
//     (`memgate plan --jobs-csv`), with --threads 1 and one target, and
//     with flash-attn's defaults on CUDA 13 (--threads 4, six targets).
// For each: makespan, peak, memgate's actions, and two lower bounds, the
// CPU bound (sum of CPU / cores) and the longest job.
#include <fmt/core.h>

#include <algorithm>
#include <string>
#include <vector>

#include "plan/jobs_csv.hpp"
#include "plan/machine.hpp"
#include "plan/simulate.hpp"
#include "util/size.hpp"

using namespace memgate;
using namespace memgate::plan;

namespace {

void compare(const std::string& title, const std::vector<PlanJob>& jobs) {
  double cpu = 0, longest = 0;
  for (const PlanJob& j : jobs) {
    cpu += j.cpu_s;
    longest = std::max(longest, j.work_s);
  }
  fmt::print("\n{} ({} jobs)\n\n", title, jobs.size());
  fmt::print("| machine | policy | makespan | peak | frozen | requeued | OOM kills | CPU bound | longest job |\n");
  fmt::print("|---|---|---:|---:|---:|---:|---:|---:|---:|\n");
  struct Size {
    int cores;
    Bytes memory;
  };
  for (Size s : {Size{16, 48 * GiB}, Size{128, 432 * GiB}}) {
    Machine m = machine_with(s.cores, s.memory);
    for (AdmissionPolicy p : {AdmissionPolicy::longest_first, AdmissionPolicy::packing}) {
      MemgateSimOptions o;
      o.admission = p;
      MemgateRun r = simulate_memgate(jobs, m, o);
      fmt::print("| {} cores / {} (budget {}) | {} | {:.1f} s{} | {} | {} | {} | {} | {:.1f} s | {:.1f} s |\n", s.cores,
                 format_bytes(s.memory), format_bytes(m.budget()), name(p), r.wall_s,
                 r.finished && r.failed == 0 ? "" : " (FAILED)", format_bytes(r.peak), get(r.counters, Counter::frozen),
                 get(r.counters, Counter::requeued), get(r.counters, Counter::oom_killed), cpu / s.cores, longest);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string csv = argc > 1 ? argv[1] : "tests/fixtures/flash-attn/flash-attn-nvcc-jobs.csv";
  std::string profiles = argc > 2 ? argv[2] : "";
  auto rows = read_jobs_csv(csv, profiles);
  if (!rows) {
    fmt::print(stderr, "{}\n", rows.error());
    return 1;
  }
  std::vector<PlanJob> measured;
  for (const MeasuredRow& r : *rows) measured.push_back(measured_job(r));
  compare(fmt::format("The measured flash-attn nvcc jobs, one per row of {}", csv), measured);
  // flash-attn's own defaults on CUDA 13 (README's plan example): six
  // targets, NVCC_THREADS=4.
  for (NvccShape shape : {NvccShape{1, 1}, NvccShape{4, 6}}) {
    auto model = workload_from_measurements(*rows, shape);
    if (!model) {
      fmt::print(stderr, "{}\n", model.error());
      return 1;
    }
    compare(model->description, model->jobs);
  }
  return 0;
}
