// Admission on the future-max envelope (predict/envelope.hpp) at a job's
// CPU progress, driven with fake predictions, readings and clock.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <utility>

#include "governor/governor.hpp"
#include "predict/envelope.hpp"

using namespace memgate;

namespace {

struct Env {
  std::map<std::string, Prediction> preds;
  GovernorConfig cfg;
  std::unique_ptr<Governor> gov;
  explicit Env(Bytes budget) {
    cfg.budget = cfg.hard_limit = budget;
    cfg.slots = 16;
  }
  Governor& g() {
    if (!gov) gov = std::make_unique<Governor>(cfg, [this](const JobKey& k) { return preds.at(k.identity); });
    return *gov;
  }
  JobId submit(const std::string& id, const Prediction& p) {
    preds[id] = p;
    JobKey k;
    k.identity = id;
    return g().submit(k, 0);
  }
  JobId submit_plain(const std::string& id, Bytes peak) {
    Prediction p;
    p.peak = peak;
    p.source = PredictionSource::history;
    p.confidence = 1;
    return submit(id, p);
  }
};

// A job of 100 s, wall and CPU, predicted at `peak` from `source`.
Prediction guess(Bytes peak, Envelope envelope, PredictionSource source, double confidence) {
  Prediction p;
  p.peak = peak;
  p.wall_s = 100;
  p.cpu_s = 100;
  p.envelope = std::move(envelope);
  p.source = source;
  p.confidence = confidence;
  return p;
}

MemoryView used(Bytes b) {
  MemoryView v;
  v.build_used = b;
  return v;
}

}  // namespace

TEST(Governor, AJobAtHalfSpeedKeepsItsReservationUntilItsCpuProgressPassesTheDecline) {
  // Predicted: 100 s and 100 s of CPU; the envelope falls to 15% of the
  // peak at 30% of the work. Contention gives the job half a core.
  Env f(2 * GiB);
  JobId a = f.submit("nvcc", guess(1536 * MiB, step_envelope(0.3, 0.15), PredictionSource::history, 1));
  JobId b = f.submit_plain("b", 1 * GiB);
  EXPECT_EQ(f.g().step(used(0), 0).admit, std::vector<JobId>{a});
  f.g().sample(a, 1500 * MiB, 1500 * MiB, 20, 10);
  EXPECT_TRUE(f.g().step(used(1500 * MiB), 20).admit.empty());
  // 40 s in: past 30% of its predicted wall time, falling, but only 20%
  // of its work is done: the envelope is still at the peak.
  f.g().sample(a, 300 * MiB, 1500 * MiB, 40, 20);
  EXPECT_DOUBLE_EQ(Governor::progress(f.g().job(a), 40), 0.2);
  EXPECT_GE(f.g().reservation(f.g().job(a), 40), 1536 * MiB);
  EXPECT_TRUE(f.g().step(used(300 * MiB), 40).admit.empty()) << "released on wall time";
  f.g().sample(a, 300 * MiB, 1500 * MiB, 58, 29);
  EXPECT_TRUE(f.g().step(used(300 * MiB), 58).admit.empty());
  // 70 s in, 35% of its work done: past the decline.
  f.g().sample(a, 300 * MiB, 1500 * MiB, 70, 35);
  const Bytes held = f.g().reservation(f.g().job(a), 70);
  EXPECT_LT(held, 400 * MiB);
  EXPECT_GE(held, 300 * MiB);  // never below what it uses
  EXPECT_EQ(f.g().step(used(300 * MiB), 70).admit, std::vector<JobId>{b});
  // What it gave back is counted: (1536 - 300) MiB for the next 10 s.
  EXPECT_EQ(f.g().counters().at(Counter::released_mib_s), 0);
  f.g().step(used(1324 * MiB), 80);
  EXPECT_EQ(f.g().counters().at(Counter::released_mib_s), (1536 - 300) * 10);
}

