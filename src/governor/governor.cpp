#include "governor/governor.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "core/job_class.hpp"
#include "governor/governor_detail.hpp"
#include "predict/envelope.hpp"
#include "util/size.hpp"

namespace memgate {

using namespace governor_detail;

// An offloaded job, and a remote one holding one of its engine's remote
// slots, computes elsewhere: it holds memory here, no CPU slot.
int GovJob::weight(int slots) const {
  if (where.placement == Placement::offloaded || where.remote_slot) return 0;
  return std::clamp(key.cpu_weight, 1, std::max(1, slots));
}

Governor::Governor(GovernorConfig config, PredictFn predict, LearnFn learn)
    : cfg_(config), predict_(std::move(predict)), learn_(std::move(learn)) {
  cfg_.slots = std::max(1, cfg_.slots);
  cfg_.hard_limit = std::max(cfg_.hard_limit, cfg_.budget);
  // Every counter exists from the start, so a zero reads as "none" and
  // not as "not recorded".
  for (Counter c : {Counter::submitted, Counter::admitted, Counter::jobs, Counter::failed, Counter::cancelled,
                    Counter::waited_for_memory, Counter::ran_alone, Counter::frozen, Counter::thawed,
                    Counter::freeze_failed, Counter::requeued, Counter::oom_killed, Counter::retried,
                    Counter::overshoot, Counter::wait_memory_ms, Counter::memory_bound_ms, Counter::cpu_bound_ms,
                    Counter::slots_bound_ms, Counter::frozen_ms, Counter::requeued_cpu_ms, Counter::released_mib_s,
                    Counter::timed_starts, Counter::room_starts})
    counters_[c] = 0;
  if (!cfg_.offload.engine.empty()) counters_[Counter::offloaded] = 0;
  if (cfg_.decline_after_s > 0) counters_[Counter::declined] = 0;
  if (!cfg_.offload.engine.empty()) counters_[Counter::fell_back] = 0;
}

JobId Governor::submit(const JobKey& key, double now, const std::string& engine, std::int64_t order) {
  GovJob j;
  j.id = next_id_++;
  j.queue.order = order > 0 ? order : j.id;
  j.where.local_key = key;
  j.key = key;
  if (!engine.empty()) {
    j.key = with_engine(key, engine);
    j.where.placement = Placement::remote;
    j.where.engine = engine;
    count(Counter::remote);
    counters_.try_emplace(Counter::fell_back, 0);
  }
  j.pred = predict_(j.key);
  j.queue.queued_t = now;
  JobId id = j.id;
  enqueue(jobs_.emplace(id, std::move(j)).first->second);
  count(Counter::submitted);
  tell(JobFact::of(JobFact::Kind::submitted, id, now).named(job(id)));
  return id;
}

int Governor::busy_slots() const {
  int busy = 0;
  for (const auto& [id, j] : active_)
    if (j->state == JobState::running || j->state == JobState::killing) busy += j->weight(cfg_.slots);
  return busy;
}

int Governor::remote_busy(const std::string& engine) const {
  int n = 0;
  for (const auto& [id, j] : active_)
    if (j->where.engine == engine && (j->where.remote_slot || j->where.placement == Placement::offloaded)) ++n;
  return n;
}

int Governor::remote_free(const std::string& engine) const {
  auto it = cfg_.remote_slots.find(engine);
  if (engine.empty() || it == cfg_.remote_slots.end() || it->second <= 0) return 0;
  return std::max(0, it->second - remote_busy(engine));
}

int Governor::unfrozen_running() const {
  int n = 0;
  for (const auto& [id, j] : active_)
    if (j->state == JobState::running) ++n;
  return n;
}

std::vector<GovJob*> Governor::by_state(JobState s) {
  std::vector<GovJob*> out;
  if (s == JobState::running || s == JobState::frozen || s == JobState::killing) {
    for (auto& [id, j] : active_)
      if (j->state == s) out.push_back(j);
    return out;
  }
  for (auto& [id, j] : jobs_)
    if (j.state == s) out.push_back(&j);
  return out;
}

bool Governor::queue_before(const GovJob* a, const GovJob* b) {
  if (a->queue.requeues != b->queue.requeues) return a->queue.requeues > b->queue.requeues;
  if (a->pred.wall_s != b->pred.wall_s) return a->pred.wall_s > b->pred.wall_s;
  if (a->queue.order != b->queue.order) return a->queue.order < b->queue.order;
  return a->id < b->id;
}

// A job enters the queue in its place (the queue is kept in admission
// order, so a step does not sort every waiting job again).
void Governor::enqueue(GovJob& j) {
  // A job requeued before admission ran again is still listed (as running).
  if (j.attempts > 0) queue_.erase(std::remove(queue_.begin(), queue_.end(), &j), queue_.end());
  ++waiting_n_;
  if (queue_sorted_) queue_.insert(std::upper_bound(queue_.begin(), queue_.end(), &j, queue_before), &j);
  else queue_.push_back(&j);
}

std::vector<JobId> Governor::active_jobs() const {
  std::vector<JobId> out;
  out.reserve(active_.size());
  for (const auto& [id, j] : active_) out.push_back(id);
  return out;
}

void Governor::ActiveJobs::put(GovJob& j) {
  auto it = std::lower_bound(v_.begin(), v_.end(), j.id, [](const Entry& e, JobId id) { return e.first < id; });
  if (it != v_.end() && it->first == j.id) it->second = &j;
  else v_.insert(it, Entry{j.id, &j});
}

void Governor::ActiveJobs::erase(JobId id) {
  auto it = std::lower_bound(v_.begin(), v_.end(), id, [](const Entry& e, JobId x) { return e.first < x; });
  if (it != v_.end() && it->first == id) v_.erase(it);
}

void Governor::activate(GovJob& j) { active_.put(j); }

// A waiting job leaves the queue (started, cancelled or declined): the
// counts the last admission left lose it.
void Governor::leave_queue(const GovJob& j) {
  if (j.queue.blocked_by_memory) --mem_waiters_;
  else if (j.queue.blocked_by_cpu) --cpu_waiters_;
  --waiting_n_;
}
void Governor::deactivate(GovJob& j) { active_.erase(j.id); }

// From the counts the last admission left and the active jobs: a status
// line every tick does not walk the waiting jobs.
GovernorCounts Governor::counts(double now) const {
  GovernorCounts c;
  c.done = static_cast<int>(done_.size());
  c.waiting = static_cast<int>(waiting_n_);
  c.waiting_memory = static_cast<int>(mem_waiters_);
  c.waiting_cpu = static_cast<int>(cpu_waiters_);
  for (const auto& [id, j] : active_) {
    switch (j->state) {
      case JobState::running:
        if (now >= 0 && j->run.start_t >= 0) {
          const double ran = std::max(0.0, now - j->run.start_t);
          c.running_job_s += j->pred.wall_s > 0 ? std::min(ran, j->pred.wall_s) : ran;
        }
        ++c.running;
        break;
      case JobState::killing: ++c.running; break;
      case JobState::frozen: ++c.frozen; break;
      case JobState::waiting:
      case JobState::done: break;
    }
  }
  return c;
}

void Governor::event(double now, EventKind kind, JobId job, std::string reason) {
  events_.push_back(GovEvent{now, kind, job, std::move(reason)});
}

// Time-weighted counters: what held the build back since the last step.
void Governor::account_time(double now) {
  if (last_t_ >= 0 && now > last_t_) {
    double dt_ms = (now - last_t_) * 1000.0;
    // What held a waiting job back: every core busy (more RAM would not
    // have started it sooner, whatever it waited for), else memory, else a
    // --jobs below the cores. More gated jobs running than cores (--jobs
    // above the cores, the build tool's -j at its limit, so none waits
    // here) is CPU-bound too: they share the cores.
    const int cores = cfg_.cores > 0 ? cfg_.cores : cfg_.slots;
    const bool waiting = any_memory_blocked_ || any_cpu_blocked_;
    const int busy = busy_slots();
    if ((waiting && busy >= cores) || busy > cores) count(Counter::cpu_bound_ms, std::llround(dt_ms));
    else if (any_memory_blocked_) count(Counter::memory_bound_ms, std::llround(dt_ms));
    else if (any_cpu_blocked_) count(Counter::slots_bound_ms, std::llround(dt_ms));
    std::int64_t frozen = 0;
    for (const auto& [id, j] : active_)
      if (j->state == JobState::frozen) ++frozen;
    count(Counter::wait_memory_ms, std::llround(dt_ms * static_cast<double>(mem_waiters_)));
    count(Counter::frozen_ms, std::llround(dt_ms * static_cast<double>(frozen)));
    // What the envelope gave back over the interval, as read at its start.
    released_bytes_s_ += static_cast<double>(releasing_) * (now - last_t_);
    counters_[Counter::released_mib_s] = std::llround(released_bytes_s_ / static_cast<double>(MiB));
  }
  last_t_ = std::max(last_t_, now);
  // Each running job's predicted peak less what it holds now.
  releasing_ = 0;
  for (const auto& [id, j] : active_) {
    if (j->state != JobState::running) continue;
    const Bytes held = reservation(*j, last_t_);
    releasing_ += std::max<Bytes>(0, std::max(j->pred.peak, j->peak_floor) - held);
  }
}

Decisions Governor::step(const MemoryView& view, double now) {
  account_time(now);
  if (unpredicted_ > 0 && now - unpredicted_since_ >= repredict_after()) repredict();
  Decisions out;
  relieve_pressure(view, now, out);
  admit_jobs(view, now, out);
  decline_jobs(now, out);
  return out;
}

void Governor::ran_here(JobId id, double now) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  GovJob& j = it->second;
  if (j.where.placement == Placement::local || j.state == JobState::waiting) return;
  const JobKey& local = j.where.local_key;
  event(now, EventKind::fallback, id,
        fmt::format("{} compiled {} on this machine after all; recorded as a local compile", j.where.engine,
                    local.stem.empty() ? local.identity : local.stem));
  count(Counter::fell_back);
  j.key = local;
  j.where.placement = Placement::local;
  j.where.remote_slot = false;
}

