#include "governor/governor.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/engine.hpp"
#include "util/size.hpp"

namespace memgate {

std::string_view name(AdmissionPolicy p) {
  return p == AdmissionPolicy::packing ? "packing" : "longest-first";
}

std::optional<AdmissionPolicy> parse_admission_policy(std::string_view s) {
  if (s == "longest-first") return AdmissionPolicy::longest_first;
  if (s == "packing") return AdmissionPolicy::packing;
  return std::nullopt;
}

namespace {

Bytes scale(Bytes b, double f) { return static_cast<Bytes>(std::llround(static_cast<double>(b) * f)); }

// A job whose attempt was killed used at least what we saw, and probably
// more (it was still growing): the next attempt must reserve more.
constexpr double kRequeueGrowth = 1.25;
// A job that outgrew its prediction may still be growing.
constexpr double kOvershootGrowth = 1.2;
// Margin on what a job past its peak still holds.
constexpr double kAfterPeakMargin = 1.1;
constexpr double kNever = std::numeric_limits<double>::infinity();

}  // namespace

// An offloaded job, and a remote one holding one of its engine's remote
// slots, computes elsewhere: it holds memory here, no CPU slot.
int GovJob::weight(int slots) const {
  if (placement == Placement::offloaded || remote_slot) return 0;
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
                    Counter::frozen_ms, Counter::requeued_cpu_ms})
    counters_[c] = 0;
  if (!cfg_.offload_engine.empty()) counters_[Counter::offloaded] = 0;
  if (cfg_.decline_after_s > 0) counters_[Counter::declined] = 0;
  if (!cfg_.offload_engine.empty()) counters_[Counter::fell_back] = 0;
}

JobId Governor::submit(const JobKey& key, double now, const std::string& engine) {
  GovJob j;
  j.id = next_id_++;
  j.local_key = key;
  j.key = key;
  if (!engine.empty()) {
    j.key = remote_key(key, engine);
    j.placement = Placement::remote;
    j.engine = engine;
    count(Counter::remote);
    counters_.try_emplace(Counter::fell_back, 0);
  }
  j.pred = predict_(j.key);
  j.first_pred = j.pred;
  j.submit_t = now;
  j.queued_t = now;
  JobId id = j.id;
  jobs_.emplace(id, std::move(j));
  count(Counter::submitted);
  return id;
}

Bytes Governor::effective_limit(const MemoryView& view) const {
  return std::max<Bytes>(0, std::min(cfg_.budget, cfg_.hard_limit - view.outside));
}

Bytes Governor::reservation(const GovJob& j, double now) const {
  if (j.state == JobState::killing) return j.current;
  Bytes pred = std::max(j.pred.peak, j.peak_floor);
  if (j.attempt_peak > pred) return std::max(j.current, scale(j.attempt_peak, kOvershootGrowth));
  // Past the peak for good: the job keeps only what it still uses. All
  // three must hold, so a job slowed by contention (its peak comes late)
  // or one with several peaks (multi-arch nvcc) keeps its reservation.
  const Prediction& p = j.pred;
  double elapsed = now - j.start_t;
  bool past_time = p.wall_s > 0 && p.peak_over_frac < 1.0 && elapsed >= p.peak_over_frac * p.wall_s;
  bool saw_peak = j.attempt_peak >= scale(pred, 0.8);
  bool falling = j.current < scale(j.attempt_peak, 0.9);
  // A weak guess the job's own curve contradicts: it ran live_min_s, peaked
  // under half the guess and is falling. It holds its peak with the margin
  // cold admission gives a rising sibling; a second, higher peak is what
  // freeze and requeue are for. (A first job guessed above the budget
  // runs alone; without this, alone for its whole life.)
  if (weak_guess(p) && j.peak_floor == 0 && elapsed >= cfg_.live_min_s && falling && j.attempt_peak > 0 &&
      j.attempt_peak < scale(pred, 0.5))
    return std::max(j.current, scale(j.attempt_peak, cfg_.live_margin_rising));
  if (past_time && saw_peak && falling) {
    Bytes keep = scale(std::max(j.current, p.after_peak), kAfterPeakMargin);
    return std::min(pred, std::max(keep, j.current));
  }
  return std::max(pred, j.current);
}

