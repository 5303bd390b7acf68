#include "run/pace.hpp"

#include <algorithm>

namespace memgate {

bool Pace::take_scheduled() {
  const bool due = scheduled_;
  scheduled_ = false;
  return due;
}

int Pace::poll_timeout_ms(double now) const {
  if (scheduled_) return 0;
  return static_cast<int>(std::max(0.0, next_tick_ - now) * 1000.0) + 1;
}

void Pace::ticked(double t, Bytes used, Bytes limit) {
  const bool tight = limit > 0 && static_cast<double>(used) >= kFastTickAbove * static_cast<double>(limit);
  next_tick_ = t + (tight ? kFastTick_s : kTick_s);
}

void Pace::job_arrived(double now, double pred_wall_s) {
  if (!admitted_any_) {
    // The build's first burst, whatever is known of it: until it has
    // been quiet for kGatherMax_s, at most kFirstBurstMax_s after its
    // first job (the tick, which admits, waits for it).
    if (first_arrival_ < 0) first_arrival_ = now;
    next_tick_ = std::min(now + kGatherMax_s, first_arrival_ + kFirstBurstMax_s);
    return;
  }
  const double gather = std::min(kGatherMax_s, kGatherShare * pred_wall_s);
  if (gather >= kGatherMin_s) next_tick_ = std::min(next_tick_, now + gather);  // the tick admits it
  else schedule();
}

}  // namespace memgate
