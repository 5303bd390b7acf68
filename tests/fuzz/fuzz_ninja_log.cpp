// The .ninja_log reader (src/plan/ninja_log.hpp, `memgate plan
// --ninja-log`): parse_ninja_log, then the log as a workload, matched
// against a small recorded history. Every job must come out usable by
// the simulator: finite, non-negative work, a profile from p = 0 to 1.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "fuzz_input.hpp"
#include "plan/ninja_log.hpp"

using namespace memgate;
using namespace memgate::plan;

namespace {

std::vector<JobRecord> recorded_history() {
  JobRecord j;
  j.key.tool = "c++";
  j.key.identity = "c++:compile:src/a.cpp->obj/a.o";
  j.key.klass = "c++:compile";
  j.start_s = 1;
  j.end_s = 5;
  j.cpu_s = 3.5;
  j.peak_bytes = 300 * MiB;
  j.t_peak_s = 1;
  j.peak_over_frac = 0.4;
  j.after_peak_bytes = 100 * MiB;
  j.profile = {{0, 10 * MiB}, {1, 300 * MiB}, {4, 100 * MiB}};
  return {j};
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::vector<JobRecord> history = recorded_history();
  auto edges = parse_ninja_log(fuzz::as_text(data, size));
  if (!edges.ok()) return 0;
  for (const NinjaEdge& e : *edges) {
    FUZZ_CHECK(!e.outputs.empty());
    FUZZ_CHECK(e.end_s >= e.start_s);
    (void)tool_for_output(e.outputs.front());
  }
  int matched = 0;
  std::vector<PlanJob> jobs = jobs_from_ninja_log(*edges, history, 4, &matched);
  FUZZ_CHECK(jobs.size() == edges->size());
  FUZZ_CHECK(matched >= 0 && static_cast<std::size_t>(matched) <= edges->size());
  for (const PlanJob& j : jobs) {
    FUZZ_CHECK(std::isfinite(j.work_s) && j.work_s >= 0);
    FUZZ_CHECK(std::isfinite(j.cpu_s) && j.cpu_s >= 0);
    FUZZ_CHECK(j.threads >= 1);
    FUZZ_CHECK(j.peak >= 0);
  }
  return 0;
}
