// One build in numbers, computed once (summarize_build) for every place
// that shows a build: `memgate history` (its list is these rows, stored
// with the build), `history --build`, the end-of-build summary and the
// HTML report. And one rule for when memgate acted.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/job.hpp"

namespace memgate {

struct BuildSummary {
  std::int64_t id = 0;
  std::string cwd;
  std::string command;
  double start_unix = 0;
  double wall_s = 0;     // a record without wall-clock times: its last job's end
  int exit_status = 0;
  Bytes peak_bytes = 0;  // the recorded peak, or the highest memory sample where that is higher
  Bytes budget = 0;
  Bytes capacity = 0;
  int job_count = 0;     // the jobs recorded, else the `jobs` counter
  int failed = 0;        // jobs whose final status was non-zero
  double wait_s = 0;     // summed time jobs waited for memory: the wait_memory_ms counter, else their waits
  double frozen_s = 0;   // summed time jobs were frozen: the frozen_ms counter, else their own
};

BuildSummary summarize_build(const BuildRecord& build);

// memgate acted when it did more than admit jobs: it froze, requeued,
// reran or ran a job alone (OOM kills count: it reran them). These are
// those counters, in the order they are shown.
const std::vector<Counter>& action_counters();
bool memgate_acted(const Counters& counters);

}  // namespace memgate