Bytes Governor::overhead(const MemoryView& view) const {
  Bytes jobs = 0;
  for (const auto& [id, j] : jobs_)
    if (j.state == JobState::running || j.state == JobState::frozen || j.state == JobState::killing) jobs += j.current;
  return std::max<Bytes>(0, view.build_used - jobs);
}

Bytes Governor::headroom(const MemoryView& view) const {
  Bytes reserved = 0;
  for (const auto& [id, j] : jobs_)
    if (j.state == JobState::running || j.state == JobState::frozen || j.state == JobState::killing)
      reserved += reservation(j, last_t_);
  return effective_limit(view) - overhead(view) - reserved;
}

int Governor::busy_slots() const {
  int busy = 0;
  for (const auto& [id, j] : jobs_)
    if (j.state == JobState::running || j.state == JobState::killing) busy += j.weight(cfg_.slots);
  return busy;
}

int Governor::remote_busy(const std::string& engine) const {
  int n = 0;
  for (const auto& [id, j] : jobs_) {
    bool alive = j.state == JobState::running || j.state == JobState::frozen || j.state == JobState::killing;
    if (alive && j.engine == engine && (j.remote_slot || j.placement == Placement::offloaded)) ++n;
  }
  return n;
}

int Governor::remote_free(const std::string& engine) const {
  auto it = cfg_.remote_slots.find(engine);
  if (engine.empty() || it == cfg_.remote_slots.end() || it->second <= 0) return 0;
  return std::max(0, it->second - remote_busy(engine));
}

int Governor::unfrozen_running() const {
  int n = 0;
  for (const auto& [id, j] : jobs_)
    if (j.state == JobState::running) ++n;
  return n;
}

std::vector<GovJob*> Governor::by_state(JobState s) {
  std::vector<GovJob*> out;
  for (auto& [id, j] : jobs_)
    if (j.state == s) out.push_back(&j);
  return out;
}

