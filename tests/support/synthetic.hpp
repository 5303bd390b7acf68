// A made-up but realistic finished build, for the report's tests, its
// scale bench and the browser test that needs no real run: jobs of widely
// different memory and length scheduled on a fixed number of slots, a
// few requeued or OOM-killed and rerun, profiles, a memory series and the
// governor's events. Deterministic for a given seed.
#pragma once

#include <cstdint>

#include "core/job.hpp"

namespace memgate {

struct SyntheticOptions {
  int jobs = 100;
  int slots = 8;
  std::uint32_t seed = 1;
  int memory_points = 3000;   // samples in BuildRecord::memory
  double retry_share = 0.02;  // jobs with an earlier, killed attempt
};

BuildRecord make_synthetic_build(const SyntheticOptions& options);

}  // namespace memgate
