// What a run may use of the machine: its capacity and the budget left
// after the reserve and --memory (core/capacity.hpp), and the CPU slots
// (--jobs, else the usable cores); and the governor's configuration made
// from them and the run's options, engines included.
#pragma once

#include "core/capacity.hpp"
#include "governor/governor.hpp"
#include "run/runner.hpp"
#include "util/result.hpp"

namespace memgate {

struct RunMachine {
  Capacity cap;
  Budget budget;
  int slots = 1;

  // An error is one the user made: a budget that cannot be, or --jobs
  // below 1.
  static Result<RunMachine> detect(const RunOptions& opt);
};

GovernorConfig governor_config(const RunMachine& machine, const RunOptions& opt);

}  // namespace memgate