GovernorCounts Governor::counts() const {
  GovernorCounts c;
  c.done = static_cast<int>(done_.size());
  for (const auto& [id, j] : jobs_) {
    switch (j.state) {
      case JobState::waiting:
        ++c.waiting;
        if (j.blocked_by_memory) ++c.waiting_memory;
        else if (j.blocked_by_cpu) ++c.waiting_cpu;
        break;
      case JobState::running:
      case JobState::killing: ++c.running; break;
      case JobState::frozen: ++c.frozen; break;
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
    if (any_memory_blocked_) count(Counter::memory_bound_ms, std::llround(dt_ms));
    else if (any_cpu_blocked_) count(Counter::cpu_bound_ms, std::llround(dt_ms));
    std::int64_t mem_waiters = 0, frozen = 0;
    for (const auto& [id, j] : jobs_) {
      if (j.state == JobState::waiting && j.blocked_by_memory) ++mem_waiters;
      if (j.state == JobState::frozen) ++frozen;
    }
    count(Counter::wait_memory_ms, std::llround(dt_ms * static_cast<double>(mem_waiters)));
    count(Counter::frozen_ms, std::llround(dt_ms * static_cast<double>(frozen)));
  }
  last_t_ = std::max(last_t_, now);
}

Decisions Governor::step(const MemoryView& view, double now) {
  account_time(now);
  Decisions out;
  relieve_pressure(view, now, out);
  admit_jobs(view, now, out);
  decline_jobs(now, out);
  return out;
}

void Governor::start(GovJob& j, double now, Decisions& out) {
  j.state = JobState::running;
  j.start_t = now;
  if (j.first_start_t < 0) {
    j.first_start_t = now;
    j.first_pred = j.pred;
  }
  j.wait_s += now - j.queued_t;
  j.attempts += 1;
  j.attempt_peak = 0;
  j.peak_told = false;
  j.current = 0;
  j.blocked_by_memory = j.blocked_by_cpu = false;
  j.blocked_since = -1;
  count(Counter::admitted);
  out.admit.push_back(j.id);
}

// Admission: longest predicted first among the jobs that fit, jobs that
// lost work to a kill before everything else; with packing, the first job
// that cannot start holds a reservation later jobs may not delay (see
// AdmissionPolicy). Nothing is admitted while the build is under pressure
// (frozen or dying jobs, or thrashing).
void Governor::admit_jobs(const MemoryView& view, double now, Decisions& out) {
  std::vector<GovJob*> queue = by_state(JobState::waiting);
  any_memory_blocked_ = any_cpu_blocked_ = false;
  if (queue.empty()) return;
  std::sort(queue.begin(), queue.end(), [](const GovJob* a, const GovJob* b) {
    if (a->requeues != b->requeues) return a->requeues > b->requeues;
    if (a->pred.wall_s != b->pred.wall_s) return a->pred.wall_s > b->pred.wall_s;
    return a->id < b->id;
  });

  bool pressure = thrashing_ || !by_state(JobState::frozen).empty() || !by_state(JobState::killing).empty() ||
                  view.build_used >= scale(effective_limit(view), cfg_.freeze_frac);
  Bytes left = headroom(view);
  int free_slots = cfg_.slots - busy_slots();
  Bytes starve_reserve = 0;
  std::optional<Shadow> shadow;
  bool shadow_tried = cfg_.admission != AdmissionPolicy::packing || pressure;
  for (size_t i = 0; i < queue.size(); ++i) {
    GovJob* j = queue[i];
    Bytes need = std::max(j->pred.peak, j->peak_floor);
    // A remote job takes a free remote slot of its engine if there is one
    // (it weighs nothing here then); it gives it back if not admitted.
    j->remote_slot = j->placement == Placement::remote && remote_free(j->engine) > 0;
    bool fits_cpu = j->weight(cfg_.slots) <= free_slots;
    bool fits_mem = !pressure && need <= left - starve_reserve;
    Bytes cold = fits_cpu && !fits_mem && !pressure ? cold_need(*j, now) : 0;
    const bool on_cold = cold > 0 && cold <= left - starve_reserve;
    if (on_cold) {
      need = cold;
      fits_mem = true;
    }
    // Packing: a job that would delay the reserved one waits as if it did
    // not fit (for what the reserved one waits for).
    bool held = fits_cpu && fits_mem && shadow && !shadow->admits(*j, need, now);
    if (held) fits_mem = false;
    j->blocked_by_cpu = !fits_cpu || (held && shadow->by_cpu());
    j->blocked_by_memory = fits_cpu && !fits_mem && !j->blocked_by_cpu;
    if (fits_cpu && fits_mem) {
      if (on_cold) {
        // Admitted on what its running siblings show: that is its
        // prediction now (and its reservation), from this build.
        j->speculative = true;
        j->pred.peak = cold;
        j->pred.source = PredictionSource::build;
        j->pred.confidence = std::min(j->pred.confidence, 0.25);
      }
      start(*j, now, out);
      left -= need;
      free_slots -= j->weight(cfg_.slots);
      continue;
    }
    j->remote_slot = false;
    if (!shadow_tried) {
      // The first job that cannot start: later jobs may not delay it
      // unless that ends both sooner.
      shadow_tried = true;
      shadow = shadow_for(*j, std::max(j->pred.peak, j->peak_floor), left, free_slots, view, now);
    }
    if (fits_mem) continue;
    if (j->blocked_since < 0) j->blocked_since = now;
    if (j->blocked_by_memory && !j->waited_for_memory) {
      j->waited_for_memory = true;
      count(Counter::waited_for_memory);
    }
    if (starve_reserve == 0 && now - j->blocked_since >= cfg_.starvation_s) starve_reserve = need;
  }
  if (!pressure) offload_jobs(queue, left, now, out);

  bool idle = unfrozen_running() == 0 && by_state(JobState::frozen).empty() && by_state(JobState::killing).empty();
  if (idle && out.admit.empty()) {
    GovJob* j = queue.front();
    Bytes need = std::max(j->pred.peak, j->peak_floor);
    if (need > effective_limit(view)) {
      count(Counter::ran_alone);
      event(now, EventKind::alone, j->id,
            fmt::format("predicted {} exceeds the budget of {}; running it alone", format_bytes(need),
                        format_bytes(effective_limit(view))));
    }
    start(*j, now, out);
  }
  for (GovJob* j : queue) {
    if (j->state != JobState::waiting) continue;
    any_memory_blocked_ |= j->blocked_by_memory;
    any_cpu_blocked_ |= j->blocked_by_cpu;
  }
}

// The head's reservation: what is free now, and what every running job
// gives back by its prediction. A job whose duration is unknown gives back
// nothing (it may run for ever); one that has overrun its prediction is
// taken to need a tenth of it more. None when the head's moment cannot be
// told, or it needs more than the whole limit (it will run alone).
std::optional<Governor::Shadow> Governor::shadow_for(const GovJob& head, Bytes need, Bytes left, int free_slots,
                                                     const MemoryView& view, double now) const {
  if (need > effective_limit(view)) return std::nullopt;
  Shadow sh(head, need, left, free_slots, cfg_.slots, now);
  for (const auto& [id, r] : jobs_)
    if (r.state == JobState::running || r.state == JobState::killing) sh.add_running(r, reservation(r, now), now);
  if (!std::isfinite(sh.head_time())) return std::nullopt;
  return sh;
}

Governor::Shadow::Shadow(const GovJob& head, Bytes need, Bytes free_mem, int free_slots, int slots, double now)
    : head_(&head),
      need_(need),
      w_(head.weight(slots)),
      mem_(free_mem),
      free_slots_(free_slots),
      slots_(slots),
      by_cpu_(head.weight(slots) > free_slots),
      now_(now),
      head_t_(kNever) {
  head_t_ = fit_time(need_, w_, now_, {}, 0, 0);
}

void Governor::Shadow::add_running(const GovJob& r, Bytes held, double now) {
  const Prediction& p = r.pred;
  if (p.wall_s <= 0) return;
  std::vector<Release> mine;
  if (r.state == JobState::running && p.peak_over_frac < 1.0 && p.after_peak > 0) {
    double past = r.start_t + p.peak_over_frac * p.wall_s;
    Bytes keep = std::min(held, scale(p.after_peak, kAfterPeakMargin));
    if (past > now && keep < held) {
      mine.push_back({past, held - keep, 0});
      held = keep;
    }
  }
  mine.push_back({std::max(r.start_t + p.wall_s, now + 0.1 * p.wall_s), held, r.weight(slots_)});
  for (const Release& x : mine)
    releases_.insert(std::upper_bound(releases_.begin(), releases_.end(), x.t,
                                      [](double t, const Release& y) { return t < y.t; }),
                     x);
  head_t_ = fit_time(need_, w_, now_, {}, 0, 0);
}

void Governor::Shadow::releases_of(const Prediction& p, Bytes need, int w, double start, std::vector<Release>& out) {
  if (p.wall_s <= 0) return;  // it may run for ever: gives nothing back
  Bytes held = need;
  if (p.peak_over_frac < 1.0 && p.after_peak > 0) {
    Bytes keep = std::min(held, scale(p.after_peak, kAfterPeakMargin));
    if (keep < held) {
      out.push_back({start + p.peak_over_frac * p.wall_s, held - keep, 0});
      held = keep;
    }
  }
  out.push_back({start + p.wall_s, held, w});
}

double Governor::Shadow::head_time() const { return head_t_; }

double Governor::Shadow::fit_time(Bytes need, int w, double from, const std::vector<Release>& extra, Bytes taken_mem,
                                  int taken_slots) const {
  Bytes mem = mem_ - taken_mem;
  int slots = free_slots_ - taken_slots;
  size_t a = 0, b = 0;  // releases_ and extra (sorted, at most two), merged
  auto next_t = [&] {
    double ta = a < releases_.size() ? releases_[a].t : kNever, tb = b < extra.size() ? extra[b].t : kNever;
    return std::min(ta, tb);
  };
  auto take_until = [&](double t) {
    for (; a < releases_.size() && releases_[a].t <= t; ++a) mem += releases_[a].mem, slots += releases_[a].slots;
    for (; b < extra.size() && extra[b].t <= t; ++b) mem += extra[b].mem, slots += extra[b].slots;
  };
  take_until(from);
  if (need <= mem && w <= slots) return from;
  for (double t = next_t(); std::isfinite(t); t = next_t()) {
    take_until(t);
    if (need <= mem && w <= slots) return t;
  }
  return kNever;
}

bool Governor::Shadow::admits(const GovJob& j, Bytes need, double now) {
  const Prediction& p = j.pred;
  const int w = j.weight(slots_);
  const double t0 = head_t_;
  std::vector<Release> mine;
  releases_of(p, need, w, now, mine);
  std::sort(mine.begin(), mine.end(), [](const Release& x, const Release& y) { return x.t < y.t; });
  const double t1 = fit_time(need_, w_, now_, mine, need, w);
  bool admit = t1 <= t0 + 1e-9;
  const double head_wall = head_->pred.wall_s;
  if (!admit && (p.wall_s <= 0 || head_wall <= 0)) admit = true;  // nothing to weigh: do not hold it
  if (!admit) {
    // It delays the head. Start it now, or after the head has started
    // (once the head is past its peak or done)?
    const double end_now = std::max(t1 + head_wall, now + p.wall_s);
    std::vector<Release> head;
    releases_of(head_->pred, need_, w_, t0, head);
    const double tj = fit_time(need, w, t0, head, need_, w_);
    const double end_later = std::max(t0 + head_wall, tj + p.wall_s);
    admit = end_now <= end_later;
  }
  if (!admit) return false;
  mem_ -= need;
  free_slots_ -= w;
  for (const Release& x : mine)
    releases_.insert(std::upper_bound(releases_.begin(), releases_.end(), x.t,
                                      [](double t, const Release& y) { return t < y.t; }),
                     x);
  head_t_ = fit_time(need_, w_, now_, {}, 0, 0);
  return true;
}

// Jobs still waiting for memory go to the engine while it has slots, each
// with the reservation of the engine's local side (learned as the engine's
// key, see remote_key). An offloaded job stays the engine's if it is ever
// rerun.
void Governor::offload_jobs(std::vector<GovJob*>& queue, Bytes& left, double now, Decisions& out) {
  if (cfg_.offload_engine.empty() || cfg_.offload_slots <= 0) return;
  // The engine's remote slots are shared with the jobs the build itself
  // sends there (CC="distcc gcc" and --offload distcc).
  int busy = remote_busy(cfg_.offload_engine);
  for (GovJob* j : queue) {
    if (busy >= cfg_.offload_slots) return;
    if (j->state != JobState::waiting || !j->blocked_by_memory || j->placement != Placement::local ||
        !distributable(j->key))
      continue;
    JobKey key = remote_key(j->local_key, cfg_.offload_engine);
    Prediction pred = predict_(key);
    if (pred.peak > left) continue;
    event(now, EventKind::offload, j->id,
          fmt::format("{} needs {}, more than is free here; sent to {}", j->key.stem,
                      format_bytes(std::max(j->pred.peak, j->peak_floor)), cfg_.offload_engine));
    j->key = key;
    j->pred = pred;
    j->peak_floor = 0;  // what it needed here is not what its client needs
    j->placement = Placement::offloaded;
    j->engine = cfg_.offload_engine;
    count(Counter::offloaded);
    start(*j, now, out);
    left -= pred.peak;
    ++busy;
  }
}

// A build server's jobs must not wait past the client's timeout: those
// that waited too long are declined, and their clients compile elsewhere.
void Governor::decline_jobs(double now, Decisions& out) {
  if (cfg_.decline_after_s <= 0) return;
  std::vector<JobId> gone;
  for (auto& [id, j] : jobs_) {
    if (j.state != JobState::waiting || now - j.queued_t < cfg_.decline_after_s) continue;
    j.state = JobState::done;
    j.wait_s += now - j.queued_t;
    count(Counter::declined);
    event(now, EventKind::decline, id, fmt::format("waited {:.1f} s for memory; declined", now - j.queued_t));
    out.decline.push_back(id);
    gone.push_back(id);
  }
  for (JobId id : gone) retire(id);
}

// A guess, not a measurement: a default, or an estimate from few jobs of
// this build or from profiles alone.
bool Governor::weak_guess(const Prediction& p) {
  return p.source == PredictionSource::fallback ||
         ((p.source == PredictionSource::build || p.source == PredictionSource::similar) && p.confidence <= 0.35);
}

Bytes Governor::cold_need(const GovJob& j, double now) const {
  if (!weak_guess(j.pred) || j.attempts > 0) return 0;  // a job that was killed knows better
  double best_w = 0;
  int in_flight = 0;
  int confirmed = 0;
  if (auto it = finished_by_klass_.find(j.key.klass); it != finished_by_klass_.end()) confirmed = it->second;
  for (const auto& [id, r] : jobs_) {
    if (id == j.id || r.key.klass != j.key.klass) continue;
    if (r.state != JobState::running && r.state != JobState::frozen) continue;
    const bool falling = r.attempt_peak > 0 && r.current < scale(r.attempt_peak, 0.9);
    if (falling) ++confirmed;
    else if (r.speculative) ++in_flight;
    if (now - r.start_t < cfg_.live_min_s || r.attempt_peak <= 0) continue;
    const double margin = falling ? cfg_.live_margin_falling : cfg_.live_margin_rising;
    best_w = std::max(best_w, static_cast<double>(r.attempt_peak) / r.weight(cfg_.slots) * margin);
  }
  if (best_w <= 0 || in_flight >= std::max(1, confirmed)) return 0;
  return std::max(j.peak_floor, static_cast<Bytes>(std::llround(best_w * std::max(1, j.key.cpu_weight))));
}

namespace {
bool newer(const GovJob* a, const GovJob* b) {
  return !b || a->start_t > b->start_t || (a->start_t == b->start_t && a->id > b->id);
}
}  // namespace

GovJob* Governor::newest_to_freeze() {
  GovJob* best = nullptr;
  for (auto& [id, j] : jobs_)
    if (j.state == JobState::running && newer(&j, best)) best = &j;
  return best;
}

GovJob* Governor::newest_to_kill() {
  GovJob* best = nullptr;
  for (auto& [id, j] : jobs_) {
    bool alive = j.state == JobState::running || j.state == JobState::frozen;
    // A job out of reruns would fail for good: leave it to finish.
    if (alive && j.attempts < cfg_.max_attempts && newer(&j, best)) best = &j;
  }
  return best;
}

// Escalation, one action per step and each with its cooldown, so the
// controller never acts in storms on a single spike.
void Governor::relieve_pressure(const MemoryView& view, double now, Decisions& out) {
  const bool machine_full = view.build_used + view.outside >= scale(cfg_.hard_limit, cfg_.psi_machine_full_frac);
  if (view.psi_full_avg10 && (!view.psi_machine_wide || machine_full)) {
    if (*view.psi_full_avg10 >= cfg_.psi_full_freeze && !thrashing_) {
      thrashing_ = true;
      event(now, EventKind::pressure, -1,
            view.psi_machine_wide
                ? fmt::format("the machine's memory stalls at {:.1f}% (PSI full avg10) and it is nearly full",
                              *view.psi_full_avg10)
                : fmt::format("the build's memory stalls at {:.1f}% (PSI full avg10 of its cgroup)",
                              *view.psi_full_avg10));
    } else if (*view.psi_full_avg10 <= cfg_.psi_full_clear) {
      thrashing_ = false;
    }
  } else {
    thrashing_ = false;
  }

  Bytes limit = effective_limit(view);
  Bytes used = view.build_used;
  bool dying = !by_state(JobState::killing).empty();
  int alive = unfrozen_running() + static_cast<int>(by_state(JobState::frozen).size());

  if (used >= scale(limit, cfg_.kill_frac) && !dying && alive >= 2 && now - last_kill_t_ >= cfg_.kill_cooldown_s) {
    if (GovJob* v = newest_to_kill()) {
      v->state = JobState::killing;
      last_kill_t_ = now;
      event(now, EventKind::kill, v->id,
            fmt::format("build uses {} of {}: killing the newest job to requeue it", format_bytes(used),
                        format_bytes(limit)));
      out.kill.push_back(v->id);
      return;
    }
  }
  bool over = used >= scale(limit, cfg_.freeze_frac);
  double cooldown = over ? cfg_.freeze_cooldown_s : cfg_.psi_freeze_cooldown_s;
  if ((over || thrashing_) && unfrozen_running() >= 2 && now - last_freeze_t_ >= cooldown) {
    GovJob* v = newest_to_freeze();
    v->state = JobState::frozen;
    v->frozen_since = now;
    last_freeze_t_ = now;
    low_since_ = -1;
    count(Counter::frozen);
    event(now, EventKind::freeze, v->id,
          thrashing_ ? std::string("memory is thrashing")
                     : fmt::format("build uses {} of {}", format_bytes(used), format_bytes(limit)));
    out.freeze.push_back(v->id);
    return;
  }
  try_thaw(view, now, out);
}

bool Governor::try_thaw(const MemoryView& view, double now, Decisions& out) {
  std::vector<GovJob*> frozen = by_state(JobState::frozen);
  if (frozen.empty()) return false;
  GovJob* oldest = *std::min_element(frozen.begin(), frozen.end(), [](const GovJob* a, const GovJob* b) {
    return a->start_t < b->start_t || (a->start_t == b->start_t && a->id < b->id);
  });
  // Never leave the build with nothing able to move.
  bool must = unfrozen_running() == 0 && by_state(JobState::killing).empty();
  Bytes growth = std::max<Bytes>(0, reservation(*oldest, now) - oldest->current);
  bool low = !thrashing_ && view.build_used + growth <= scale(effective_limit(view), cfg_.thaw_frac);
  if (!low) low_since_ = -1;
  else if (low_since_ < 0) low_since_ = now;
  bool settled = low && now - low_since_ >= cfg_.thaw_hold_s && now - last_thaw_t_ >= cfg_.thaw_cooldown_s;
  if (!must && !settled) return false;
  oldest->state = JobState::running;
  oldest->frozen_s += now - oldest->frozen_since;
  oldest->frozen_since = -1;
  last_thaw_t_ = now;
  count(Counter::thawed);
  event(now, EventKind::thaw, oldest->id, must ? "no other job is running" : "memory is back");
  out.thaw.push_back(oldest->id);
  return true;
}

void Governor::ran_here(JobId id, double now) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  GovJob& j = it->second;
  if (j.placement == Placement::local || j.state == JobState::waiting) return;
  event(now, EventKind::fallback, id,
        fmt::format("{} compiled {} on this machine after all; recorded as a local compile", j.engine,
                    j.local_key.stem.empty() ? j.local_key.identity : j.local_key.stem));
  count(Counter::fell_back);
  j.key = j.local_key;
  j.placement = Placement::local;
  j.remote_slot = false;
}

