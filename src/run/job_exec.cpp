#include "run/job_exec.hpp"

#include <signal.h>

#include <algorithm>

#include "platform/proc.hpp"
#include "util/clock.hpp"
#include "util/log.hpp"

namespace memgate {

JobExec::JobExec(std::shared_ptr<JobCgroups> cgroups, std::optional<platform::Cgroup> home, int job_id,
                 std::shared_ptr<platform::ProcSnapshot> procs)
    : cgroups_(std::move(cgroups)), home_(std::move(home)), job_id_(job_id), procs_(std::move(procs)) {}

const std::vector<platform::ProcInfo>& JobExec::snapshot(std::vector<platform::ProcInfo>& own) const {
  return procs_ ? procs_->all() : (own = platform::read_all_processes());
}

JobExec::~JobExec() { end_attempt(); }

// One fresh cgroup per attempt: its peak and OOM counters then belong to
// that attempt alone (v2 cannot reset memory.peak through a plain handle).
// It was made ahead, while the loop was idle (JobCgroups).
std::vector<std::string> JobExec::prepare_attempt() {
  end_attempt();
  ++attempt_;
  child_ = 0;
  joined_ = true;
  proc_peak_ = 0;
  slow_ = {};
  slow_read_s_ = -1;
  cpu_read_s_ = -1;
  if (!cgroups_) return {};
  auto cg = cgroups_->take();
  if (!cg) {
    log::debug("job {}: no cgroup ({}); measuring from /proc", job_id_, cg.error());
    return {};
  }
  cg_ = *cg;
  log::debug("job {} attempt {}: cgroup {}", job_id_, attempt_, cg_->memory_dir());
  std::vector<std::string> dirs{cg_->memory_dir()};
  if (!cg_->freezer_dir().empty() && cg_->freezer_dir() != cg_->memory_dir()) dirs.push_back(cg_->freezer_dir());
  return dirs;
}

bool JobExec::set_child(pid_t pid) {
  child_ = pid;
  joined_ = true;
  if (!cg_ || pid <= 0) return true;
  // The wrapper joins the job's own cgroup, so one read says so; the
  // whole tree is walked only when it is not there.
  auto members = cg_->processes();
  if (std::find(members.begin(), members.end(), pid) != members.end()) return true;
  members = cg_->all_processes();
  if (std::find(members.begin(), members.end(), pid) != members.end()) return true;
  // Gone already, or never there: only a live process outside says which.
  if (::kill(pid, 0) != 0) return true;
  joined_ = false;
  log::warn("job {}: its program (pid {}) is not in its cgroup; measuring it from /proc", job_id_, pid);
  return false;
}

// A joined cgroup is the whole truth: an empty one means the job's
// processes have ended (the wrapper has yet to say so). Scanning /proc for
// them then cost a read of every process per such job per tick, which at
// 2000 jobs was most of memgate's own CPU.
std::vector<pid_t> JobExec::tree() const {
  if (cg_ && joined_) return cg_->all_processes();
  std::vector<platform::ProcInfo> own;
  if (child_ > 0) return platform::descendants(child_, snapshot(own));
  return {};
}

// Signals want every process, one forked a moment ago too: never the
// shared snapshot.
std::vector<pid_t> JobExec::fresh_tree() const {
  if (cg_ && joined_) return cg_->all_processes();
  if (child_ > 0) return platform::process_tree(child_);
  return {};
}

double JobExec::cgroup_cpu_s() const {
  if (cgroups_->cpu_accounted())
    if (auto c = cg_->cpu_s()) return *c;
  // v1 without cpuacct beside memory: the members' own stat files, of
  // the job's cgroup only (not listing its children every second: a job
  // that nests cgroups of its own reads as slower, so it keeps its
  // reservation longer, the safe side).
  std::uint64_t ticks = 0;
  for (pid_t p : cg_->processes())
    if (auto st = platform::read_proc_stat(p)) ticks += st->utime + st->stime + st->cutime + st->cstime;
  return platform::ticks_to_seconds(ticks);
}

// One read of memory in use per tick per job; the slow reads (the peak,
// and the CPU time, which on v1 without cpuacct means every member's stat
// file) once a second, the jobs spread over eight phases so that a wave
// of jobs started together does not read them all in the same tick.
JobMemory JobExec::sample(Sampling how) {
  JobMemory m;
  if (cg_ && joined_) {
    if (auto u = cg_->usage()) {
      const double t = monotonic_s();
      if (how == Sampling::exact || (slow_read_s_ >= 0 && t - slow_read_s_ >= slow_sample_every(how))) {
        slow_.peak = std::max(slow_.peak, cg_->peak().value_or(0));
        if (how == Sampling::quick || how == Sampling::exact || t - cpu_read_s_ >= kProfileCpu_s) {
          slow_.cpu_s = cgroup_cpu_s();
          cpu_read_s_ = t;
          m.cpu_fresh = true;
        }
        slow_read_s_ = t;
      } else if (slow_read_s_ < 0) {
        // The first sample sets the phase and reads nothing slow: a wave
        // of hundreds of jobs granted in one step is not read at once.
        slow_read_s_ = t - slow_sample_every(how) * static_cast<double>(job_id_ % 8) / 8.0;
        cpu_read_s_ = t;
      }
      slow_.peak = std::max(slow_.peak, *u);
      m.current = *u;
      m.peak = slow_.peak;
      m.cpu_s = slow_.cpu_s;
      return m;
    }
  }
  if (child_ > 0) {
    std::vector<platform::ProcInfo> own;
    const auto& all = snapshot(own);
    m.current = platform::tree_rss(child_, all);
    m.cpu_s = platform::ticks_to_seconds(platform::tree_cpu_ticks(child_, all));
    m.cpu_fresh = true;
    proc_peak_ = std::max(proc_peak_, m.current);
    m.peak = proc_peak_;
  }
  return m;
}

bool JobExec::freeze(bool frozen) {
  if (cg_ && joined_ && cg_->can_freeze()) {
    if (cg_->freeze(frozen)) return true;
  }
  std::vector<pid_t> pids = fresh_tree();
  if (pids.empty()) return false;
  for (pid_t p : pids) ::kill(p, frozen ? SIGSTOP : SIGCONT);
  return true;
}

void JobExec::kill() {
  if (cg_ && joined_ && cg_->kill_all()) return;
  for (pid_t p : fresh_tree()) ::kill(p, SIGKILL);
  // A SIGSTOPped tree must be continued to die promptly.
  for (pid_t p : fresh_tree()) ::kill(p, SIGCONT);
}

// The attempt's cgroup was made for it (JobCgroups) and never used
// before: every OOM kill it counts is this attempt's.
bool JobExec::oom_killed() const {
  if (!cg_) return false;
  return cg_->oom_kills().value_or(0) > 0;
}

// The attempt's program has ended (the wrapper reaped it): nothing of it
// is left to measure, and its pid may name another process soon. Its
// cgroup, emptied, is removed later, outside the exit (JobCgroups::tidy).
void JobExec::end_attempt() {
  child_ = 0;
  if (!cg_) return;
  for (pid_t p : cg_->all_processes()) {
    if (!home_ || !home_->add_process(p)) ::kill(p, SIGKILL);
  }
  cgroups_->retire(std::move(*cg_));
  cg_.reset();
}

}  // namespace memgate
