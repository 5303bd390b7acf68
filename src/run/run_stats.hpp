// memgate's own cost during one `memgate run`, for bench/scale: with
// MEMGATE_RUN_STATS=FILE the runner writes, at its end, one JSON object
// with its own CPU time and peak RSS (getrusage of memgate alone, not its
// children), every tick's duration (p50, p99, max) on the clock and in
// memgate's own CPU time (on a loaded machine the first also counts the
// time the build's processes had the cores), each ungated scan's likewise
// (a loop turn of its own), and each grant's wait:
// from the wrapper's request, and from the moment the grant became
// possible (the later of the request and the last slot or memory given
// back), which is memgate's own reaction time. Bookkeeping: the runner
// feeds it durations from its clock, and write() alone does I/O.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace memgate {

// The q-quantile (0..1) of `values` by nearest rank; 0 for none.
double quantile(std::vector<double> values, double q);

class RunStats {
 public:
  void tick(double seconds, double cpu_seconds) {
    ticks_.push_back(seconds);
    tick_cpus_.push_back(cpu_seconds);
  }
  // One ungated scan (Runner::scan_ungated), in a loop turn of its own.
  void scan(double seconds, double cpu_seconds) {
    scans_.push_back(seconds);
    scan_cpus_.push_back(cpu_seconds);
  }
  void loop_turn() { ++turns_; }
  // A job gave back its slot and memory at `t`.
  void released(double t) { last_release_ = t; }
  // A job was granted at `now`, requested at `requested`; the reaction is
  // counted from the later of that and the last release.
  void grant(double requested, double now);

  // The JSON object: counts, and durations in milliseconds.
  std::string json(double cpu_s, std::int64_t maxrss_kib, double wall_s, std::int64_t jobs) const;
  // With MEMGATE_RUN_STATS=FILE, the JSON with memgate's own CPU time and
  // peak RSS (getrusage) to FILE, where the user's other files go; a
  // failure is a warning.
  void write(double wall_s, std::int64_t jobs) const;

 private:
  std::vector<double> ticks_;
  std::vector<double> tick_cpus_;
  std::vector<double> scans_, scan_cpus_;
  std::vector<double> waits_;
  std::vector<double> reactions_;
  std::uint64_t turns_ = 0;
  double last_release_ = 0;
};

}  // namespace memgate