void Governor::freeze_failed(JobId id) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  GovJob& j = it->second;
  if (j.state != JobState::frozen) return;
  j.state = JobState::running;
  j.frozen_since = -1;
  count(Counter::freeze_failed);
}

void Governor::sample(JobId id, Bytes current, Bytes peak, double now) {
  auto it = jobs_.find(id);
  if (it == jobs_.end()) return;
  GovJob& j = it->second;
  if (j.state == JobState::waiting || j.state == JobState::done) return;
  Bytes pred = std::max(j.pred.peak, j.peak_floor);
  bool was_over = j.attempt_peak > scale(pred, 1.1);
  j.current = current;
  j.attempt_peak = std::max({j.attempt_peak, peak, current});
  j.observed_peak = std::max(j.observed_peak, j.attempt_peak);
  if (!was_over && j.attempt_peak > scale(pred, 1.1)) {
    count(Counter::overshoot);
    event(now, EventKind::overshoot, id,
          fmt::format("uses {}, predicted {}", format_bytes(j.attempt_peak), format_bytes(pred)));
  }
  if (past_peak_ && !j.peak_told && j.state == JobState::running && now - j.start_t >= cfg_.live_min_s &&
      j.current < j.attempt_peak / 2) {
    j.peak_told = true;
    past_peak_(j.key, j.attempt_peak);
    repredict();
  }
}

