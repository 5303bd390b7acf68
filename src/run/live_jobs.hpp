// The jobs the runner is connected to, one per wrapper connection, and
// what the tick measures of them: each job's OS side (JobControl), the
// current attempt's memory curve, and when its memory is read next. The
// governor decides; this only keeps the runner's side of each job and
// reads it when asked. No I/O of its own: a job's memory comes through
// its JobControl, so tests hand it fakes.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <vector>

#include "core/job.hpp"
#include "governor/governor.hpp"
#include "run/job_exec.hpp"
#include "run/job_server.hpp"
#include "wrap/protocol.hpp"

namespace memgate {

// The runner's side of one wrapper connection, which is one job.
struct ConnectedJob {
  ConnId conn = 0;
  JobId id = 0;
  RequestMsg req;
  std::unique_ptr<JobControl> exec;
  bool killed_by_us = false;  // this attempt
  // CPU the attempt's processes had used when memgate killed them: the
  // wrapper's rusage misses a compiler proper killed beside its driver
  // (gcc's cc1plus is never waited for), and a requeue's cost is this.
  double cpu_at_kill_s = 0;
  bool done = false;          // the final verdict was sent
  double attempt_start = 0;
  std::vector<MemSample> profile;  // this attempt, t since attempt start
  Bytes current = 0;
  double next_sample_t = -1;  // when its memory is read next with room to spare (LiveJobs::sample)

  // A granted attempt starts at `now` with an empty curve.
  void begin_attempt(double now);
  // The attempt ended: its OS side and what memgate did to it are reset.
  void end_attempt();
  // Its memory at `t` (since the build started), and its CPU time if
  // this sample read it (< 0: not), join the curve, which is thinned to
  // half once it holds kMaxSamples (the CPU clock filled in first, so that
  // thinning keeps it).
  void add_sample(double t, Bytes bytes, double cpu_s = -1);
  static constexpr std::size_t kMaxSamples = 4096;
};

class LiveJobs {
 public:
  ConnectedJob* find(ConnId conn);
  ConnectedJob* by_job(JobId id);
  // A new job, found by its connection and by its id from now on.
  void add(ConnectedJob job);
  void erase(ConnId conn);
  std::size_t size() const { return by_conn_.size(); }
  bool empty() const { return by_conn_.empty(); }
  auto begin() const { return by_conn_.begin(); }
  auto end() const { return by_conn_.end(); }

  // Reads the memory of the jobs the governor has active and tells it. A
  // job's memory is read every tick while the build uses more than
  // kDenseAbove of its effective limit; else at most every kRoomySample_s.
  // Pressure is seen at once whatever this skips: the build's own total is
  // read every tick, and a peak loses nothing, the kernel keeps it
  // (JobExec::sample). So with room to spare, 512 running jobs cost a
  // fifth of the reads; a job's recorded curve then has a point every
  // kRoomySample_s or so (its peak exact). Each call visits only its share
  // of the jobs (kRoomyShare), in turn from where the last one stopped: a
  // wave of jobs granted together, or a tick that came late (the build's
  // processes had the cores), never makes one tick read them all (per-job
  // due times alone did: one late tick found every job due, and from then
  // on they were all due in the same tick). And within kRoomyBudget_s by
  // `clock`: where reads are slow (the kernel busy with a wave of jobs
  // joining and leaving their cgroups), the next tick goes on from there.
  void sample(Governor& gov, const MemoryView& view, double t, const std::function<double()>& clock = {});
  static constexpr double kDenseAbove = 0.5;
  // Once a second: at 2000 jobs, 512 running, twice a second was a sixth
  // of memgate's CPU (docs/scale.md). This far from the limit a reading
  // still moves the job's reservation and tells when it is past its peak;
  // either now comes up to half a second later, which at this distance
  // from the limit delays an admission, never risks one. The build's total
  // is still read every tick.
  static constexpr double kRoomySample_s = 1.0;
  static constexpr std::size_t kRoomyShare = 10;  // kRoomySample_s / the tick
  static constexpr double kRoomyBudget_s = 0.004;
  // The memory of these jobs at their last reading.
  Bytes current(const std::vector<JobId>& ids);

 private:
  std::map<ConnId, ConnectedJob> by_conn_;
  std::map<JobId, ConnId> conn_of_;
  JobId cursor_ = -1;  // the job sample() visited last: the next call goes on after it
};

}  // namespace memgate
