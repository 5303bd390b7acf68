// Admission: which waiting jobs start now (longest-first or packing),
// cold admission on live siblings, offloading to an engine and declining.
// Pressure: governor_pressure.cpp; exits, learning and the rest: governor.cpp.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <unordered_map>

#include "core/job_class.hpp"
#include "governor/governor.hpp"
#include "governor/governor_detail.hpp"
#include "predict/envelope.hpp"
#include "governor/jobserver.hpp"
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

using namespace governor_detail;

void Governor::start(GovJob& j, double now, Decisions& out) {
  leave_queue(j);  // it may be counted as blocked by this step's walk (offloaded, or run alone)
  j.state = JobState::running;
  activate(j);
  tell(JobFact::of(JobFact::Kind::started, j.id, now, now - j.queue.queued_t, j.pred));
  j.attempts += 1;
  j.run = GovJob::Run{};
  j.run.start_t = now;
  j.queue.blocked_by_memory = j.queue.blocked_by_cpu = false;
  j.queue.blocked_since = -1;
  count(Counter::admitted);
  out.admit.push_back(j.id);
}

// Admission: longest predicted first among the jobs that fit (ties in the
// build tool's order), jobs that lost work to a kill before everything else; with packing, the first job
// that cannot start holds a reservation later jobs may not delay (see
// AdmissionPolicy). Nothing is admitted while the build is under pressure
// (frozen or dying jobs, or thrashing).
void Governor::admit_jobs(const MemoryView& view, double now, Decisions& out) {
  queue_.erase(std::remove_if(queue_.begin(), queue_.end(), [](const GovJob* j) { return j->state != JobState::waiting; }),
               queue_.end());
  if (!queue_sorted_) {
    std::sort(queue_.begin(), queue_.end(), queue_before);
    queue_sorted_ = true;
  }
  std::vector<GovJob*> queue = queue_;  // start() and offload change states, not the order
  any_memory_blocked_ = any_cpu_blocked_ = false;
  mem_waiters_ = cpu_waiters_ = 0;
  if (queue.empty()) return;

  bool pressure = under_pressure(view);
  Bytes left = headroom(view);
  int busy = busy_slots();
  const int js = jobserver_running(js_held_, js_client_);
  int free_slots = cfg_.slots - std::max(busy, js);
  Bytes starve_reserve = 0;
  std::optional<Shadow> shadow;
  bool shadow_tried = cfg_.admission != AdmissionPolicy::packing || pressure;
  std::unordered_map<std::string, LiveSiblings> siblings;  // by klass, read when first needed
  std::optional<Shadow> timed_on;  // the running jobs' falls, built when first needed after a start
  int timed_tries = kTimedTries;
  for (size_t i = 0; i < queue.size(); ++i) {
    GovJob* j = queue[i];
    // Every slot taken (and no token for a job of the build's client):
    // no local job can start, whatever memory says, so the rest of the
    // queue is only marked. A step costs its admissions, not the queue.
    const bool cpu_full = free_slots <= 0 && !(js > 0 && busy + 1 <= js);
    if (cpu_full && shadow_tried && j->where.placement != Placement::remote) {
      j->where.remote_slot = false;
      j->queue.blocked_by_cpu = true;
      j->queue.blocked_by_memory = false;
      ++cpu_waiters_;
      continue;
    }
    Bytes need = std::max(j->pred.peak, j->peak_floor);
    // A remote job takes a free remote slot of its engine if there is one
    // (it weighs nothing here then); it gives it back if not admitted.
    j->where.remote_slot = j->where.placement == Placement::remote && remote_free(j->where.engine) > 0;
    bool fits_cpu = fits_cpu_with_tokens(j->weight(cfg_.slots), busy, js, cfg_.slots);
    bool fits_mem = !pressure && need <= left - starve_reserve;
    Bytes cold = 0;
    if (fits_cpu && !fits_mem && !pressure && weak_guess(j->pred) && j->attempts == 0) {
      auto it = siblings.find(j->key.klass);
      if (it == siblings.end()) it = siblings.emplace(j->key.klass, live_siblings(j->key.klass, now)).first;
      cold = cold_need(*j, it->second);
    }
    const bool on_cold = cold > 0 && cold <= left - starve_reserve;
    if (on_cold) {
      need = cold;
      fits_mem = true;
    }
    // A job that does not fit but is timed by its own record starts if its
    // climb meets the running jobs' falls (a backward kernel climbs for a
    // third of its life, and ran alone for that long while a forward
    // kernel's peak came and went).
    bool timed = false;
    if (fits_cpu && !fits_mem && !pressure && timed_tries > 0 && can_time(*j, need, view)) {
      --timed_tries;
      if (!timed_on) timed_on = timeline(*j, need, left - starve_reserve, free_slots, now);
      fits_mem = timed = timed_on->climbs_in_time(j->pred.envelope.rise, need, climb_s(*j));
    }
    // Packing: a job that would delay the reserved one waits as if it did
    // not fit (for what the reserved one waits for).
    bool held = fits_cpu && fits_mem && shadow && !shadow->admits(*j, need, now);
    if (held) fits_mem = false;
    j->queue.blocked_by_cpu = !fits_cpu || (held && shadow->by_cpu());
    j->queue.blocked_by_memory = fits_cpu && !fits_mem && !j->queue.blocked_by_cpu;
    if (fits_cpu && fits_mem) {
      if (on_cold) {
        // Admitted on what its running siblings show: that is its
        // prediction now (and its reservation), from this build.
        j->queue.speculative = true;
        j->pred.peak = cold;
        j->pred.source = PredictionSource::build;
        j->pred.confidence = std::min(j->pred.confidence, 0.25);
        ++siblings[j->key.klass].in_flight;  // it is one more in flight for the next of its klass
      }
      if (timed) count(Counter::timed_starts);
      start(*j, now, out);
      timed_on.reset();
      left -= need;
      busy += j->weight(cfg_.slots);
      free_slots = cfg_.slots - std::max(busy, js);
      continue;
    }
    j->where.remote_slot = false;
    if (j->queue.blocked_by_memory) ++mem_waiters_;
    else if (j->queue.blocked_by_cpu) ++cpu_waiters_;
    if (!shadow_tried) {
      // The first job that cannot start: later jobs may not delay it
      // unless that ends both sooner.
      shadow_tried = true;
      shadow = shadow_for(*j, std::max(j->pred.peak, j->peak_floor), left, free_slots, view, now);
    }
    if (fits_mem) continue;
    if (j->queue.blocked_since < 0) j->queue.blocked_since = now;
    if (j->queue.blocked_by_memory && !j->queue.waited_for_memory) {
      j->queue.waited_for_memory = true;
      count(Counter::waited_for_memory);
    }
    // Longest-first's guard for a head that has waited too long: its
    // memory is kept from later jobs. Packing's reservation for the head
    // already admits only what does not delay it; the guard on top held
    // back jobs that would have ended first (a core idle for 90 s of a
    // flash-attn build in plan's simulator).
    if (!shadow && starve_reserve == 0 && now - j->queue.blocked_since >= cfg_.starvation_s) starve_reserve = need;
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
  any_memory_blocked_ = mem_waiters_ > 0;
  any_cpu_blocked_ = cpu_waiters_ > 0;
}

bool Governor::under_pressure(const MemoryView& view) const {
  if (thrashing_) return true;
  for (const auto& [id, j] : active_)
    if (j->state == JobState::frozen || j->state == JobState::killing) return true;
  return view.build_used >= scale(effective_limit(view), cfg_.pressure.freeze_frac);
}

void Governor::set_jobserver(int held, bool client_seen) {
  js_held_ = std::max(0, held);
  js_client_ = client_seen;
}

int Governor::tokens_to_offer(const MemoryView& view, double now) const {
  TokenInputs in;
  in.slots = cfg_.slots;
  in.busy = busy_slots();
  in.held = js_held_;
  in.hold_back = under_pressure(view) || any_memory_blocked_;
  in.headroom = headroom(view);
  // A token's need: what the running jobs hold on average, else what the
  // waiting ones are predicted to need, else the configured guess.
  Bytes sum = 0;
  int n = 0;
  for (const auto& [id, j] : active_)
    if (j->state == JobState::running) sum += reservation(*j, now), ++n;
  if (n == 0)
    for (const auto& [id, j] : jobs_)
      if (j.state == JobState::waiting) sum += std::max(j.pred.peak, j.peak_floor), ++n;
  in.per_token = n > 0 ? std::max<Bytes>(sum / n, 1) : cfg_.token_need;
  return memgate::tokens_to_offer(in);
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
  for (const auto& [id, r] : active_)
    if (r->state == JobState::running || r->state == JobState::killing) sh.add_running(*r, reservation(*r, now), now);
  sh.seal();
  if (!std::isfinite(sh.head_time())) return std::nullopt;
  return sh;
}

bool Governor::can_time(const GovJob& j, Bytes need, const MemoryView& view) const {
  // A rerun, or one whose prediction is only a guess, has no climb it can
  // count on; one bigger than the limit runs alone.
  return j.pred.envelope.rise.size() >= 2 && j.attempts == 0 && j.peak_floor == 0 && climb_s(j) > 0 &&
         need <= effective_limit(view);
}

Governor::Shadow Governor::timeline(const GovJob& j, Bytes need, Bytes left, int free_slots, double now) const {
  Shadow sh(j, need, left, free_slots, cfg_.slots, now);
  for (const auto& [id, r] : active_)
    if (r->state == JobState::running || r->state == JobState::killing) sh.add_running(*r, reservation(*r, now), now);
  sh.stretch(kTimedSlack);
  sh.seal();
  return sh;
}

double Governor::climb_s(const GovJob& j) {
  const Prediction& p = j.pred;
  double t = p.wall_s;
  if (p.cpu_s > 0) {
    const double on_slots = p.cpu_s / std::max(1, j.key.cpu_weight);
    t = t > 0 ? std::min(t, on_slots) : on_slots;
  }
  return t > 0 ? t / kTimedSlack : 0;
}

void Governor::Shadow::stretch(double f) {
  for (Release& r : releases_) r.t = now_ + std::max(0.0, r.t - now_) * f;
}

bool Governor::Shadow::climbs_in_time(const std::vector<double>& rise, Bytes need, double climb_s) const {
  const auto n = rise.size();
  if (n < 2 || !(climb_s > 0)) return false;
  Bytes mem = mem_;
  std::size_t a = 0;
  // Through the stretch from point i to i + 1 the job holds at most
  // rise[i + 1]; what is free there is at least what is free at its start.
  for (std::size_t i = 0; i + 1 < n; ++i) {
    const double t = now_ + climb_s * static_cast<double>(i) / static_cast<double>(n - 1);
    for (; a < releases_.size() && releases_[a].t <= t; ++a) mem += releases_[a].mem;
    if (scale(need, std::clamp(rise[i + 1], 0.0, 1.0)) > mem) return false;
  }
  return true;
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

void Governor::Shadow::envelope_releases(const Prediction& p, Bytes peak, Bytes& held, double x0, double t0,
                                         std::vector<Release>& out) {
  Envelope step;
  const Envelope& e = p.envelope.empty() ? (step = envelope_for(p)) : p.envelope;
  const auto n = e.at.size();
  for (std::size_t i = 1; i < n; ++i) {
    const double x = static_cast<double>(i) / static_cast<double>(n - 1);
    if (x <= x0) continue;
    const Bytes keep = std::min(held, scale(peak, e.at[i] * kAfterPeakMargin));
    if (keep >= held) continue;
    out.push_back({t0 + (x - x0) * p.wall_s, held - keep, 0});
    held = keep;
  }
}

void Governor::Shadow::add_running(const GovJob& r, Bytes held, double now) {
  const Prediction& p = r.pred;
  if (p.wall_s <= 0) return;
  // From its progress on, at its predicted speed: a job slowed by
  // contention (its CPU progress behind its wall time) ends later.
  const double done = std::max(0.0, work_done(r, now));
  const double x0 = std::min(done, 1.0);
  if (r.state == JobState::running && x0 < 1.0 && envelope_gives_back(p) >= kReleaseWorthTracking)
    envelope_releases(p, std::max({p.peak, r.peak_floor, r.run.attempt_peak}), held, envelope_x(r, x0), now,
                      releases_);
  // Past its predicted time, when it ends is not known: it is taken to
  // run on by as much again as it has overrun (a tenth of its time at
  // least), so the head's moment recedes as the evidence grows. Taken to
  // end a tenth of its time from now at every step, a real nvcc kernel
  // that ran 214 CPU-s for a predicted 137 on a slower machine than its
  // prior's kept the head's moment always close, and a forward kernel that
  // fit beside its tail waited two minutes for the head (bench/real-kernels);
  // taken to give nothing back, the head could not be told at all and
  // longest-first's guard held the same memory.
  const double left = done >= 1.0 ? std::max(0.1, done - 1.0) : 1.0 - x0;
  releases_.push_back({std::max({r.run.start_t + p.wall_s, now + 0.1 * p.wall_s, now + left * p.wall_s}), held,
                       r.weight(slots_)});
}

void Governor::Shadow::seal() {
  std::stable_sort(releases_.begin(), releases_.end(), [](const Release& x, const Release& y) { return x.t < y.t; });
  head_t_ = fit_time(need_, w_, now_, {}, 0, 0);
}

void Governor::Shadow::releases_of(const Prediction& p, Bytes need, int w, double start, std::vector<Release>& out) {
  if (p.wall_s <= 0) return;  // it may run for ever: gives nothing back
  Bytes held = need;
  envelope_releases(p, p.peak, held, 0, start, out);
  out.push_back({start + p.wall_s, held, w});
}

double Governor::Shadow::head_time() const { return head_t_; }

double Governor::Shadow::fit_time(Bytes need, int w, double from, const std::vector<Release>& extra, Bytes taken_mem,
                                  int taken_slots) const {
  Bytes mem = mem_ - taken_mem;
  int slots = free_slots_ - taken_slots;
  size_t a = 0, b = 0;  // releases_ and extra (each sorted), merged
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
// key, see with_engine). An offloaded job stays the engine's if it is ever
// rerun.
void Governor::offload_jobs(std::vector<GovJob*>& queue, Bytes& left, double now, Decisions& out) {
  if (cfg_.offload.engine.empty() || cfg_.offload.slots <= 0) return;
  // The engine's remote slots are shared with the jobs the build itself
  // sends there (CC="distcc gcc" and --offload distcc).
  int busy = remote_busy(cfg_.offload.engine);
  for (GovJob* j : queue) {
    if (busy >= cfg_.offload.slots) return;
    if (j->state != JobState::waiting || !j->queue.blocked_by_memory || j->where.placement != Placement::local ||
        !cfg_.offload.takes || !cfg_.offload.takes(j->key))
      continue;
    JobKey key = with_engine(j->where.local_key, cfg_.offload.engine);
    Prediction pred = predict_(key);
    if (pred.peak > left) continue;
    event(now, EventKind::offload, j->id,
          fmt::format("{} needs {}, more than is free here; sent to {}", j->key.stem,
                      format_bytes(std::max(j->pred.peak, j->peak_floor)), cfg_.offload.engine));
    j->key = key;
    j->pred = pred;
    j->peak_floor = 0;  // what it needed here is not what its client needs
    j->where.placement = Placement::offloaded;
    j->where.engine = cfg_.offload.engine;
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
    if (j.state != JobState::waiting || now - j.queue.queued_t < cfg_.decline_after_s) continue;
    leave_queue(j);
    j.state = JobState::done;
    tell(JobFact::of(JobFact::Kind::left, id, now, now - j.queue.queued_t).named(j));
    count(Counter::declined);
    event(now, EventKind::decline, id, fmt::format("waited {:.1f} s for memory; declined", now - j.queue.queued_t));
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

Governor::LiveSiblings Governor::live_siblings(const std::string& klass, double now) const {
  LiveSiblings s;
  if (auto it = finished_by_klass_.find(klass); it != finished_by_klass_.end()) s.confirmed = it->second;
  for (const auto& [id, rp] : active_) {
    const GovJob& r = *rp;
    if (r.key.klass != klass) continue;
    if (r.state != JobState::running && r.state != JobState::frozen) continue;
    const bool falling = r.run.attempt_peak > 0 && r.run.current < scale(r.run.attempt_peak, 0.9);
    if (falling) ++s.confirmed;
    else if (r.queue.speculative) ++s.in_flight;
    // Only a sibling past its peak shows a peak: one still rising shows
    // what it has got to so far (an nvcc job rises for half its life, and a
    // job on a loaded machine is slow to get its memory).
    if (!falling || now - r.run.start_t < cfg_.live.min_s) continue;
    const double w = static_cast<double>(r.run.attempt_peak) / r.weight(cfg_.slots) * cfg_.live.margin_falling;
    s.best_w = std::max(s.best_w, w);
  }
  return s;
}

Bytes Governor::cold_need(const GovJob& j, const LiveSiblings& s) const {
  if (!weak_guess(j.pred) || j.attempts > 0) return 0;  // a job that was killed knows better
  if (s.best_w <= 0 || s.in_flight >= std::max(1, s.confirmed)) return 0;
  return std::max(j.peak_floor, static_cast<Bytes>(std::llround(s.best_w * std::max(1, j.key.cpu_weight))));
}

}  // namespace memgate
