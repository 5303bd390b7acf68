// What the envelope buys in plan's simulator (the same Governor as `memgate
// run`): the measured flash-attn kernels of one arch (clean runs, each its
// own profile, CPU time and wall time) on a machine of CORES cores and
// BUDGET GiB, under each admission policy, first on the step older records
// make (peak_over_frac and after_peak: format version 1), then on each
// job's envelope. Against the lower bound max(ΣCPU / cores, Σ∫m(t)dt / budget,
// longest job). Usage: bench_envelope_sim [FIXTURES_DIR [CORES [BUDGET_GIB [TARGETS [FILES]]]]]
// (TARGETS: sm80, sm90, ... or any: every clean single-target job, as
// bench/run's flash-real workload replays them; FILES: only these kernels,
// comma-separated profile names, such as bench/real-kernels' four)
#include <fmt/core.h>

#include <algorithm>
#include <string>

#include "plan/jobs_csv.hpp"
#include "plan/simulate.hpp"
#include "plan/workload.hpp"
#include "util/text.hpp"

using namespace memgate;
using namespace memgate::plan;

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "tests/fixtures/flash-attn";
  Machine m;
  m.cores = argc > 2 ? std::max(1, std::stoi(argv[2])) : 2;
  m.capacity = static_cast<Bytes>((argc > 3 ? std::stod(argv[3]) : 8.0) * static_cast<double>(GiB));
  m.reserve = 0;
  const std::string targets = argc > 4 ? argv[4] : "sm80";
  std::vector<std::string> only;
  if (argc > 5)
    for (auto f : split(argv[5], ',')) only.emplace_back(f);
  auto rows = read_jobs_csv(dir + "/flash-attn-nvcc-jobs.csv");
  if (!rows) {
    fmt::print(stderr, "{}\n", rows.error());
    return 1;
  }
  fmt::print("{:<14} {:<9} {:>5} {:>9} {:>9} {:>7} {:>9} {:>12} {:>4} {:>5}\n", "admission", "curve", "jobs", "wall_s",
             "bound_s", "ratio", "peak_GiB", "released", "oom", "timed");
  for (const AdmissionPolicy policy : {AdmissionPolicy::longest_first, AdmissionPolicy::packing})
  for (const bool envelope : {false, true}) {
    std::vector<PlanJob> jobs;
    double cpu = 0, mem_s = 0, longest = 0;
    for (const auto& r : *rows) {
      if ((targets != "any" && r.targets != targets) || r.contended || r.samples.empty()) continue;
      if (!only.empty() && std::find(only.begin(), only.end(), r.profile) == only.end()) continue;
      PlanJob j = measured_job(r);
      normalize(j);
      if (!envelope) j.predicted.envelope = {};
      cpu += j.cpu_s;
      longest = std::max(longest, j.work_s);
      for (int k = 0; k < 1000; ++k)
        mem_s += static_cast<double>(memory_at(j.profile, (k + 0.5) / 1000)) * j.work_s / 1000;
      jobs.push_back(std::move(j));
    }
    if (jobs.empty()) {
      fmt::print(stderr, "no clean {} rows with profiles in {}\n", targets, dir);
      return 1;
    }
    MemgateSimOptions o;
    o.admission = policy;
    const MemgateRun run = simulate_memgate(jobs, m, o);
    const double bound = std::max({cpu / m.cores, mem_s / static_cast<double>(m.budget()), longest});
    fmt::print("{:<14} {:<9} {:>5} {:>9.1f} {:>9.1f} {:>6.3f}x {:>9.2f} {:>8.1f}GiBs {:>4} {:>5}\n", name(policy),
               envelope ? "envelope" : "step", jobs.size(), run.wall_s, bound, run.wall_s / bound, static_cast<double>(run.peak) / GiB,
               static_cast<double>(get(run.counters, Counter::released_mib_s)) / 1024.0,
               get(run.counters, Counter::oom_killed), get(run.counters, Counter::timed_starts));
    if (!only.empty())  // a few jobs: when each attempt ran
      for (const Trace& tr : run.traces)
        if (!tr.path.empty())
          fmt::print("    {:7.1f} {:7.1f}  {}\n", tr.path.front().t, tr.path.back().t, jobs[tr.job].name);
  }
  return 0;
}