TEST(Governor, AJobPastAGradualDeclineHoldsWhatItsEnvelopeStillPredicts) {
  // The envelope falls step by step; what the job holds follows it, and
  // never drops below what it uses now.
  Env f(8 * GiB);
  Prediction p;
  p.peak = 4 * GiB;
  p.wall_s = 100;
  p.cpu_s = 100;
  p.envelope = sanitized_envelope({1, 1, 0.8, 0.6, 0.4, 0.2});  // x = 0, 0.2, ..., 1
  f.preds["j"] = p;
  JobKey k;
  k.identity = "j";
  JobId a = f.g().submit(k, 0);
  f.g().step(used(0), 0);
  f.g().sample(a, 4 * GiB, 4 * GiB, 30, 30);
  EXPECT_GE(f.g().reservation(f.g().job(a), 30), 4 * GiB);
  f.g().sample(a, 1 * GiB, 4 * GiB, 50, 50);  // x = 0.5: the point at 0.4 holds, E = 0.8
  EXPECT_NEAR(static_cast<double>(f.g().reservation(f.g().job(a), 50)), 4.0 * GiB * 0.8 * 1.1, 1e6);
  f.g().sample(a, 3 * GiB, 4 * GiB, 85, 85);  // x = 0.85: E = 0.4, but it uses 3 GiB
  EXPECT_EQ(f.g().reservation(f.g().job(a), 85), 3 * GiB);
}

TEST(Governor, AJobThatPeakedWellUnderItsGuessReleasesOnceItsMemoryHalves) {
  // Guessed at 4 GiB from a sibling (the bench's cold flash-real run: a
  // 3.07 GiB kernel guessed at 3.97 GiB), it peaks at 3.1 GiB, 78% of the
  // guess: not the guess come true, not a guess its curve refutes. Past
  // the envelope's decline by CPU it holds the whole guess while its
  // memory stays near the peak, and lets go once that has halved.
  Env f(6 * GiB);
  JobId a = f.submit("fwd", guess(4 * GiB, step_envelope(0.3, 0.2), PredictionSource::similar, 0.5));
  JobId b = f.submit_plain("next", 3900 * MiB);
  EXPECT_EQ(f.g().step(used(0), 0).admit, std::vector<JobId>{a});
  f.g().sample(a, 3174 * MiB, 3174 * MiB, 25, 25);
  EXPECT_TRUE(f.g().step(used(3174 * MiB), 25).admit.empty());
  // x = 0.4, past the decline, but still at 2 GiB: above half its peak.
  f.g().sample(a, 2 * GiB, 3174 * MiB, 40, 40);
  EXPECT_GE(f.g().reservation(f.g().job(a), 40), 4 * GiB);
  EXPECT_TRUE(f.g().step(used(2 * GiB), 40).admit.empty());
  // Down to 1 GiB: it has shown its peak. It holds what it uses, never
  // less; the envelope's 4 GiB x 0.2 x 1.1 is below that.
  f.g().sample(a, 1 * GiB, 3174 * MiB, 45, 45);
  EXPECT_EQ(f.g().reservation(f.g().job(a), 45), 1 * GiB);
  EXPECT_EQ(f.g().step(used(1 * GiB), 45).admit, std::vector<JobId>{b});
}

TEST(Governor, AJobThatOutgrewItsGuessTakesItsEnvelopeScaledToItsPeakOnceItHalves) {
  // Guessed at 5.9 GiB from a sibling of this build, whose envelope falls
  // to 20% at 30% of the work, it peaks at 6.35 GiB: it holds 1.2 times
  // that while it may still grow, and after its memory has halved the
  // sibling's shape scaled to its own peak, so the next job runs beside
  // its tail. Without an envelope (a default) the hold stays.
  for (const bool shaped : {true, false}) {
    SCOPED_TRACE(shaped);
    Env f(8 * GiB);
    JobId a = f.submit("bwd", guess(5900 * MiB, shaped ? step_envelope(0.3, 0.2) : Envelope{}, PredictionSource::build, 0.35));
    JobId b = f.submit_plain("fwd", 4 * GiB);
    EXPECT_EQ(f.g().step(used(0), 0).admit, std::vector<JobId>{a});
    const Bytes peak = 6500 * MiB;
    f.g().sample(a, peak, peak, 25, 25);
    EXPECT_EQ(f.g().reservation(f.g().job(a), 25), static_cast<Bytes>(std::llround(peak * 1.2)));
    EXPECT_TRUE(f.g().step(used(peak), 25).admit.empty());
    // x = 0.4, past the decline, but at 4 GiB: above half its peak.
    f.g().sample(a, 4 * GiB, peak, 40, 40);
    EXPECT_EQ(f.g().reservation(f.g().job(a), 40), static_cast<Bytes>(std::llround(peak * 1.2)));
    EXPECT_TRUE(f.g().step(used(4 * GiB), 40).admit.empty());
    // Down to 1.5 GiB: 6.35 GiB x 0.2 x 1.1 = 1.4 GiB, below what it uses.
    f.g().sample(a, 1536 * MiB, peak, 45, 45);
    if (shaped) {
      EXPECT_EQ(f.g().reservation(f.g().job(a), 45), 1536 * MiB);
      EXPECT_EQ(f.g().step(used(1536 * MiB), 45).admit, std::vector<JobId>{b});
    } else {
      EXPECT_EQ(f.g().reservation(f.g().job(a), 45), static_cast<Bytes>(std::llround(peak * 1.2)));
      EXPECT_TRUE(f.g().step(used(1536 * MiB), 45).admit.empty());
    }
  }
}

