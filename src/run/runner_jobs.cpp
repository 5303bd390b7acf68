// One job's life in the runner: request -> (wait) -> grant -> started ->
// exit -> verdict, and the tick that measures, decides and acts.
#include <sys/wait.h>
#include <signal.h>

#include <algorithm>

#include <fmt/core.h>

#include "predict/profile.hpp"
#include "run/build_process.hpp"
#include "run/runner_impl.hpp"
#include "util/clock.hpp"
#include "util/log.hpp"

namespace memgate {

namespace {
constexpr size_t kMaxLiveSamples = 4096;  // per attempt, before thinning
// The tick: measure, decide, act. Faster when the build is near its
// limit, where a job can grow past the freeze threshold between ticks.
constexpr double kTick_s = 0.1;
constexpr double kFastTick_s = 0.02;
constexpr double kFastTickAbove = 0.85;  // of the effective limit
constexpr double kUngatedScan_s = 0.5;
constexpr std::uint64_t kWrapperRecheck = 4;  // scans (see scan_ungated)
// A running job's memory in use is read every tick while the build uses
// more than kDenseAbove of its limit; else at most every kRoomySample_s.
// Pressure is seen at once whatever this skips: the build's own total is
// read every tick (read_memory), and a peak loses nothing, the kernel
// keeps it (JobExec::sample). So with room to spare, 512 running jobs cost
// a fifth of the reads; a job's recorded curve then has a point every
// kRoomySample_s or so (its peak exact). Each tick visits only its share
// of the jobs (kRoomyShare), in turn from where the last tick stopped: a
// wave of jobs granted together, or a tick that came late (the build's
// processes had the cores), never makes one tick read them all. Per-job
// due times alone did: one late tick found every job due, and from then
// on they were all due in the same tick.
constexpr double kDenseAbove = 0.5;  // of the effective limit
constexpr double kRoomySample_s = 0.5;
constexpr std::size_t kRoomyShare = 5;  // kRoomySample_s / kTick_s
// ... and within this much time: where reads are slow (the kernel busy
// with a wave of jobs joining and leaving their cgroups), the turn goes on
// at the next tick rather than making this one long.
constexpr double kRoomyBudget_s = 0.004;
// Idle work between loop turns (prepare_jobs) goes this long at a time,
// and only when the next tick is further away than that.
constexpr double kIdleWork_s = 0.001;
// A job predicted to run long waits a moment before admission, 1% of its
// predicted time and at most 50 ms, for the rest of its burst: make and
// ninja start jobs in bursts whose wrappers connect over some
// milliseconds, and longest-first can only choose among the jobs it has
// seen (a warm g++ build started its two short jobs first and then ran its
// two 1 GB tables one after the other, not beside them). Short jobs (no-op
// compiles, anything under 0.5 s) and jobs of unknown length go at once,
// except in the build's first burst: before anything has been admitted,
// every job waits the 50 ms, so that with nothing known the first job is
// the one the build tool started first (ties go by its order, the pid),
// not the one whose wrapper happened to connect first (a cold nvcc build
// started its small kernels before the two big ones the Makefile lists
// first, and finished 1.15x make -j2 instead of 1.01x).
constexpr double kGatherShare = 0.01;
constexpr double kGatherMax_s = 0.05;
constexpr double kGatherMin_s = 0.005;
}  // namespace

ConnectedJob* Runner::by_job(JobId id) {
  auto it = conn_of_.find(id);
  if (it == conn_of_.end()) return nullptr;
  auto jt = live_.find(it->second);
  return jt == live_.end() ? nullptr : &jt->second;
}

void Runner::on_message(ConnId conn, const Message& m) {
  if (auto* r = std::get_if<RequestMsg>(&m)) return on_request(conn, *r);
  if (auto* s = std::get_if<StartedMsg>(&m)) return on_started(conn, *s);
  if (auto* e = std::get_if<ExitMsg>(&m)) return on_exit(conn, *e);
  log::warn("unexpected '{}' message from a wrapper; dropping it", message_type(m));
  ports_->close(conn);
  on_closed(conn);
}

void Runner::on_request(ConnId conn, const RequestMsg& m) {
  if (live_.count(conn)) {  // one job per connection
    ports_->close(conn);
    on_closed(conn);
    return;
  }
  JobKey key;
  key.tool = m.tool;
  key.identity = m.identity;
  key.klass = m.klass;
  key.stem = m.stem;
  key.cpu_weight = std::max(1, m.cpu_weight);
  ConnectedJob job;
  job.conn = conn;
  job.req = m;
  // A command too long for one frame arrives cut short: history says so
  // rather than pass the cut line off as the command that ran.
  if (m.argv_truncated) job.req.argv.push_back("[argv truncated]");
  job.id = gov_->submit(key, now(), m.engine, ports_->peer_pid(conn));
  job.exec = ports_->start_job(job.id);
  conn_of_[job.id] = conn;
  double gather = std::min(kGatherMax_s, kGatherShare * gov_->job(job.id).pred.wall_s);
  if (!admitted_any_) gather = kGatherMax_s;  // the build's first burst, whatever is known of it
  live_.emplace(conn, std::move(job));
  if (abort_signal_) return;
  if (gather >= kGatherMin_s) next_tick_ = std::min(next_tick_, now() + gather);  // the tick admits it
  else schedule();
}

// The pid is the wrapper's word; memgate may freeze and kill it (as root,
// anything), so it counts only if it lies below the wrapper the kernel
// vouches for (SO_PEERCRED).
void Runner::on_started(ConnId conn, const StartedMsg& m) {
  auto it = live_.find(conn);
  if (it == live_.end()) return;
  pid_t peer = ports_->peer_pid(conn);
  if (!ports_->descends_from(m.pid, peer)) {
    // Already ended (and reaped by the wrapper) before this message was
    // read: there is nothing left to measure or to trust.
    if (!ports_->exists(m.pid)) {
      log::debug("job {}: its program (pid {}) has already ended", it->second.id, m.pid);
      return;
    }
    ++extra_counters_[Counter::refused_pid];
    log::warn("job {}: the wrapper (pid {}) reported pid {}, which is not its own child; ignoring it", it->second.id,
              peer, m.pid);
    return;
  }
  if (!it->second.exec->set_child(m.pid)) ++extra_counters_[Counter::unjoined];
}

// How the attempt ended decides between a verdict of "done" and a rerun.
void Runner::on_exit(ConnId conn, const ExitMsg& m) {
  auto it = live_.find(conn);
  if (it == live_.end() || it->second.done) return;
  ConnectedJob& job = it->second;
  JobMemory mem = job.exec->sample(Sampling::exact);
  // Without a cgroup the peak comes from /proc samples, which a short spike
  // can fall between: the largest single process's RSS (getrusage, from
  // the wrapper) is a floor under it.
  if (!job.exec->has_cgroup()) mem.peak = std::max(mem.peak, m.maxrss_bytes);
  gov_->sample(job.id, 0, mem.peak, now());
  ExitKind kind = ExitKind::finished;
  if (job.killed_by_us) kind = ExitKind::killed_by_us;
  else if (WIFSIGNALED(m.status) && WTERMSIG(m.status) == SIGKILL && job.exec->oom_killed()) kind = ExitKind::oom_killed;
  // distcc compiled it here after all (its fallback): a local compile.
  if (m.ran_here && kind == ExitKind::finished) gov_->ran_here(job.id, now());
  const double cpu_s = kind == ExitKind::killed_by_us ? std::max(m.cpu_s, job.cpu_at_kill_s) : m.cpu_s;
  bool rerun = gov_->exited(job.id, kind, shell_status(m.status), now(), cpu_s);
  job.exec->end_attempt();
  job.killed_by_us = false;
  job.cpu_at_kill_s = 0;
  job.current = 0;
  AttemptReport attempt{job.req.argv, job.req.cwd, job.attempt_start, job.profile, cpu_s, shell_status(m.status)};
  JobRecord rec = recorder_.make_record(gov_->job(job.id), attempt, now());
  gov_->learn(rec);
  if (!rerun) {
    job.done = true;
    recorder_.finish(job.id, std::move(rec));
  }
  ports_->send(conn, VerdictMsg{rerun});
  last_release_ = now();
  schedule();
}

void Runner::on_closed(ConnId conn) {
  auto it = live_.find(conn);
  if (it == live_.end()) return;
  ConnectedJob& job = it->second;
  if (!job.done) {
    // The wrapper is gone without a verdict: whatever it started is an
    // orphan nobody will wait for.
    job.exec->kill();
    gov_->exited(job.id, ExitKind::lost, -1, now());
  }
  conn_of_.erase(job.id);
  live_.erase(it);
  last_release_ = now();
  if (!abort_signal_) schedule();
}

// Admission between ticks reuses the last measurement, so a new job does
// not wait for the next tick to start. It runs once per loop turn
// (main_loop), after all the messages the turn brought: a burst of
// hundreds of requests or exits is one step, not one each.
void Runner::schedule() { schedule_due_ = true; }

void Runner::schedule_now() {
  schedule_due_ = false;
  if (abort_signal_) return;
  double t = now();
  tell_tokens(t);
  apply(gov_->step(view_, t));
  log_new_events();
  offer_tokens(t);
}

void Runner::grant(ConnectedJob& job) {
  GrantMsg g;
  g.job = job.id;
  g.attempt = gov_->job(job.id).attempts;
  g.cgroups = job.exec->prepare_attempt();
  if (const GovJob& gj = gov_->job(job.id); gj.where.placement == Placement::offloaded) g.offload = gj.where.engine;
  job.attempt_start = now();
  job.next_sample_t = -1;
  stats_.grant(gov_->job(job.id).queued_t, last_release_, job.attempt_start);
  job.profile.clear();
  job.profile.push_back(MemSample{0, 0});
  if (!ports_->send(job.conn, g)) log::debug("job {}: grant not delivered", job.id);
}

// Declined (a build server's --decline-after): the wrapper exits at once
// with a failed compile's status, and the client compiles elsewhere.
void Runner::decline(ConnectedJob& job) {
  GrantMsg g;
  g.job = job.id;
  g.decline = true;
  job.done = true;
  if (!ports_->send(job.conn, g)) log::debug("job {}: decline not delivered", job.id);
}

void Runner::apply(const Decisions& d) {
  for (JobId id : d.kill)
    if (ConnectedJob* j = by_job(id)) {
      j->killed_by_us = true;
      j->cpu_at_kill_s = ports_->cpu_seconds(j->exec->tree());
      j->exec->kill();
    }
  for (JobId id : d.freeze)
    if (ConnectedJob* j = by_job(id); !j || !j->exec->freeze(true)) gov_->freeze_failed(id);
  for (JobId id : d.thaw)
    if (ConnectedJob* j = by_job(id)) j->exec->freeze(false);
  for (JobId id : d.admit)
    if (ConnectedJob* j = by_job(id)) grant(*j);
  admitted_any_ = admitted_any_ || !d.admit.empty();
  for (JobId id : d.decline)
    if (ConnectedJob* j = by_job(id)) decline(*j);
}

// Idle work, a millisecond at a time: the cgroups of the grants to come
// made ready (as many as jobs wait, at most the slots: a wave of exits
// frees no more) and those of ended attempts removed, so neither a grant
// nor an exit does it. Returns whether more is due; nothing while the next
// tick is nearer than that millisecond.
bool Runner::prepare_jobs() {
  if (abort_signal_ || next_tick_ - now() <= kIdleWork_s) return false;
  const auto waiting = static_cast<std::size_t>(gov_->counts().waiting);
  return ports_->prepare_jobs(std::min(waiting, static_cast<std::size_t>(slots_)), kIdleWork_s);
}

void Runner::sample_jobs() {
  double t = now();
  const Bytes limit = gov_->effective_limit(view_);
  const bool dense = limit <= 0 || static_cast<double>(view_.build_used) >= kDenseAbove * static_cast<double>(limit);
  const std::vector<JobId> active = gov_->active_jobs();  // in id order
  if (active.empty()) return;
  std::size_t visits = dense ? active.size() : (active.size() + kRoomyShare - 1) / kRoomyShare;
  std::size_t i = dense ? 0 : static_cast<std::size_t>(std::upper_bound(active.begin(), active.end(), sample_cursor_) -
                                                       active.begin());
  for (; visits > 0; --visits, ++i) {
    const JobId id = active[i % active.size()];
    sample_cursor_ = id;
    ConnectedJob* jp = by_job(id);
    if (!jp || jp->done) continue;
    ConnectedJob& job = *jp;
    if (!dense && t < job.next_sample_t) continue;
    job.next_sample_t = t + kRoomySample_s;
    JobMemory m = job.exec->sample(Sampling::quick);
    job.current = m.current;
    gov_->sample(job.id, m.current, m.peak, t, m.cpu_s);
    if (job.profile.size() >= kMaxLiveSamples) job.profile = downsample_profile(job.profile, kMaxLiveSamples / 2);
    job.profile.push_back(MemSample{t - job.attempt_start, m.current});
    if (!dense && now() - t >= kRoomyBudget_s) break;
  }
}

// Compilers that escaped the gate, every 0.5 s, in a loop turn of its own
// (main_loop): it decides nothing the tick needs, and a scan in the tick
// made one tick in five the longest. The build's processes
// outside every job's cgroup, less the wrappers still connected (their
// socket is close-on-exec: a wrapper that exec'd anything would have hung
// up) and their children (a granted job's program on its way into its
// cgroup), are read from /proc. So a scan reads the build tool's own
// processes, not every waiting wrapper nor every running job: its cost
// does not grow with the build.
void Runner::scan_ungated(double t) {
  if (t < next_ungated_scan_) return;
  next_ungated_scan_ = t + kUngatedScan_s;
  const double cpu0 = thread_cpu_s();
  std::vector<pid_t> build = ports_->build_processes(build_done_ ? 0 : build_pid_);
  // A wrapper read as waiting to connect is read again a few scans later,
  // not every scan: past the open-file limit thousands may wait, and
  // reading each every 0.5 s was most of a scan. Every new pid is read at
  // once, and a wrapper that gave up and ran its compiler (keeping its
  // pid) is seen within kWrapperRecheck scans.
  const std::uint64_t scan = ++ungated_scans_;
  std::unordered_map<pid_t, std::uint64_t> still_waiting;
  std::erase_if(build, [&](pid_t p) {
    auto it = waiting_wrappers_.find(p);
    if (it == waiting_wrappers_.end() || scan - it->second >= kWrapperRecheck) return false;
    still_waiting.emplace(p, it->second);
    return true;
  });
  std::vector<pid_t> known;
  for (const auto& [conn, job] : live_) {
    if (pid_t peer = ports_->peer_pid(conn); peer > 0) known.push_back(peer);
    // A job in its cgroup is not in `build`; one measured from /proc is.
    if (!job.done && !job.exec->has_cgroup())
      for (pid_t p : job.exec->tree()) known.push_back(p);
  }
  std::vector<pid_t> wrappers;
  auto found = find_ungated(build, known, "/proc", &wrappers);
  for (pid_t p : wrappers) still_waiting[p] = scan;
  waiting_wrappers_ = std::move(still_waiting);  // the gone ones drop out
  if (gated_nothing_)
    for (UngatedProcess& p : found) p.how = "memgate gated no compiler in this run (see degraded:)";
  ungated_.observe(found, t);
  stats_.scan(now() - t, thread_cpu_s() - cpu0);
}

void Runner::tick() {
  double t = now();
  const double cpu0 = thread_cpu_s();
  ports_->drop_idle();
  sample_jobs();
  Bytes jobs_current = 0;
  for (JobId id : gov_->active_jobs())
    if (const ConnectedJob* job = by_job(id)) jobs_current += job->current;
  view_ = ports_->read_memory(jobs_current);
  recorder_.sample_memory(t, view_.build_used);
  if (!abort_signal_) {
    tell_tokens(t);
    apply(gov_->step(view_, t));
    log_new_events();
    offer_tokens(t);
  } else if (!killed_all_ && t >= abort_deadline_) {
    kill_everything();
  }
  if (status_) status_->update(snapshot(), t);
  Bytes limit = gov_->effective_limit(view_);
  bool tight = limit > 0 && static_cast<double>(view_.build_used) >= kFastTickAbove * static_cast<double>(limit);
  next_tick_ = t + (tight ? kFastTick_s : kTick_s);
  stats_.tick(now() - t, thread_cpu_s() - cpu0);
}

void Runner::log_new_events() {
  const auto& events = gov_->events();
  for (; events_seen_ < events.size(); ++events_seen_) {
    const GovEvent& e = events[events_seen_];
    if (e.kind == EventKind::overshoot) continue;  // routine: counted, and drawn in the report
    std::string who;
    if (e.job >= 0) who = fmt::format(" job {} ({})", e.job, gov_->job(e.job).key.identity);
    log::info("{}{}: {}", name(e.kind), who, e.reason);
  }
}

StatusSnapshot Runner::snapshot() const {
  StatusSnapshot s;
  s.elapsed_s = now();
  GovernorCounts c = gov_->counts(s.elapsed_s);
  s.done = c.done;
  s.known_total = progress_ref_.jobs;
  s.running = c.running;
  s.waiting_memory = c.waiting_memory;
  s.waiting_cpu = c.waiting_cpu;
  s.frozen = c.frozen;
  s.used = view_.build_used;
  s.budget = budget_.budget;
  if (s.elapsed_s > 0) s.objects_per_min = 60.0 * c.done / s.elapsed_s;
  s.eta_s = estimate_eta(progress_ref_, c.done, recorder_.finished_job_s(), c.running_job_s);
  return s;
}

}  // namespace memgate
