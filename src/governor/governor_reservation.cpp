// What a job holds: its progress (by CPU where it can be read), where on
// its envelope it is, its reservation, and what the build has left once
// every running job's reservation and the overhead are counted. Admission
// (governor_admit.cpp), packing's timeline (governor_shadow.cpp) and
// pressure (governor_pressure.cpp) all read memory through these.
#include <algorithm>
#include <cmath>

#include "governor/governor.hpp"
#include "governor/governor_detail.hpp"
#include "predict/envelope.hpp"
#include "util/size.hpp"

namespace memgate {

using namespace governor_detail;

Bytes Governor::effective_limit(const MemoryView& view) const {
  return std::max<Bytes>(0, std::min(cfg_.budget, cfg_.hard_limit - view.outside));
}

double Governor::work_done(const GovJob& j, double now, bool* by_cpu) {
  const Prediction& p = j.pred;
  if (by_cpu) *by_cpu = false;
  if (j.run.start_t < 0) return -1;
  if (p.cpu_s > 0 && j.run.cpu_s >= 0) {
    if (by_cpu) *by_cpu = true;
    return std::max(0.0, j.run.cpu_s / p.cpu_s);
  }
  if (p.wall_s > 0) return std::max(0.0, (now - j.run.start_t) / p.wall_s);
  return -1;
}

double Governor::progress(const GovJob& j, double now, bool* by_cpu) {
  const double x = work_done(j, now, by_cpu);
  return x < 0 ? x : std::min(x, 1.0);
}

// A guess from other jobs has their shape, not their timing: its CPU time
// is theirs, and they peak at another share of it. A cold flash-attn
// build's forward kernels took the backward kernels' 37 CPU-s for their
// 29, and the backward kernels' envelope peaks at 46% where theirs do at
// 28%: the first of them held its whole peak long after its memory had
// halved, and ran alone for 18 s. Once a job's memory has halved
// from its peak, the envelope is read from its own peak on: the
// envelope's peak is where the job's was. Own history's timing is the
// job's own, and stays. A second peak the guess did not foresee is what
// freeze and requeue are for, as for every guess.
//
// A job's own record has its timing, on a CPU clock that contention
// bends: on 2 SMT cores a flash-attn kernel took 321 CPU-s beside another
// and about 140 alone, so the same kernel run alone the next time was at
// a third of its recorded CPU time when its memory fell, and held its
// peak to 39% of that, alone, for 70 s more (bench/real-kernels). Where
// the record knows where its memory first fell below half its peak after
// reaching 90% of it (Envelope::fall_x), a job whose memory has done the
// same is read from there on: x' = max(x, fall + (x - its own fall)).
// Only that first fall is matched, so a later peak the record had is
// still ahead of it.
double Governor::envelope_x(const GovJob& j, double x) {
  const PredictionSource src = j.pred.source;
  const bool from_others =
      src == PredictionSource::similar || src == PredictionSource::build || src == PredictionSource::fallback;
  if (!from_others) {
    const double fall = j.pred.envelope.fall_x;
    if (fall < 0 || j.run.fall_x < 0 || x < j.run.fall_x) return x;
    return std::min(1.0, std::max(x, fall + (x - j.run.fall_x)));
  }
  if (j.run.peak_x < 0 || x <= j.run.peak_x) return x;
  if (j.run.current >= scale(j.run.attempt_peak, 0.5)) return x;
  return std::min(1.0, std::max(x, envelope_peak_end(j.pred) + (x - j.run.peak_x)));
}

Bytes Governor::reservation(const GovJob& j, double now) const {
  if (j.state == JobState::killing) return j.run.current;
  Bytes pred = std::max(j.pred.peak, j.peak_floor);
  const Prediction& p = j.pred;
  bool falling = j.run.current < scale(j.run.attempt_peak, 0.9);
  bool by_cpu = false;
  const double x = progress(j, now, &by_cpu);
  // A prediction the job's own curve corrected: it outgrew it (it holds
  // its peak with room to grow), or it was a weak guess the job ran
  // live.min_s under half of and whose memory has since halved (a dip is
  // not a fall: see live_siblings) (it holds its peak with
  // the margin cold admission gives a rising sibling; a second, higher
  // peak is what freeze and requeue are for; a first job guessed above
  // the budget runs alone otherwise, for its whole life). Its size was
  // wrong, not (as far as anything knows) its shape: once its memory has
  // halved from its peak, the envelope holds, scaled to that peak. A cold
  // flash-attn build's backward kernels outgrew their guesses and held
  // 1.2 times their peaks to their ends, each running alone. A job with
  // neither envelope nor clock (a default) keeps the hold, unless its
  // klass's profiles say what such a job uses once its memory has halved
  // (Prediction::fallen_share): then, while its memory stays halved, that
  // share of its peak. Should it climb again, the hold is back at once, and
  // the job started beside it is frozen, as any job is that memory runs
  // short for.
  Bytes shown = 0, hold = 0;
  bool outgrown = false;
  if (j.run.attempt_peak > pred) {
    shown = j.run.attempt_peak;
    hold = std::max(j.run.current, scale(shown, kOvershootGrowth));
    outgrown = true;
  } else if (weak_guess(p) && j.peak_floor == 0 && past_own_peak(j, now) && j.run.attempt_peak < scale(pred, 0.5)) {
    shown = j.run.attempt_peak;
    hold = std::max(j.run.current, scale(shown, cfg_.live.margin_rising));
  }
  if (shown > 0) {
    if (x > 0 && (by_cpu || falling) && j.run.current < scale(shown, 0.5)) {
      const double f = envelope_at(p, envelope_x(j, x));
      if (f < 1.0) return std::max(j.run.current, std::min(hold, scale(shown, f * kAfterPeakMargin)));
    }
    if (outgrown && x < 0 && p.fallen_share > 0 && past_own_peak(j, now))
      return std::max(j.run.current, std::min(hold, scale(shown, p.fallen_share * kAfterPeakMargin)));
    return hold;
  }
  // The envelope: what the job still uses from its progress on. It
  // releases only once the job has shown its peak: a prediction that came
  // true, or one that came half true and the job's memory has since
  // halved (a guess from a sibling is often high: a 3.07 GiB kernel
  // guessed at 3.97 GiB, past its peak and down to 1 GiB, held 3.97 GiB
  // for the rest of its life and ran alone). Where progress is wall time,
  // which contention slows, only while its memory is falling too.
  const bool saw_peak = j.run.attempt_peak >= scale(pred, 0.8) ||
                        (j.run.attempt_peak >= scale(pred, 0.5) && j.run.current < scale(j.run.attempt_peak, 0.5));
  if (x > 0 && saw_peak && (by_cpu || falling)) {
    const double f = envelope_at(p, envelope_x(j, x));
    if (f < 1.0) return std::max(j.run.current, std::min(pred, scale(pred, f * kAfterPeakMargin)));
  }
  return std::max(pred, j.run.current);
}

Bytes Governor::overhead(const MemoryView& view) const {
  Bytes jobs = 0;
  for (const auto& [id, j] : active_) jobs += j->run.current;
  return std::max<Bytes>(0, view.build_used - jobs);
}

Bytes Governor::headroom(const MemoryView& view) const {
  Bytes reserved = 0;
  for (const auto& [id, j] : active_) reserved += reservation(*j, last_t_);
  return effective_limit(view) - overhead(view) - reserved;
}

}  // namespace memgate