void Governor::freeze_failed(JobId id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  GovJob& j = it->second;
  if (j.state != JobState::frozen) return;
  j.state = JobState::running;
  tell(JobFact::of(JobFact::Kind::thawed, id, last_t_));  // it never stopped
  count(Counter::freeze_failed);
}

// CPU progress costs a read of the job's CPU time at every sample; it is
// worth that only where the envelope gives back something that matters.
// Once predictions from similar stems carried their members' envelopes,
// 2000 sleeping 2 MB fakes whose envelopes ended a few hundred KB under
// their peaks had their CPU read too: 2.3 ms of memgate's CPU per job
// against 1.7 (bench/scale --sizes 2000 --jobs 512). Packing's estimate
// skips their steps for the same reason (Shadow::add_running).
bool Governor::wants_cpu(JobId id) const {
  auto it = jobs_.find(id);
  return it != jobs_.end() && it->second.pred.cpu_s > 0 &&
         envelope_gives_back(it->second.pred) >= kReleaseWorthTracking;
}

void Governor::sample(JobId id, Bytes current, Bytes peak, double now, double cpu_s) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  GovJob& j = it->second;
  if (j.state == JobState::waiting || j.state == JobState::done) return;
  if (cpu_s >= 0) j.run.cpu_s = std::max(j.run.cpu_s, cpu_s);
  Bytes pred = std::max(j.pred.peak, j.peak_floor);
  bool was_over = j.run.attempt_peak > scale(pred, 1.1);
  j.run.current = current;
  const Bytes before = j.run.attempt_peak;
  j.run.attempt_peak = std::max({j.run.attempt_peak, peak, current});
  if (j.run.attempt_peak > before) j.run.peak_x = progress(j, now);
  if (j.run.fall_x < 0 && j.run.attempt_peak >= scale(pred, 0.9) && current < j.run.attempt_peak / 2)
    j.run.fall_x = progress(j, now);
  if (!was_over && j.run.attempt_peak > scale(pred, 1.1)) {
    count(Counter::overshoot);
    event(now, EventKind::overshoot, id,
          fmt::format("uses {}, predicted {}", format_bytes(j.run.attempt_peak), format_bytes(pred)));
  }
  if (past_peak_ && !j.run.peak_told && j.state == JobState::running && now - j.run.start_t >= cfg_.live.min_s &&
      j.run.current < j.run.attempt_peak / 2) {
    j.run.peak_told = true;
    past_peak_(j.key, j.run.attempt_peak);
    learned();
  }
}

