// Admission: which waiting jobs start now (longest-first or packing),
// cold admission on live siblings, offloading to an engine and declining.
// Packing's timeline: governor_shadow.cpp; pressure: governor_pressure.cpp;
// exits, learning and the rest: governor.cpp.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <span>
#include <unordered_map>

#include "core/job_class.hpp"
#include "governor/governor.hpp"
#include "governor/governor_detail.hpp"
#include "governor/governor_shadow.hpp"
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
  bool blocked_before = false;  // a job ahead in the queue could not start this step
  // The room start's turn behind a head that could not start: taken by the
  // first guess behind a head that is no guess (see below).
  bool room_behind = false;
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
    // A room start: the head, when it is a guess. When the head is no guess
    // (this build's own siblings measured it) and does not fit, the room
    // would only freeze it at the room's edge; the turn goes to the first
    // guess behind it, a job whose kind nothing here has measured, and
    // what it shows is what the rest of its kind are admitted on. A cold
    // flash-attn build ran its backward kernels, measured, one after the
    // other, each alone while it climbed, and guessed its forward kernels
    // at the backward kernels' 6.4 GiB until the first of them ended,
    // 200 s in (flash-real, full, cold); a 4.5 GiB forward kernel fits in
    // a backward kernel's tail.
    bool room = false;
    const bool room_turn = !blocked_before || room_behind;
    if (fits_cpu && !fits_mem && !pressure && room_turn && starve_reserve == 0 && weak_guess(j->pred) &&
        j->attempts == 0 && need > 0) {
      room_behind = false;
      if (left >= scale(need, kRoomShare) && room_start_open(now)) fits_mem = room = true;
    }
    // Packing: a job that would delay the reserved one waits as if it did
    // not fit (for what the reserved one waits for). A timed start is
    // weighed by the two jobs alone: it already counts on the running
    // jobs' falls, and the look-ahead, which places jobs by their whole
    // need, cannot see the climb it bets on (admitted on the look-ahead,
    // such starts were frozen in plan's simulator).
    bool held = fits_cpu && fits_mem && shadow && !room &&
                !shadow->admits(*j, need, now, timed ? std::span<GovJob* const>{} : std::span<GovJob* const>(queue));
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
      if (room) {
        j->run.in_room = true;
        count(Counter::room_starts);
      }
      timed_on.reset();
      left -= need;
      busy += j->weight(cfg_.slots);
      free_slots = cfg_.slots - std::max(busy, js);
      continue;
    }
    j->where.remote_slot = false;
    if (!blocked_before) room_behind = !weak_guess(j->pred);
    blocked_before = true;
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

bool Governor::past_own_peak(const GovJob& r, double now) const {
  return r.run.attempt_peak > 0 && now - r.run.start_t >= cfg_.live.min_s &&
         r.run.current < scale(r.run.attempt_peak, 0.5);
}

bool Governor::room_start_open(double now) const {
  int running = 0;
  for (const auto& [id, r] : active_) {
    if (r->run.in_room) return false;
    if (r->state != JobState::running) continue;
    if (!past_own_peak(*r, now)) return false;
    ++running;
  }
  return running > 0;
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
    const bool past = r.run.attempt_peak > 0 && r.run.current < scale(r.run.attempt_peak, 0.5);
    if (past) ++s.confirmed;
    else if (r.queue.speculative) ++s.in_flight;
    // Only a sibling past its peak (its memory halved from it) shows a
    // peak: one still rising shows what it has got to so far (an nvcc job
    // rises for half its life, and a job on a loaded machine is slow to
    // get its memory). A dip is not a fall: nvcc's front end reaches 0.65
    // GiB in its first seconds and drops to 0.48 before cicc climbs to 6
    // GiB, and a forward kernel admitted on that 0.65 x 1.15 was frozen
    // on flash-real's cold run.
    if (!past || now - r.run.start_t < cfg_.live.min_s) continue;
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