TEST(Governor, AWeakGuessItsCurveRefutedTakesItsEnvelopeScaledToItsPeakOnceItHalves) {
  // Guessed at 6.37 GiB from the klass (two backward kernels), a forward
  // kernel peaks at 3 GiB: once its memory has halved (a dip is not a
  // fall), it holds the klass's shape scaled to 3 GiB.
  Env f(8 * GiB);
  JobId a = f.submit("fwd", guess(6523 * MiB, step_envelope(0.3, 0.2), PredictionSource::build, 0.35));
  JobId b = f.submit_plain("next", 6 * GiB);
  EXPECT_EQ(f.g().step(used(0), 0).admit, std::vector<JobId>{a});
  f.g().sample(a, 3 * GiB, 3 * GiB, 20, 20);
  f.g().sample(a, 2 * GiB, 3 * GiB, 25, 25);  // a dip, not yet a fall: the guess holds
  EXPECT_EQ(f.g().reservation(f.g().job(a), 25), 6523 * MiB);
  // Halved at x = 0.28: read from its own peak on (0.2), the envelope's
  // decline (0.3) is behind it: what it uses now, over 3 GiB x 0.2 x 1.1.
  f.g().sample(a, 1400 * MiB, 3 * GiB, 28, 28);
  EXPECT_EQ(f.g().reservation(f.g().job(a), 28), 1400 * MiB);
  f.g().sample(a, 1 * GiB, 3 * GiB, 40, 40);  // x = 0.4, halved: 3 GiB x 0.2 x 1.1 = 0.66 GiB
  EXPECT_EQ(f.g().reservation(f.g().job(a), 40), 1 * GiB);
  EXPECT_EQ(f.g().step(used(1 * GiB), 40).admit, std::vector<JobId>{b});
}

TEST(Governor, OnlyAJobWhoseEnvelopeGivesBackEnoughHasItsCpuRead) {
  // The same shape (down to 25% at 30% of the work) on a 1 GiB job and a
  // 2 MB one: CPU progress is read for the first, whose release matters,
  // not for the second, which would pay a read per sample for 1.5 MB.
  Env f(8 * GiB);
  JobId ids[2];
  int n = 0;
  for (const Bytes peak : {1 * GiB, 2 * MiB}) {
    ids[n] = f.submit("job" + std::to_string(n), guess(peak, step_envelope(0.3, 0.25), PredictionSource::similar, 0.6));
    ++n;
  }
  EXPECT_TRUE(f.g().wants_cpu(ids[0]));
  EXPECT_FALSE(f.g().wants_cpu(ids[1]));
}