bool Governor::exited(JobId id, ExitKind how, int exit_status, double now, double cpu_s) {
  auto found = jobs_.find(id);
  if (found == jobs_.end()) return false;  // already done
  GovJob& j = found->second;
  if (j.state == JobState::waiting) {
    // The wrapper gave up before it was granted (its build was interrupted).
    j.state = JobState::done;
    j.wait_s += now - j.queued_t;
    count(Counter::cancelled);
    retire(id);
    return false;
  }
  if (j.frozen_since >= 0) {
    j.frozen_s += now - j.frozen_since;
    j.frozen_since = -1;
  }
  Outcome outcome = how == ExitKind::finished ? (exit_status == 0 ? Outcome::ok : Outcome::failed)
                    : how == ExitKind::killed_by_us ? Outcome::requeued
                    : how == ExitKind::oom_killed   ? Outcome::oom
                                                    : Outcome::lost;
  cpu_s = std::isfinite(cpu_s) ? std::max(0.0, cpu_s) : 0.0;
  j.attempt_log.push_back(Attempt{j.start_t, now, outcome, j.attempt_peak, cpu_s});
  j.observed_peak = std::max(j.observed_peak, j.attempt_peak);
  j.current = 0;

  bool memory_death = how == ExitKind::killed_by_us || how == ExitKind::oom_killed;
  // The cost of optimism: the work a memory death threw away.
  if (memory_death) count(Counter::requeued_cpu_ms, std::llround(cpu_s * 1000.0));
  if (how == ExitKind::killed_by_us) count(Counter::requeued);
  if (how == ExitKind::oom_killed) {
    count(Counter::oom_killed);
    event(now, EventKind::oom_kill, id, fmt::format("killed by the kernel at {}", format_bytes(j.attempt_peak)));
  }
  if (memory_death && j.attempts < cfg_.max_attempts) {
    // The true need is at least what it reached; an OOM kill means more.
    Bytes seen = scale(j.attempt_peak, kRequeueGrowth);
    if (how == ExitKind::oom_killed) seen = std::max(seen, scale(std::max(j.pred.peak, j.peak_floor), 1.5));
    j.peak_floor = std::max(j.peak_floor, seen);
    if (how == ExitKind::killed_by_us) j.requeues += 1;
    j.state = JobState::waiting;
    j.queued_t = now;
    j.start_t = -1;
    j.remote_slot = false;
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
  repredict();
}

void Governor::repredict() {
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
    const double keeps = static_cast<double>(fresh.after_peak) / static_cast<double>(fresh.peak);
    j.pred.after_peak = std::min(j.pred.peak, scale(j.pred.peak, keeps));
  }
}

}  // namespace memgate
