// The job cgroups below the build's cgroup: made ahead of the grants that
// need them and removed after the attempts that used them, both a little
// at a time while the loop is idle (tidy).
//
// Making a job cgroup is a mkdir in each hierarchy (v1: memory and
// freezer) that takes the kernel's cgroup mutex, which the wrappers
// joining their cgroups hold too; removing one is an rmdir each. Where
// jobs end together (a build of equal files at --jobs 512), every exit and
// every grant of the wave did that in the loop at once: at --jobs 1024 one
// tick made 2048 directories in 340 ms of CPU. Here a grant takes a ready
// cgroup and an exit hands its cgroup back, so a wave costs the loop
// neither.
//
// Each attempt still gets a cgroup nobody used: its peak and its OOM
// count are that attempt's alone, on v1 and v2 (where memory.peak cannot
// be reset). A ready cgroup is empty; the cgroups held here are below the
// build's cgroup, so memgate's own clean-up, its death guard and the next
// run's stale clean-up remove them with it. At most as many are made ahead
// as jobs wait, and never more than the slots, since a wave of exits frees
// no more: each is an empty memory cgroup's worth of kernel memory.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string_view>

#include "platform/cgroup.hpp"
#include "util/clock.hpp"
#include "util/result.hpp"

namespace memgate {

// The name every job cgroup starts with ("job-<n>").
inline constexpr std::string_view kJobCgroupPrefix = "job-";

class JobCgroups {
 public:
  using Clock = double (*)();
  // Job cgroups are made below `parent`, named job-<n>.
  explicit JobCgroups(platform::Cgroup parent, Clock clock = monotonic_s);

  // A fresh cgroup for one attempt: a ready one, else one made now.
  Result<platform::Cgroup> take();
  // An attempt is over and its cgroup emptied: it is removed by a later
  // tidy(), tried again while the kernel is still tearing it down.
  void retire(platform::Cgroup cg);

  // Idle work: removes retired cgroups, then makes cgroups until `want`
  // are ready, for about `budget_s` (at least one step when any is due).
  // Returns whether work is due still; a removal or a mkdir that failed is
  // tried again kRetry_s later, not at once.
  bool tidy(std::size_t want, double budget_s);

  // Whether a job cgroup counts its own CPU time (Cgroup::cpu_s: v2, or
  // v1 with cpuacct beside memory), as the parent showed at the start.
  bool cpu_accounted() const { return cpu_accounted_; }
  std::size_t ready() const { return ready_.size(); }
  std::size_t retired() const { return retired_.size(); }

  static constexpr double kRetry_s = 0.2;

 private:
  Result<platform::Cgroup> make();
  bool due(std::size_t want, double now) const;

  struct Spent {
    platform::Cgroup cg;
    double retry_at = 0;
  };
  platform::Cgroup parent_;
  Clock clock_;
  std::uint64_t made_ = 0;  // names: job-<made_>
  std::deque<platform::Cgroup> ready_;
  std::deque<Spent> retired_;
  double make_again_at_ = 0;  // after a failed mkdir
  bool cpu_accounted_ = false;
};

}  // namespace memgate