TEST(Governor, AGuessFromOthersReadsTheirEnvelopeFromItsOwnPeakOnceItHalves) {
  // Guessed from a sibling whose envelope peaks until half its work (and
  // whose 100 s of CPU it took), the job peaks at 20% of that and has
  // halved by 24%: it is past the envelope's peak by as much as past its
  // own, so the sibling's tail holds and the next job starts. A job
  // predicted from its own history keeps its own timing and holds on.
  for (const auto source : {PredictionSource::similar, PredictionSource::history}) {
    SCOPED_TRACE(static_cast<int>(source));
    Env f(6 * GiB);
    JobId a = f.submit("fwd", guess(4 * GiB, step_envelope(0.5, 0.2), source, source == PredictionSource::history ? 1 : 0.5));
    JobId b = f.submit_plain("next", 4 * GiB);
    ASSERT_EQ(f.g().step(used(0), 0).admit, std::vector<JobId>{a});
    f.g().sample(a, 3500 * MiB, 3500 * MiB, 20, 20);
    EXPECT_DOUBLE_EQ(f.g().job(a).run.peak_x, 0.2);
    EXPECT_TRUE(f.g().step(used(3500 * MiB), 20).admit.empty());
    f.g().sample(a, 1536 * MiB, 3500 * MiB, 24, 24);
    EXPECT_DOUBLE_EQ(f.g().job(a).run.peak_x, 0.2) << "its peak did not rise";
    if (source == PredictionSource::similar) {
      EXPECT_DOUBLE_EQ(Governor::envelope_x(f.g().job(a), 0.24), 15.0 / 31 + 0.04);
      EXPECT_EQ(f.g().reservation(f.g().job(a), 24), 1536 * MiB);
      EXPECT_EQ(f.g().step(used(1536 * MiB), 24).admit, std::vector<JobId>{b});
    } else {
      EXPECT_DOUBLE_EQ(Governor::envelope_x(f.g().job(a), 0.24), 0.24);
      EXPECT_EQ(f.g().reservation(f.g().job(a), 24), 4 * GiB);
      EXPECT_TRUE(f.g().step(used(1536 * MiB), 24).admit.empty());
    }
  }
}

// Its own record, taken beside another job on SMT cores (CPU time
// inflated), fell at 42% of its recorded CPU time; run alone, the job's
// memory falls at 24%. Matched at that fall, the record's tail holds and
// the next job starts. A record whose first fall comes before a second
// peak (the envelope at its fall still 1) keeps the job's peak held.
TEST(Governor, AnOwnRecordIsReadFromItsFallOnceTheJobsMemoryFallsAsItsDid) {
  for (const bool second_peak : {false, true}) {
    SCOPED_TRACE(second_peak);
    Env f(6 * GiB);
    Envelope e = second_peak ? step_envelope(0.7, 0.2) : step_envelope(0.4, 0.2);
    e.fall_x = second_peak ? 0.3 : 0.42;
    JobId a = f.submit("bwd", guess(4 * GiB, e, PredictionSource::history, 1));
    JobId b = f.submit_plain("next", 4 * GiB);
    ASSERT_EQ(f.g().step(used(0), 0).admit, std::vector<JobId>{a});
    f.g().sample(a, 3800 * MiB, 3800 * MiB, 20, 20);
    EXPECT_LT(f.g().job(a).run.fall_x, 0) << "at its peak";
    f.g().sample(a, 1536 * MiB, 3800 * MiB, 24, 24);
    EXPECT_DOUBLE_EQ(f.g().job(a).run.fall_x, 0.24);
    if (!second_peak) {
      EXPECT_DOUBLE_EQ(Governor::envelope_x(f.g().job(a), 0.24), 0.42);
      EXPECT_EQ(f.g().reservation(f.g().job(a), 24), 1536 * MiB);
      EXPECT_EQ(f.g().step(used(1536 * MiB), 24).admit, std::vector<JobId>{b});
    } else {
      EXPECT_DOUBLE_EQ(Governor::envelope_x(f.g().job(a), 0.24), 0.3);
      EXPECT_EQ(f.g().reservation(f.g().job(a), 24), 4 * GiB);
      EXPECT_TRUE(f.g().step(used(1536 * MiB), 24).admit.empty());
    }
  }
}

TEST(Governor, AGuessFromOthersStillNearItsPeakKeepsTheirTiming) {
  // The same guess, on a plateau at its peak long after it: nothing says
  // it is past it, so the envelope is read at its CPU progress.
  Env f(6 * GiB);
  JobId a = f.submit("fwd", guess(4 * GiB, step_envelope(0.5, 0.2), PredictionSource::similar, 0.5));
  f.g().step(used(0), 0);
  f.g().sample(a, 3500 * MiB, 3500 * MiB, 20, 20);
  f.g().sample(a, 3400 * MiB, 3500 * MiB, 40, 40);
  EXPECT_DOUBLE_EQ(Governor::envelope_x(f.g().job(a), 0.4), 0.4);
  EXPECT_GE(f.g().reservation(f.g().job(a), 40), 4 * GiB);
}

