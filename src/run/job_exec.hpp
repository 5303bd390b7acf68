// The OS side of one job: its own cgroup (or, where none can be made, its
// /proc process tree), measuring it, freezing it, killing it. The governor
// decides; this carries out.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/job.hpp"
#include "platform/cgroup.hpp"
#include "platform/proc.hpp"
#include "run/job_cgroups.hpp"

namespace memgate {

struct JobMemory {
  Bytes current = 0;
  Bytes peak = 0;  // this attempt
  // CPU time of the attempt's tree so far: the job cgroup's CPU accounting
  // (v2 cpu.stat, v1 cpuacct.usage where mounted with memory), else /proc
  // (utime + stime and waited-for children of its processes); < 0: none.
  double cpu_s = -1;
  // cpu_s was read by this sample (not kept from an earlier one): the
  // job's profile takes it as a point of its CPU clock.
  bool cpu_fresh = false;
};

// `quick`, every tick: the memory in use now; the peak and the CPU time,
// which the kernel keeps as a high-water mark and a sum (nothing is lost
// by reading them later), at most every kSlowSample_s, else as last read.
// `memory`: as quick, without the CPU time, for a job whose reservation
// does not follow its progress (Governor::wants_cpu): on v1 without
// cpuacct the CPU time is every member's stat file, a tenth of memgate's
// CPU at 512 jobs. `sparse`: as memory, the peak at most every
// kSparseSample_s, for such a job while the build uses under half its
// limit (LiveJobs then reads each job about once a second, so every
// sample read the peak too: a third of the cgroup files memgate opened
// at 512 sleeping jobs). A spike between two reads of the memory in use
// is then seen up to 4 s later, not 1 s (the high-water mark keeps it),
// and exactly at the job's end. `exact`: everything now (when the job
// ends). `memory` and `sparse` still read the CPU time every
// kProfileCpu_s, with a peak: the job's profile learns its envelope on
// its CPU clock (a run slowed for a while by contention or a freeze
// otherwise shows its peak later or earlier than its progress had it).
enum class Sampling { quick, memory, sparse, exact };
inline constexpr double kSlowSample_s = 1.0;
inline constexpr double kSparseSample_s = 4.0;
inline constexpr double kProfileCpu_s = 4.0;
// How long after its last slow read a job's next sample reads the peak
// (and the CPU time) again.
constexpr double slow_sample_every(Sampling how) { return how == Sampling::sparse ? kSparseSample_s : kSlowSample_s; }

// What the runner does with a job's OS side; JobExec is the real one,
// tests drive the runner's steps with fakes (run/runner_ports.hpp).
class JobControl {
 public:
  virtual ~JobControl() = default;
  virtual std::vector<std::string> prepare_attempt() = 0;
  virtual bool set_child(pid_t pid) = 0;
  virtual JobMemory sample(Sampling how) = 0;
  virtual bool freeze(bool frozen) = 0;
  virtual void kill() = 0;
  virtual bool oom_killed() const = 0;
  virtual void end_attempt() = 0;
  virtual bool has_cgroup() const = 0;
  virtual std::vector<pid_t> tree() const = 0;
};

class JobExec final : public JobControl {
 public:
  // `cgroups`: where each attempt's cgroup comes from and goes back to;
  // null when cgroups are unavailable and jobs are measured from /proc.
  // `home`: where processes a job leaves behind (a daemon it started, such
  // as a compiler cache server) are moved when the attempt ends, so they
  // live on. `procs`: the /proc snapshot the jobs measured from /proc
  // share (null: each reads its own).
  JobExec(std::shared_ptr<JobCgroups> cgroups, std::optional<platform::Cgroup> home, int job_id,
          std::shared_ptr<platform::ProcSnapshot> procs = nullptr);
  ~JobExec() override;
  JobExec(const JobExec&) = delete;
  JobExec& operator=(const JobExec&) = delete;

  // Before a grant: a fresh measuring scope for the attempt. Returns the
  // cgroup dirs the program must join (empty: /proc fallback).
  std::vector<std::string> prepare_attempt() override;
  // The program's pid, as the wrapper reported it (already checked to lie
  // below the wrapper). A child that is not in its attempt's cgroup could
  // not join it: the attempt is then measured, frozen and killed through
  // its /proc tree, never taken for a job that used nothing. Returns false
  // in that case.
  bool set_child(pid_t pid) override;

  JobMemory sample(Sampling how) override;
  // Freeze or thaw the job's tree: the cgroup freezer, else SIGSTOP/SIGCONT.
  bool freeze(bool frozen) override;
  // SIGKILL the job's whole tree (not the wrapper).
  void kill() override;
  // The kernel OOM killer struck this attempt.
  bool oom_killed() const override;
  void end_attempt() override;
  bool has_cgroup() const override { return cg_.has_value() && joined_; }
  // The job's processes: its cgroup's (none once it is empty: the job's
  // processes have ended), else the child's process tree.
  std::vector<pid_t> tree() const override;

 private:
  // The shared snapshot, else a fresh read kept in `own`.
  const std::vector<platform::ProcInfo>& snapshot(std::vector<platform::ProcInfo>& own) const;
  std::vector<pid_t> fresh_tree() const;
  double cgroup_cpu_s() const;

  std::shared_ptr<JobCgroups> cgroups_;
  std::optional<platform::Cgroup> home_;
  std::optional<platform::Cgroup> cg_;
  int job_id_;
  std::shared_ptr<platform::ProcSnapshot> procs_;
  int attempt_ = 0;
  pid_t child_ = 0;
  Bytes proc_peak_ = 0;  // /proc fallback: the highest sample
  JobMemory slow_;         // the peak and CPU time as last read
  double slow_read_s_ = -1;
  double cpu_read_s_ = -1;
  bool joined_ = true;   // the child is in cg_
};

}  // namespace memgate
