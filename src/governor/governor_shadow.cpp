// Packing's timeline (governor_shadow.hpp): what the running jobs give
// back and when, the moment the head fits, whether a job that would delay
// it starts (the two jobs' ends, or the small queue's look-ahead), and the
// timeline a timed start's climb is checked against; and the governor's
// side of it (its head's shadow, its timed starts). Admission itself:
// governor_admit.cpp.
#include "governor/governor_shadow.hpp"

#include <algorithm>
#include <cmath>
#include <span>
#include <vector>

#include "governor/governor.hpp"
#include "governor/governor_detail.hpp"
#include "predict/envelope.hpp"
#include "util/size.hpp"

namespace memgate {

using namespace governor_detail;

// The head's reservation: what is free now, and what every running job
// gives back by its prediction. A job whose duration is unknown gives back
// nothing (it may run for ever); one that has overrun its prediction is
// taken to need a tenth of it more. None when the head's moment cannot be
// told, or it needs more than the whole limit (it will run alone).
std::optional<Shadow> Governor::shadow_for(const GovJob& head, Bytes need, Bytes left, int free_slots,
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

Shadow Governor::timeline(const GovJob& j, Bytes need, Bytes left, int free_slots, double now) const {
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

void Shadow::stretch(double f) {
  for (Release& r : releases_) r.t = now_ + std::max(0.0, r.t - now_) * f;
}

bool Shadow::climbs_in_time(const std::vector<double>& rise, Bytes need, double climb_s) const {
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

Shadow::Shadow(const GovJob& head, Bytes need, Bytes free_mem, int free_slots, int slots, double now)
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

void Shadow::envelope_releases(const Prediction& p, Bytes peak, Bytes& held, double x0, double t0,
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

void Shadow::add_running(const GovJob& r, Bytes held, double now) {
  const Prediction& p = r.pred;
  if (p.wall_s <= 0) return;
  // From its progress on, at its predicted speed: a job slowed by
  // contention (its CPU progress behind its wall time) ends later.
  const double done = std::max(0.0, Governor::work_done(r, now));
  const double x0 = std::min(done, 1.0);
  if (r.state == JobState::running && x0 < 1.0 && envelope_gives_back(p) >= kReleaseWorthTracking)
    envelope_releases(p, std::max({p.peak, r.peak_floor, r.run.attempt_peak}), held, Governor::envelope_x(r, x0), now,
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

void Shadow::seal() {
  std::stable_sort(releases_.begin(), releases_.end(), [](const Release& x, const Release& y) { return x.t < y.t; });
  head_t_ = fit_time(need_, w_, now_, {}, 0, 0);
}

void Shadow::releases_of(const Prediction& p, Bytes need, int w, double start, std::vector<Release>& out) {
  if (p.wall_s <= 0) return;  // it may run for ever: gives nothing back
  Bytes held = need;
  envelope_releases(p, p.peak, held, 0, start, out);
  out.push_back({start + p.wall_s, held, w});
}

double Shadow::head_time() const { return head_t_; }

double Shadow::fit_time(Bytes need, int w, double from, const std::vector<Release>& extra, Bytes taken_mem,
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

bool Shadow::admits(const GovJob& j, Bytes need, double now, std::span<GovJob* const> queue) {
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
    // (once the head is past its peak or done)? By the two jobs' ends,
    // and, while few jobs wait, by the end of all of them.
    double end_now = kNever, end_later = kNever;
    if (const auto ahead = look_ahead(queue, j); !ahead.empty()) {
      const Planned job{&p, need, w}, head{&head_->pred, need_, w_};
      std::vector<Planned> now_order{head}, later_order{head};
      for (const GovJob* q : ahead) {
        const Planned x = q == &j ? job : Planned{&q->pred, std::max(q->pred.peak, q->peak_floor), q->weight(slots_)};
        if (q != &j) now_order.push_back(x);
        later_order.push_back(x);
      }
      if (std::find(ahead.begin(), ahead.end(), &j) == ahead.end()) later_order.push_back(job);
      end_now = finish(&job, now_order);
      end_later = finish(nullptr, later_order);
    }
    if (!std::isfinite(end_now) || !std::isfinite(end_later)) {
      // The two jobs alone, walked in place: a long queue asks this at
      // every step with hundreds running, and finish() copies the
      // timeline.
      end_now = std::max(t1 + head_wall, now + p.wall_s);
      std::vector<Release> head;
      releases_of(head_->pred, need_, w_, t0, head);  // in time order
      end_later = std::max(t0 + head_wall, fit_time(need, w, t0, head, need_, w_) + p.wall_s);
    }
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

std::vector<const GovJob*> Shadow::look_ahead(std::span<GovJob* const> queue, const GovJob& j) const {
  std::vector<const GovJob*> out;
  for (const GovJob* q : queue) {
    if (q->state != JobState::waiting || q == head_) continue;
    // A job of unknown duration has no end to count; a long queue's jobs
    // fill what either choice leaves idle, and weighing them all would
    // cost each step the queue.
    if (out.size() + 2 > kLookAhead || (q != &j && q->pred.wall_s <= 0)) return {};
    out.push_back(q);
  }
  return out;
}

double Shadow::finish(const Planned* first, const std::vector<Planned>& order) const {
  const auto later = [](const Release& x, const Release& y) { return x.t > y.t; };
  std::vector<Release> heap = releases_;
  std::make_heap(heap.begin(), heap.end(), later);
  Bytes mem = mem_;
  int slots = free_slots_;
  double t = now_, end = now_;
  std::vector<Release> gives;
  const auto run = [&](const Planned& x) {
    mem -= x.need;
    slots -= x.w;
    end = std::max(end, t + x.pred->wall_s);
    gives.clear();
    releases_of(*x.pred, x.need, x.w, t, gives);
    for (const Release& r : gives) {
      heap.push_back(r);
      std::push_heap(heap.begin(), heap.end(), later);
    }
  };
  if (first) run(*first);
  for (const Planned& x : order) {
    for (;;) {
      for (; !heap.empty() && heap.front().t <= t; heap.pop_back()) {
        mem += heap.front().mem;
        slots += heap.front().slots;
        std::pop_heap(heap.begin(), heap.end(), later);
      }
      if (x.need <= mem && x.w <= slots) break;
      if (heap.empty()) return kNever;
      t = heap.front().t;
    }
    run(x);
  }
  return end;
}

}  // namespace memgate