bool Governor::exited(JobId id, ExitKind how, int exit_status, double now, double cpu_s) {
  auto found = jobs_.find(id);
  if (found == jobs_.end()) return false;  // already done
  GovJob& j = found->second;
  if (j.state == JobState::waiting) {
    // The wrapper gave up before it was granted (its build was interrupted).
    leave_queue(j);
    j.state = JobState::done;
    tell(JobFact::of(JobFact::Kind::left, id, now, now - j.queue.queued_t).named(j));
    count(Counter::cancelled);
    retire(id);
    return false;
  }
  Outcome outcome = how == ExitKind::finished ? (exit_status == 0 ? Outcome::ok : Outcome::failed)
                    : how == ExitKind::killed_by_us ? Outcome::requeued
                    : how == ExitKind::oom_killed   ? Outcome::oom
                                                    : Outcome::lost;
  cpu_s = std::isfinite(cpu_s) ? std::max(0.0, cpu_s) : 0.0;
  tell(JobFact::of(JobFact::Kind::ended, id, now, 0, {}, Attempt{j.run.start_t, now, outcome, j.run.attempt_peak, cpu_s})
           .named(j));
  j.run.current = 0;
  deactivate(j);

  bool memory_death = how == ExitKind::killed_by_us || how == ExitKind::oom_killed;
  // The cost of optimism: the work a memory death threw away.
  if (memory_death) count(Counter::requeued_cpu_ms, std::llround(cpu_s * 1000.0));
  if (how == ExitKind::killed_by_us) count(Counter::requeued);
  if (how == ExitKind::oom_killed) {
    count(Counter::oom_killed);
    event(now, EventKind::oom_kill, id, fmt::format("killed by the kernel at {}", format_bytes(j.run.attempt_peak)));
  }
  if (memory_death && j.attempts < cfg_.max_attempts) {
    // The true need is at least what it reached; an OOM kill means more.
    Bytes seen = scale(j.run.attempt_peak, kRequeueGrowth);
    if (how == ExitKind::oom_killed) seen = std::max(seen, scale(std::max(j.pred.peak, j.peak_floor), 1.5));
    j.peak_floor = std::max(j.peak_floor, seen);
    if (how == ExitKind::killed_by_us) j.queue.requeues += 1;
    j.state = JobState::waiting;
    j.queue.queued_t = now;
    j.run.start_t = -1;
    j.where.remote_slot = false;
    enqueue(j);
    count(Counter::retried);
    event(now, how == ExitKind::killed_by_us ? EventKind::requeue : EventKind::retry, id,
          fmt::format("attempt {} ended by memory; rerunning with {} reserved", j.attempts, format_bytes(j.peak_floor)));
    return true;
  }
  if (memory_death) event(now, EventKind::gave_up, id, fmt::format("killed {} times by memory; giving up", j.attempts));
  j.state = JobState::done;
  count(Counter::jobs);
  if (how != ExitKind::finished || exit_status != 0) count(Counter::failed);
  else ++finished_by_klass_[j.key.klass];
  retire(id);
  return false;
}

