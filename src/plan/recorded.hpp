// A recorded build (history) as jobs for the simulation.
//
// Idle-machine durations. A recorded wall time was itself measured under
// some CPU contention: the build ran on `cores` cores (BuildRecord::slots,
// which defaults to the usable cores) with the recorded jobs overlapping
// as their start and end times say. The estimate inverts the simulator's
// own CPU model (simulate.hpp) over that recorded overlap: with a guess W
// of each job's idle-machine duration, its CPU fraction f = cpu_s /
// (threads * W) and the recorded schedule give the share s(t) it got at
// every moment; the work it did in its window is the integral of
// 1 / ((1 - f) + f / s(t)) over the window, which is the new W. A longer
// W means a smaller f, less demand and a larger share, hence more work:
// the rounds grow W monotonically from cpu_s / threads (the job computes
// all the time) to the first W that explains the record, and stop there.
// That is the most CPU-bound reading of the record, which is what
// compilers are: 4 jobs of 10 CPU-s that took 20 s together on 2 cores
// are read as 10 s jobs slowed twofold, not as 20 s jobs half asleep
// (both explain the record). Re-simulating the recorded build therefore
// gives back its recorded wall times. Time a job spent frozen is taken
// out of its window.
//
// A loaded machine. The cores are those the build had to itself: its
// slots less the CPU others used beside it (Counter::other_cpu_ms over the
// build's wall time). A job that used at least 60% of the CPU the first
// round (every job computing) offers it is read as computing all the time
// and kept so: otherwise, on a machine others kept busy, a job that got a
// little more than it used is read as waiting, which frees CPU for the
// others, which then look as if they waited too, and a CPU-bound build is
// read as a sleeping one. Without that, 2 compiles sharing 2 cores with a CPU
// burner (0.87 CPU-s in 2.2 s each) read as jobs that wait 60% of the time,
// and plan promised -j8 a speed-up no 2-core machine can give.
//
// Memory. The last attempt's recorded profile, mapped to progress by its
// duration; a job without one gets a profile made from its peak, the time
// of its peak, peak_over_frac and after_peak_bytes (workload.hpp).
//
// Predictions (for the memgate policy) are the recorded figures, as a warm
// run's history would have them: peak, wall, cpu, peak_over_frac and
// after_peak.
#pragma once

#include <vector>

#include "core/job.hpp"
#include "plan/workload.hpp"

namespace memgate::plan {

// `cores` overrides the recorded build's core count (0: BuildRecord::cores,
// else BuildRecord::slots for a build recorded without its cores, or 1 if
// that is unknown). Jobs come in submit order.
std::vector<PlanJob> jobs_from_build(const BuildRecord& build, int cores = 0);

// The cores the recorded build had to itself (see above): `cores` (or its
// slots) less the average CPU others used while it ran, at least 5% of it.
double cores_left_to_build(const BuildRecord& build, int cores = 0);

// The recorded attempt of a job: its last one, without the time frozen.
struct RecordedWindow {
  double start_s = 0, end_s = 0;
  double frozen_s = 0;
};
RecordedWindow recorded_window(const JobRecord& job);

// The estimate above, for jobs with these windows, CPU times and threads.
std::vector<double> idle_durations(const std::vector<RecordedWindow>& windows, const std::vector<double>& cpu_s,
                                   const std::vector<int>& threads, double cores);

}  // namespace memgate::plan