// A running job of 4 GiB, 20 s into 100, whose memory falls to a quarter
// at 30% of its work; 8 GiB in all. A job of 6 GiB does not fit beside
// it now.
namespace {
Prediction falls_at_30(Bytes peak) { return guess(peak, step_envelope(0.3, 0.25), PredictionSource::history, 1); }
// 100 s, flat at its peak once it gets there; it climbs linearly to it by
// progress `top`.
Prediction climbs_to(Bytes peak, double top) {
  Prediction p = guess(peak, Envelope{}, PredictionSource::history, 1);
  p.envelope.at.assign(kEnvelopePoints, 1.0);
  p.envelope.rise.resize(kEnvelopePoints);
  for (int i = 0; i < kEnvelopePoints; ++i)
    p.envelope.rise[i] = std::min(1.0, static_cast<double>(i) / (kEnvelopePoints - 1) / top);
  return p;
}
// Starts the running job, and reads it 20 s in at its 4 GiB peak.
JobId at_its_peak_20s_in(Env& f) {
  const JobId a = f.submit("a", falls_at_30(4 * GiB));
  EXPECT_EQ(f.g().step(used(0), 0).admit, std::vector<JobId>{a});
  f.g().sample(a, 4 * GiB, 4 * GiB, 20, 20);
  return a;
}
}  // namespace

TEST(Governor, AJobWhoseClimbMeetsTheRunningJobsFallStartsBeforeItsPeakFits) {
  Env f(8 * GiB);
  at_its_peak_20s_in(f);
  // It reaches its peak at half its life: 4 GiB (two thirds of its peak)
  // a third of the way, long after the running job's fall (10 s away, or
  // 11.5 s with the slack) has left 6.9 GiB free.
  JobId b = f.submit("b", climbs_to(6 * GiB, 0.5));
  EXPECT_EQ(f.g().step(used(4 * GiB), 20).admit, std::vector<JobId>{b});
  EXPECT_EQ(f.g().counters().at(Counter::timed_starts), 1);
}

TEST(Governor, AJobThatWouldReachItsPeakBeforeTheRunningJobsFallWaits) {
  Env f(8 * GiB);
  const JobId a = at_its_peak_20s_in(f);
  // At its peak by 5% of its life (4.3 s at its fastest): before the fall.
  JobId b = f.submit("b", climbs_to(6 * GiB, 0.05));
  EXPECT_TRUE(f.g().step(used(4 * GiB), 20).admit.empty());
  // A climb nothing has measured (a guess from other jobs) is not timed.
  Prediction unknown = climbs_to(6 * GiB, 0.5);
  unknown.envelope.rise.clear();
  f.submit("c", unknown);
  EXPECT_TRUE(f.g().step(used(4 * GiB), 20.5).admit.empty());
  EXPECT_EQ(f.g().counters().at(Counter::timed_starts), 0);
  // Once the running job has fallen, the first one fits outright.
  f.g().sample(a, 1 * GiB, 4 * GiB, 34, 34);
  EXPECT_EQ(f.g().step(used(1 * GiB), 34).admit, std::vector<JobId>{b});
  EXPECT_EQ(f.g().counters().at(Counter::timed_starts), 0);
}


// A timed start is weighed by the two jobs alone, not by the small
// queue's look-ahead, which places jobs by their whole need and cannot
// see the climb it counts on. Two slots, the running job as above; H
// (6 GiB) waits for its fall; T climbs to 5 GiB in time for that fall, so
// it could start now, but holding 5 GiB it would keep H out until it
// ends. By the two jobs, T waits (both end by about 200 s, not 220 s);
// with C behind them the look-ahead would start it (the queue would end
// by about 220 s, not 230 s). Such starts, admitted on the look-ahead,
// were then frozen in plan's simulator (bench/sim-ab).
TEST(Governor, ATimedStartIsWeighedByTheTwoJobsAlone) {
  Env f(8 * GiB);
  f.cfg.slots = 2;
  at_its_peak_20s_in(f);
  const JobId h = f.submit("h", falls_at_30(6 * GiB));
  const JobId t = f.submit("t", climbs_to(5 * GiB, 0.5));
  f.submit("c", falls_at_30(2 * GiB));
  const Decisions d = f.g().step(used(4 * GiB), 20);
  EXPECT_EQ(std::count(d.admit.begin(), d.admit.end(), t), 0);
  EXPECT_EQ(std::count(d.admit.begin(), d.admit.end(), h), 0);
  EXPECT_TRUE(f.g().job(t).queue.blocked_by_memory);
  EXPECT_EQ(f.g().counters().at(Counter::timed_starts), 0);
}