void Governor::retire(JobId id) {
  auto node = jobs_.extract(id);
  if (!node.empty()) done_.insert(std::move(node));
}

const GovJob& Governor::job(JobId id) const {
  auto it = jobs_.find(id);
  return it != jobs_.end() ? it->second : done_.at(id);
}

void Governor::learn(const JobRecord& attempt) {
  if (learn_) learn_(attempt);
  learned();
}

// Predicting every waiting job again costs one prediction per waiting job:
// after every exit, that made a build of N jobs cost N^2 predictions. So
// the queue is predicted again once the jobs learned since number a
// share of those waiting (with few waiting, after every one, as before),
// and within repredict_after() of any learning at the latest (step).
double Governor::repredict_after() const {
  return std::max(kRepredictAfter_s, static_cast<double>(waiting_n_) / kRepredictsPerSecond);
}

void Governor::learned() {
  if (unpredicted_++ == 0) unpredicted_since_ = last_t_;
  if (unpredicted_ * kRepredictShare >= waiting_n_) repredict();
}

void Governor::repredict() {
  unpredicted_ = 0;
  queue_sorted_ = false;  // new predictions, new order
  for (auto& [id, j] : jobs_) {
    if (j.state == JobState::waiting) {
      j.pred = predict_(j.key);
      continue;
    }
    const bool alive = j.state == JobState::running || j.state == JobState::frozen;
    const PredictionSource src = j.pred.source;
    if (!alive || src == PredictionSource::history || src == PredictionSource::profile) continue;
    const Prediction fresh = predict_(j.key);
    if (fresh.wall_s <= 0 || fresh.peak <= 0) continue;
    j.pred.wall_s = fresh.wall_s;
    j.pred.cpu_s = fresh.cpu_s;
    j.pred.peak_over_frac = fresh.peak_over_frac;
    j.pred.envelope = fresh.envelope;
    const double keeps = static_cast<double>(fresh.after_peak) / static_cast<double>(fresh.peak);
    j.pred.after_peak = std::min(j.pred.peak, scale(j.pred.peak, keeps));
  }
}

}  // namespace memgate
