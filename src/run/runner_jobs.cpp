// One job's life in the runner: request -> (wait) -> grant -> started ->
// exit -> verdict, and the tick that measures, decides and acts.
#include <sys/wait.h>
#include <signal.h>

#include <algorithm>

#include <fmt/core.h>

#include "run/build_process.hpp"
#include "run/runner_impl.hpp"
#include "util/clock.hpp"
#include "util/log.hpp"

namespace memgate {

namespace {
// Idle work between loop turns (prepare_jobs) goes this long at a time,
// and only when the next tick is further away than that.
constexpr double kIdleWork_s = 0.001;
}  // namespace

void Runner::on_message(ConnId conn, const Message& m) {
  if (auto* r = std::get_if<RequestMsg>(&m)) return on_request(conn, *r);
  if (auto* s = std::get_if<StartedMsg>(&m)) return on_started(conn, *s);
  if (auto* e = std::get_if<ExitMsg>(&m)) return on_exit(conn, *e);
  log::warn("unexpected '{}' message from a wrapper; dropping it", message_type(m));
  ports_->close(conn);
  on_closed(conn);
}

void Runner::on_request(ConnId conn, const RequestMsg& m) {
  if (live_.find(conn)) {  // one job per connection
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
  key.tu_bytes = m.tu_bytes;
  ConnectedJob job;
  job.conn = conn;
  job.req = m;
  // A command too long for one frame arrives cut short: history says so
  // rather than pass the cut line off as the command that ran.
  if (m.argv_truncated) job.req.argv.push_back("[argv truncated]");
  job.id = gov_->submit(key, now(), m.engine, ports_->peer_pid(conn));
  job.exec = ports_->start_job(job.id);
  const double pred_wall_s = gov_->job(job.id).pred.wall_s;
  live_.add(std::move(job));
  if (!build_.aborting()) pace_.job_arrived(now(), pred_wall_s);
}

// The pid is the wrapper's word; memgate may freeze and kill it (as root,
// anything), so it counts only if it lies below the wrapper the kernel
// vouches for (SO_PEERCRED).
void Runner::on_started(ConnId conn, const StartedMsg& m) {
  ConnectedJob* job = live_.find(conn);
  if (!job) return;
  pid_t peer = ports_->peer_pid(conn);
  if (!ports_->descends_from(m.pid, peer)) {
    // Already ended (and reaped by the wrapper) before this message was
    // read: there is nothing left to measure or to trust.
    if (!ports_->exists(m.pid)) {
      log::debug("job {}: its program (pid {}) has already ended", job->id, m.pid);
      return;
    }
    ++extra_counters_[Counter::refused_pid];
    log::warn("job {}: the wrapper (pid {}) reported pid {}, which is not its own child; ignoring it", job->id, peer,
              m.pid);
    return;
  }
  if (!job->exec->set_child(m.pid)) ++extra_counters_[Counter::unjoined];
}

// How the attempt ended decides between a verdict of "done" and a rerun.
void Runner::on_exit(ConnId conn, const ExitMsg& m) {
  ConnectedJob* found = live_.find(conn);
  if (!found || found->done) return;
  ConnectedJob& job = *found;
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
  job.end_attempt();
  AttemptReport attempt{job.req.argv, job.req.cwd, job.attempt_start, job.profile, cpu_s, shell_status(m.status)};
  JobRecord rec = recorder_.make_record(job.id, attempt, now());
  gov_->learn(rec);
  if (!rerun) {
    job.done = true;
    recorder_.finish(job.id, std::move(rec));
  }
  ports_->send(conn, VerdictMsg{rerun});
  stats_.released(now());
  pace_.schedule();
}

void Runner::on_closed(ConnId conn) {
  ConnectedJob* job = live_.find(conn);
  if (!job) return;
  if (!job->done) {
    // The wrapper is gone without a verdict: whatever it started is an
    // orphan nobody will wait for.
    job->exec->kill();
    gov_->exited(job->id, ExitKind::lost, -1, now());
  }
  live_.erase(conn);
  stats_.released(now());
  if (!build_.aborting()) pace_.schedule();
}

// Admission between ticks (Pace), on the tick's last measurement.
void Runner::schedule_now() {
  if (!build_.aborting()) step(now());
}

// One governor step on the last measurement, between what the jobserver's
// clients hold and the tokens it then allows.
void Runner::step(double t) {
  tokens_.tell(*gov_, t);
  apply(gov_->step(view_, t));
  console_.log_events(*gov_);
  tokens_.offer(*gov_, view_, t);
}

void Runner::grant(ConnectedJob& job) {
  GrantMsg g;
  g.job = job.id;
  g.attempt = gov_->job(job.id).attempts;
  g.cgroups = job.exec->prepare_attempt();
  if (const GovJob& gj = gov_->job(job.id); gj.where.placement == Placement::offloaded) g.offload = gj.where.engine;
  job.begin_attempt(now());
  stats_.grant(gov_->job(job.id).queue.queued_t, job.attempt_start);
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
    if (ConnectedJob* j = live_.by_job(id)) {
      j->killed_by_us = true;
      j->cpu_at_kill_s = ports_->cpu_seconds(j->exec->tree());
      j->exec->kill();
    }
  for (JobId id : d.freeze)
    if (ConnectedJob* j = live_.by_job(id); !j || !j->exec->freeze(true)) gov_->freeze_failed(id);
  for (JobId id : d.thaw)
    if (ConnectedJob* j = live_.by_job(id)) j->exec->freeze(false);
  for (JobId id : d.admit)
    if (ConnectedJob* j = live_.by_job(id)) grant(*j);
  if (!d.admit.empty()) pace_.admitted();
  for (JobId id : d.decline)
    if (ConnectedJob* j = live_.by_job(id)) decline(*j);
}

// Idle work, a millisecond at a time: the cgroups of the grants to come
// made ready (as many as jobs wait, at most the slots: a wave of exits
// frees no more) and those of ended attempts removed, so neither a grant
// nor an exit does it. Returns whether more is due; nothing while the next
// tick is nearer than that millisecond.
bool Runner::prepare_jobs() {
  if (build_.aborting() || pace_.until_tick(now()) <= kIdleWork_s) return false;
  const auto waiting = static_cast<std::size_t>(gov_->counts().waiting);
  return ports_->prepare_jobs(std::min(waiting, static_cast<std::size_t>(machine_.slots)), kIdleWork_s);
}

// The scan's inputs (UngatedScan): the build's processes outside the
// jobs' cgroups (reading them also checks the confinement), and those
// known to be gated. In a loop turn of its own (main_loop), never in a
// tick's: it decides nothing the tick needs, and a scan in the tick made
// one tick in five the longest.
void Runner::scan_ungated(double t) {
  if (!ungated_.due(t)) return;
  const double cpu0 = thread_cpu_s();
  std::vector<pid_t> build = ports_->build_processes(build_.running_pid());
  std::vector<pid_t> known;
  for (const auto& [conn, job] : live_) {
    if (pid_t peer = ports_->peer_pid(conn); peer > 0) known.push_back(peer);
    // A job in its cgroup is not in `build`; one measured from /proc is.
    if (!job.done && !job.exec->has_cgroup())
      for (pid_t p : job.exec->tree()) known.push_back(p);
  }
  ungated_.scan(std::move(build), known, t);
  stats_.scan(now() - t, thread_cpu_s() - cpu0);
}

void Runner::tick() {
  double t = now();
  const double cpu0 = thread_cpu_s();
  ports_->drop_idle();
  live_.sample(*gov_, view_, t, [this] { return now(); });
  view_ = ports_->read_memory(live_.current(gov_->active_jobs()));
  recorder_.sample_memory(t, view_.build_used);
  if (!build_.aborting()) {
    step(t);
  } else if (build_.grace_over(t)) {
    build_.kill_everything(*cgroups_);
  }
  if (console_.showing()) console_.update(snapshot(), t);
  pace_.ticked(t, view_.build_used, gov_->effective_limit(view_));
  stats_.tick(now() - t, thread_cpu_s() - cpu0);
}

StatusSnapshot Runner::snapshot() const {
  StatusSnapshot s;
  s.elapsed_s = now();
  GovernorCounts c = gov_->counts(s.elapsed_s);
  s.done = c.done;
  s.known_total = known_.progress().jobs;
  s.running = c.running;
  s.waiting_memory = c.waiting_memory;
  s.waiting_cpu = c.waiting_cpu;
  s.frozen = c.frozen;
  s.used = view_.build_used;
  s.budget = machine_.budget.budget;
  if (s.elapsed_s > 0) s.objects_per_min = 60.0 * c.done / s.elapsed_s;
  s.eta_s = estimate_eta(known_.progress(), c.done, recorder_.finished_job_s(), c.running_job_s);
  return s;
}

}  // namespace memgate
