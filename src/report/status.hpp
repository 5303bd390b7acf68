// The live status of a running build, as the runner sees it each tick,
// and the line that shows it on stderr.
#pragma once

#include "util/size.hpp"

namespace memgate {

struct StatusSnapshot {
  double elapsed_s = 0;
  int done = 0;             // jobs finished
  int known_total = 0;      // from the last build of this command in this cwd; 0 = unknown
  int running = 0;          // running and not frozen
  int waiting_memory = 0;   // waiting, held back by memory
  int waiting_cpu = 0;      // waiting, held back by CPU slots only
  int frozen = 0;
  Bytes used = 0;           // build memory now
  Bytes budget = 0;
  double objects_per_min = 0;
  double eta_s = -1;        // < 0: unknown
};

}  // namespace memgate
