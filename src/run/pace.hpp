// When the runner's loop measures and decides. Two rhythms: the tick,
// which measures, decides and acts every kTick_s, faster when the build is
// near its limit (a job can grow past the freeze threshold between
// ticks); and admission between ticks, which reuses the tick's last
// measurement so a new job does not wait for the next tick. Admission
// runs once per loop turn, after every message of the turn: a burst of
// hundreds of requests or exits is one step, not one each.
//
// A job predicted to run long waits a moment before admission, 1% of its
// predicted time and at most 50 ms, for the rest of its burst: make and
// ninja start jobs in bursts whose wrappers connect over some
// milliseconds, and longest-first can only choose among the jobs it has
// seen (a warm g++ build started its two short jobs first and then ran its
// two 1 GB tables one after the other, not beside them). Short jobs (no-op
// compiles, anything under 0.5 s) and jobs of unknown length go at once,
// except in the build's first burst: before anything has been admitted,
// admission waits until no job has arrived for 50 ms (at most 0.5 s after
// the first), so that with nothing known the first job is the one the
// build tool started first (ties go by its order, the pid), not the one
// whose wrapper happened to connect first (a cold nvcc build started its
// small kernels before the two big ones the Makefile lists first, and
// finished 1.15x make -j2 instead of 1.01x), and with history,
// longest-first chooses among the whole burst: 17 wrappers that make
// started at once on 2 cores connect over more than 50 ms, and a warm
// flash-real build started a 36 CPU-s backward kernel, the longest of the
// first few, alone, not its two longest forward kernels side by side.
//
// Pure: the loop gives it its clock's readings.
#pragma once

#include "core/job.hpp"

namespace memgate {

class Pace {
 public:
  static constexpr double kTick_s = 0.1;
  static constexpr double kFastTick_s = 0.02;
  static constexpr double kFastTickAbove = 0.85;  // of the effective limit
  static constexpr double kGatherShare = 0.01;
  static constexpr double kGatherMax_s = 0.05;
  static constexpr double kGatherMin_s = 0.005;
  static constexpr double kFirstBurstMax_s = 0.5;

  // Admission runs at the end of this loop turn.
  void schedule() { scheduled_ = true; }
  bool scheduled() const { return scheduled_; }
  // Whether admission is due this turn; from then on it is not.
  bool take_scheduled();
  // How long the loop may wait for events at `now`: until the next tick,
  // or not at all while admission is due.
  int poll_timeout_ms(double now) const;
  bool tick_due(double now) const { return now >= next_tick_; }
  // How long until the next tick (negative: overdue).
  double until_tick(double now) const { return next_tick_ - now; }
  // A tick ran at `t`, and found the build using `used` of its effective
  // limit `limit`.
  void ticked(double t, Bytes used, Bytes limit);
  // A job predicted to run `pred_wall_s` (0: unknown) asked at `now`: the
  // tick comes by the end of its gathering wait, or admission runs this
  // turn.
  void job_arrived(double now, double pred_wall_s);
  // Jobs were admitted: the build's first burst is over.
  void admitted() { admitted_any_ = true; }

 private:
  double next_tick_ = 0;
  bool scheduled_ = false;
  bool admitted_any_ = false;
  double first_arrival_ = -1;
};

}  // namespace memgate
