// The build's cgroups and what they say (the executor's half of "spawn,
// reap, measure"; the wrapper spawns): memgate-<pid> below memgate's own memory cgroup,
// limited to capacity - reserve so the reserve stays free even from
// processes memgate never gates; a `build` leaf for the build tool; the
// parent of every job cgroup. It also reads what the build and the rest of
// the machine use, and keeps the list of what this run lacks, so a degraded
// run never looks like a normal one.
//
//   <memgate's own cgroup>      memgate itself (outside the limit)
//   └── memgate-<pid>/          limit: capacity - reserve (unless --no-confine)
//       ├── build/              make / ninja / pip and the waiting wrappers
//       └── job-<n>/            one compiler tree each, a fresh one per attempt
//                               (JobExec), made ahead (JobCgroups)
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/capacity.hpp"
#include "governor/governor.hpp"
#include "platform/cgroup.hpp"
#include "platform/cgroup_stale.hpp"
#include "run/job_cgroups.hpp"

namespace memgate {

// One tick's raw readings; nullopt where the source is missing.
struct MemoryReadings {
  Bytes jobs_current = 0;                 // the jobs' own samples, summed
  std::optional<Bytes> build_usage;       // the build cgroup's usage...
  std::optional<Bytes> build_inactive;    // ...and its reclaimable page cache
  std::optional<Bytes> capacity_usage;    // the cgroup that sets the capacity, likewise
  std::optional<Bytes> capacity_inactive;
  std::optional<Bytes> mem_total, mem_available;  // /proc/meminfo
  std::optional<double> psi_full_avg10;
  bool psi_machine_wide = false;          // /proc/pressure/memory, not the build cgroup's
};

// What the governor is shown (pure). Page cache the kernel can drop
// (inactive file pages) does not count as used. The build is its cgroup
// when it has one, else the jobs' samples; "outside" is everything else
// that counts against the capacity: the capacity cgroup's usage, else the
// machine's (MemTotal - MemAvailable), minus the build. Stalls come from
// the build cgroup where the kernel keeps them (v2), else the machine.
MemoryView to_view(const MemoryReadings& r);

class Confinement {
 public:
  // Creates the cgroups; what fails becomes a degraded() reason and a
  // warning, never an error: the build runs regardless. `confine` false
  // (--no-confine) still makes the cgroups, to measure, without a limit.
  static Confinement setup(const Capacity& cap, const Budget& budget, bool confine);
  // No cgroups at all (tests; the caller gives the reason).
  static Confinement none(const std::string& why);

  // The cgroup dirs the build tool joins before exec (empty: it stays in
  // memgate's own cgroup, unconfined).
  std::vector<std::string> build_dirs() const;
  // The job cgroups (null without cgroups), and where a job's leftover
  // daemons are moved (JobExec; nullopt without cgroups).
  const std::shared_ptr<JobCgroups>& job_cgroups() const { return jobs_; }
  const std::optional<platform::Cgroup>& build_leaf() const { return build_leaf_; }

  MemoryReadings read(Bytes jobs_current) const;
  std::optional<Bytes> peak() const;
  // Every process in the build's cgroups.
  std::vector<pid_t> processes() const;
  // ... but those in job cgroups: what may have escaped the gate. It costs
  // a read of the build's few cgroups, not of every running job's.
  std::vector<pid_t> processes_outside_jobs() const;
  void kill_all() const;
  // Processes left in the build cgroup once the build has ended are daemons
  // it started (a compiler cache server, say): not ours to kill. They move
  // to memgate's own cgroup so ours can be removed. Returns how many.
  std::size_t release_leftovers() const;
  // Kills what is left if asked, then removes the cgroups.
  void remove(bool kill_first);
  // Processes the kernel's OOM killer ended in the build leaf since set-up:
  // the build tool or a program memgate did not gate (jobs have their own
  // cgroups and their own count).
  std::int64_t ungated_oom_kills() const;

  // Checks that the confinement still holds: the build's cgroup exists
  // and the build tool (`build_pid`, while it runs) is still inside it,
  // among `outside_jobs` (processes_outside_jobs(), as just read: the
  // build tool never joins a job's cgroup). Losing either mid-run (someone
  // removed the cgroup, the build moved itself out) is warned about once
  // and becomes a degraded() reason.
  void watch(pid_t build_pid, const std::vector<pid_t>& outside_jobs);

  bool confined() const { return confined_; }
  const std::vector<std::string>& degraded() const { return degraded_; }

 private:
  platform::CgroupLayout layout_;
  std::optional<platform::Cgroup> confine_;     // memgate-<pid>: limit, job cgroups below
  platform::OwnerLock owner_;                   // on confine_: this run is alive (cgroup_stale.hpp)
  std::optional<platform::Cgroup> build_leaf_;  // confine_/build: the build tool itself
  std::shared_ptr<JobCgroups> jobs_;            // below confine_
  std::optional<platform::Cgroup> capacity_cg_; // the cgroup whose limit is the capacity
  bool confined_ = false;
  bool lost_ = false;  // watch() found the confinement gone
  std::int64_t leaf_oom_base_ = 0;
  std::vector<std::string> degraded_;
};

}  // namespace memgate
