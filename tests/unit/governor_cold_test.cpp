// Cold admission on live siblings, driven with fakes (governor_fixture.hpp).
#include <gtest/gtest.h>

#include <cmath>

#include "governor_fixture.hpp"

using namespace memgate;
using namespace memgate::governor_test;

namespace {

JobId submit_cold(Fixture& f, const std::string& id, const std::string& klass, Bytes default_peak,
                  PredictionSource source = PredictionSource::fallback, double confidence = 0) {
  Prediction p;
  p.peak = default_peak;
  p.source = source;
  p.confidence = confidence;
  f.preds[id] = p;
  JobKey k;
  k.identity = id;
  k.klass = klass;
  return f.g().submit(k, 0);
}

}  // namespace

TEST(ColdAdmission, AWaitingJobStartsOnTheLivePeakOfASiblingPastIt) {
  Fixture f(6 * GiB);
  const std::string nvcc = "nvcc:compile[sm_80]";
  JobId a = submit_cold(f, "a", nvcc, 4 * GiB);
  JobId b = submit_cold(f, "b", nvcc, 4 * GiB);
  ASSERT_EQ(f.g().step(used(0), 0).admit, std::vector<JobId>{a});  // the 4 GiB default: one fits
  f.g().sample(a, 1 * GiB, 1 * GiB, 0.5);
  EXPECT_TRUE(f.g().step(used(1 * GiB), 0.5).admit.empty()) << "half a second says too little";
  f.g().sample(a, 1 * GiB, 1 * GiB, 2);
  EXPECT_TRUE(f.g().step(used(1 * GiB), 2).admit.empty()) << "still rising: 1 GiB so far says nothing of its peak";
  f.g().sample(a, 1536 * MiB, 1536 * MiB, 10);
  f.g().sample(a, 1 * GiB, 1536 * MiB, 11);
  EXPECT_TRUE(f.g().step(used(1 * GiB), 11).admit.empty()) << "a dip to two thirds is not a fall";
  f.g().sample(a, 700 * MiB, 1536 * MiB, 12);
  ASSERT_EQ(f.g().step(used(700 * MiB), 12).admit, std::vector<JobId>{b});
  const GovJob& jb = f.g().job(b);
  EXPECT_TRUE(jb.queue.speculative);
  EXPECT_EQ(jb.pred.peak, static_cast<Bytes>(std::llround(1536.0 * MiB * 1.15)));  // A's peak, x1.15
  EXPECT_EQ(f.record(b, 12).predicted.source, PredictionSource::build);
}

// On a loaded machine a job is slow to get its memory: the first job of a
// build, at 20% of its peak a second in, was taken at 1.5 x that, a second
// admitted beside it, and both were memory make then took a token for
// (e2e run_jobserver_make failed in CI). Its default stands until it falls.
TEST(ColdAdmission, ASlowStartIsNoEvidence) {
  Fixture f(900 * MiB);
  const std::string k = "c:compile";
  JobId a = submit_cold(f, "a", k, 512 * MiB);
  JobId b = submit_cold(f, "b", k, 512 * MiB);
  ASSERT_EQ(f.g().step(used(0), 0).admit, std::vector<JobId>{a});
  f.g().sample(a, 120 * MiB, 120 * MiB, 1.2);
  EXPECT_TRUE(f.g().step(used(120 * MiB), 1.2).admit.empty());
  EXPECT_FALSE(f.g().job(b).queue.speculative);
  EXPECT_TRUE(f.g().job(b).queue.blocked_by_memory);
}

TEST(ColdAdmission, SlowStartOneMorePerJobPastItsPeak) {
  Fixture f(64 * GiB);
  const std::string k = "nvcc:compile[sm_80]";
  // A heavy default: only one fits until the live evidence says otherwise.
  JobId a = submit_cold(f, "a", k, 60 * GiB);
  std::vector<JobId> rest;
  for (const char* id : {"b", "c", "d", "e"}) rest.push_back(submit_cold(f, id, k, 60 * GiB));
  ASSERT_EQ(f.g().step(used(0), 0).admit, std::vector<JobId>{a});
  f.g().sample(a, 2 * GiB, 2 * GiB, 2);
  EXPECT_TRUE(f.g().step(used(2 * GiB), 2).admit.empty()) << "nothing is known past its peak";
  // A falls past its peak: one job confirmed, one optimistic job.
  f.g().sample(a, 900 * MiB, 2 * GiB, 4);
  Decisions d = f.g().step(used(900 * MiB), 4);
  ASSERT_EQ(d.admit.size(), 1u) << "one optimistic job per job past its peak";
  JobId b = d.admit[0];
  f.g().sample(b, 2 * GiB, 2 * GiB, 6);
  EXPECT_TRUE(f.g().step(used(3 * GiB), 6).admit.empty()) << "B still rising: in flight";
  // B falls too: two confirmed, none in flight: two more.
  f.g().sample(b, 1 * GiB, 4 * GiB, 8);
  d = f.g().step(used(2 * GiB), 8);
  EXPECT_EQ(d.admit.size(), 2u);
  for (JobId id : d.admit) EXPECT_EQ(f.g().job(id).pred.peak, static_cast<Bytes>(std::llround(4.0 * GiB * 1.15)));
}

TEST(ColdAdmission, OnlyColdJobsOfTheSameKlassUseIt) {
  Fixture f(6 * GiB);
  JobId a = submit_cold(f, "a", "nvcc:compile[sm_80]", 4 * GiB);
  JobId other = submit_cold(f, "other", "nvcc:compile[sm_90]", 4 * GiB);
  JobId known = submit_cold(f, "known", "nvcc:compile[sm_80]", 4 * GiB, PredictionSource::history, 1.0);
  JobId similar = submit_cold(f, "similar", "nvcc:compile[sm_80]", 4 * GiB, PredictionSource::similar, 0.6);
  ASSERT_EQ(f.g().step(used(0), 0).admit, std::vector<JobId>{a});
  f.g().sample(a, 1 * GiB, 1 * GiB, 3);
  EXPECT_TRUE(f.g().step(used(1 * GiB), 3).admit.empty());
  for (JobId id : {other, known, similar}) EXPECT_FALSE(f.g().job(id).queue.speculative);
}

// A sibling still rising overrules only a default: a guess from data about
// this job (a similar stem of the shipped prior) stands until a sibling is
// past its peak. flash-real's cold run froze and killed three kernels
// admitted on a sibling's first 0.3 GiB x 1.5.
TEST(ColdAdmission, ARisingSiblingDoesNotOverruleAGuessFromData) {
  Fixture f(8 * GiB);
  const std::string k = "nvcc:compile[sm_80]";
  JobId a = submit_cold(f, "a", k, 4 * GiB);
  JobId b = submit_cold(f, "b", k, 6 * GiB, PredictionSource::similar, 0.3);
  ASSERT_EQ(f.g().step(used(0), 0).admit, std::vector<JobId>{a});
  f.g().sample(a, 300 * MiB, 300 * MiB, 2);
  EXPECT_TRUE(f.g().step(used(300 * MiB), 2).admit.empty()) << "A's 0.3 GiB so far says nothing of B's peak";
  EXPECT_FALSE(f.g().job(b).queue.speculative);
  f.g().sample(a, 2 * GiB, 2 * GiB, 10);
  EXPECT_TRUE(f.g().step(used(2 * GiB), 10).admit.empty()) << "still rising";
  // A past its peak: its 2 GiB, x1.15, is evidence now.
  f.g().sample(a, 900 * MiB, 2 * GiB, 12);
  ASSERT_EQ(f.g().step(used(900 * MiB), 12).admit, std::vector<JobId>{b});
  EXPECT_EQ(f.g().job(b).pred.peak, static_cast<Bytes>(std::llround(2.0 * GiB * 1.15)));
}

// A klass-wide guess from one heavy job (the class's 0.9 quantile) is cold too.
TEST(ColdAdmission, AKlassWideGuessIsColdToo) {
  Fixture f(6 * GiB);
  const std::string k = "c++:compile";
  JobId a = submit_cold(f, "a", k, 6 * GiB, PredictionSource::build, 0.35);
  JobId b = submit_cold(f, "b", k, 6 * GiB, PredictionSource::build, 0.35);
  ASSERT_EQ(f.g().step(used(0), 0).admit, std::vector<JobId>{a});
  f.g().sample(a, 350 * MiB, 800 * MiB, 5);
  ASSERT_EQ(f.g().step(used(350 * MiB), 5).admit, std::vector<JobId>{b});
  EXPECT_EQ(f.g().job(b).pred.peak, static_cast<Bytes>(std::llround(800.0 * MiB * 1.15)));
}

// Optimism missed: the freezer is the safety net, the newest job first.
TEST(ColdAdmission, AMissIsFrozenNotOom) {
  Fixture f(6 * GiB);
  const std::string k = "nvcc:compile[sm_80]";
  JobId a = submit_cold(f, "a", k, 4 * GiB);
  JobId b = submit_cold(f, "b", k, 4 * GiB);
  f.g().step(used(0), 0);
  f.g().sample(a, 500 * MiB, 1200 * MiB, 2);  // a first peak, halved
  ASSERT_EQ(f.g().step(used(500 * MiB), 2).admit, std::vector<JobId>{b});
  f.g().sample(a, 3 * GiB, 3 * GiB, 10);  // and a second, higher one
  f.g().sample(b, 3 * GiB, 3 * GiB, 10);
  Decisions d = f.g().step(used(6 * GiB - 100 * MiB), 10);
  EXPECT_EQ(d.freeze, std::vector<JobId>{b});
}

// The first job of a kind guessed above the budget (a prior from elsewhere,
// or the 4 GiB nvcc default) runs alone only until its own curve shows the
// guess wrong: peaked well under it and falling. A measured prediction
// keeps its reservation.
TEST(ColdAdmission, AJobGuessedAboveTheBudgetRunsAloneOnlyUntilItsPeakShows) {
  Fixture f(2560 * MiB);
  const std::string k = "nvcc:compile[sm_80]";
  JobId a = submit_cold(f, "a", k, 6 * GiB, PredictionSource::similar, 0.3);
  JobId b = submit_cold(f, "b", k, 6 * GiB, PredictionSource::similar, 0.3);
  ASSERT_EQ(f.g().step(used(0), 0).admit, std::vector<JobId>{a});
  EXPECT_EQ(f.g().counters().at(Counter::ran_alone), 1);
  f.g().sample(a, 400 * MiB, 400 * MiB, 2);
  EXPECT_TRUE(f.g().step(used(400 * MiB), 2).admit.empty()) << "still rising: the guess stands";
  f.g().sample(a, 300 * MiB, 400 * MiB, 3);
  EXPECT_TRUE(f.g().step(used(300 * MiB), 3).admit.empty()) << "a dip is not a fall";
  f.g().sample(a, 150 * MiB, 400 * MiB, 4);
  ASSERT_EQ(f.g().step(used(150 * MiB), 4).admit, std::vector<JobId>{b});
  EXPECT_EQ(f.g().job(b).pred.peak, static_cast<Bytes>(std::llround(400.0 * MiB * 1.15)));

  Fixture g(2560 * MiB);
  JobId x = submit_cold(g, "x", k, 6 * GiB, PredictionSource::history, 1.0);
  JobId y = submit_cold(g, "y", k, 100 * MiB, PredictionSource::history, 1.0);
  ASSERT_EQ(g.g().step(used(0), 0).admit, std::vector<JobId>{y});
  g.g().exited(y, ExitKind::finished, 0, 1);
  ASSERT_EQ(g.g().step(used(0), 1).admit, std::vector<JobId>{x});
  JobId z = submit_cold(g, "z", k, 100 * MiB, PredictionSource::history, 1.0);
  g.g().sample(x, 300 * MiB, 400 * MiB, 5);
  EXPECT_FALSE(contains(g.g().step(used(300 * MiB), 5).admit, z)) << "its own history said 6 GiB: it may rise again";
}

// A running job admitted on a guess takes the timing the build learns while
// it runs (a prior calibrated by a finished sibling): its past-peak release
// then comes on time, and the next job starts beside its tail.
TEST(ColdAdmission, ARunningGuessTakesTheTimingTheBuildLearns) {
  Fixture f(1 * GiB);
  const std::string k = "nvcc:compile[sm_80]";
  Prediction guess;
  guess.peak = 700 * MiB;  // the 324 MiB beside a is less than half of it: no room start
  guess.wall_s = 150;      // the prior's, for a job that takes 10 s here
  guess.peak_over_frac = 0.2;
  guess.after_peak = 150 * MiB;
  guess.source = PredictionSource::similar;
  guess.confidence = 0.3;
  f.preds["a"] = f.preds["b"] = guess;
  JobKey ka, kb;
  ka.identity = "a";
  kb.identity = "b";
  ka.klass = kb.klass = k;
  JobId a = f.g().submit(ka, 0);
  JobId b = f.g().submit(kb, 0);
  ASSERT_EQ(f.g().step(used(0), 0).admit, std::vector<JobId>{a});
  f.g().sample(a, 200 * MiB, 600 * MiB, 5);
  EXPECT_TRUE(f.g().step(used(200 * MiB), 5).admit.empty()) << "by the guess, a is far from its peak";
  f.preds["a"].wall_s = f.preds["b"].wall_s = 10;
  f.g().learn(JobRecord{});
  EXPECT_EQ(f.g().job(a).pred.peak, 700 * MiB) << "the reservation it was admitted on stays";
  EXPECT_EQ(f.g().step(used(200 * MiB), 5.1).admit, std::vector<JobId>{b});
}

// Once per attempt, when a running job has fallen below half its peak after
// live.min_s, the governor says so (the prior gets calibrated) and asks its
// waiting jobs' predictions again.
TEST(ColdAdmission, AJobWellPastItsPeakIsToldOnceAndWaitingJobsAreAskedAgain) {
  Fixture f(2 * GiB);
  std::vector<std::pair<std::string, Bytes>> told;
  f.g().on_past_peak([&](const JobKey& k, Bytes peak) { told.emplace_back(k.identity, peak); });
  JobId a = submit_cold(f, "a", "nvcc:compile[sm_80]", 1 * GiB, PredictionSource::similar, 0.3);
  JobId b = submit_cold(f, "b", "nvcc:compile[sm_80]", 3 * GiB, PredictionSource::similar, 0.3);
  ASSERT_EQ(f.g().step(used(0), 0).admit, std::vector<JobId>{a});
  f.g().sample(a, 300 * MiB, 400 * MiB, 0.5);
  f.g().sample(a, 150 * MiB, 400 * MiB, 0.8);
  EXPECT_TRUE(told.empty()) << "before live.min_s";
  f.g().sample(a, 300 * MiB, 400 * MiB, 1.5);
  EXPECT_TRUE(told.empty()) << "not below half its peak";
  f.preds["b"].peak = 500 * MiB;  // what the calibrated prior says now
  f.g().sample(a, 150 * MiB, 400 * MiB, 2);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0], (std::pair<std::string, Bytes>{"a", 400 * MiB}));
  EXPECT_EQ(f.g().job(b).pred.peak, 500 * MiB);
  f.g().sample(a, 100 * MiB, 400 * MiB, 3);
  EXPECT_EQ(told.size(), 1u) << "once per attempt";
}

// With nothing to tell jobs apart (a cold build: every prediction a

namespace {

// A job measured before: peak 6 GiB at 30% of its 10 s, then 3 GiB.
JobId submit_measured(Fixture& f, const std::string& id) {
  Prediction p;
  p.peak = 6 * GiB;
  p.wall_s = 10;
  p.peak_over_frac = 0.3;
  p.after_peak = 3 * GiB;
  p.source = PredictionSource::history;
  p.confidence = 1.0;
  f.preds[id] = p;
  JobKey k;
  k.identity = id;
  k.klass = "nvcc:compile[sm_80]";
  return f.g().submit(k, 0);
}

// A past its peak at 5 s: it holds 3 GiB x 1.1 of the 8 GiB.
void past_peak(Fixture& f, JobId a) {
  f.g().sample(a, 6 * GiB, 6 * GiB, 3);
  f.g().sample(a, 2 * GiB, 6 * GiB, 5);
}

}  // namespace

// A guess that does not fit starts in the room a job past its peak leaves,
// and is frozen at the room's edge (the other's reservation, not the 92%
// line: that job may still come back up to what it holds).
TEST(RoomStart, AGuessThatDoesNotFitStartsBesideAJobPastItsPeakAndIsFrozenAtTheRoomsEdge) {
  Fixture f(8 * GiB);
  JobId a = submit_measured(f, "a");
  JobId b = submit_cold(f, "b", "nvcc:compile[sm_90]", 6 * GiB);
  ASSERT_EQ(f.g().step(used(0), 0).admit, std::vector<JobId>{a});
  f.g().sample(a, 5 * GiB, 5 * GiB, 2);
  EXPECT_TRUE(f.g().step(used(5 * GiB), 2).admit.empty()) << "a is still rising";
  past_peak(f, a);
  ASSERT_EQ(f.g().step(used(2 * GiB), 5).admit, std::vector<JobId>{b}) << "4.7 GiB left, at least half its 6 GiB";
  EXPECT_TRUE(f.g().job(b).run.in_room);
  EXPECT_EQ(f.g().counters().at(Counter::room_starts), 1);
  f.g().sample(b, 4 * GiB, 4 * GiB, 6);
  EXPECT_TRUE(f.g().step(used(6 * GiB), 6).freeze.empty()) << "inside its room";
  f.g().sample(b, 4600 * MiB, 4600 * MiB, 7);
  EXPECT_EQ(f.g().step(used(6600 * MiB), 7).freeze, std::vector<JobId>{b}) << "at the edge, under the 92% line";
  f.g().exited(a, ExitKind::finished, 0, 10);
  EXPECT_EQ(f.g().step(used(4600 * MiB), 10).thaw, std::vector<JobId>{b}) << "alone now";
}

// Beside a job still rising, nothing is known of what it will take: a guess
// that does not fit waits, however much is left now.
TEST(RoomStart, NotBesideAJobStillRising) {
  Fixture f(8 * GiB);
  JobId a = submit_cold(f, "a", "c++:compile", 1 * GiB, PredictionSource::history, 1.0);
  JobId b = submit_cold(f, "b", "nvcc:compile[sm_90]", 7500 * MiB);
  ASSERT_EQ(f.g().step(used(0), 0).admit, std::vector<JobId>{a});
  f.g().sample(a, 600 * MiB, 600 * MiB, 2);
  EXPECT_TRUE(f.g().step(used(600 * MiB), 2).admit.empty());
  f.g().sample(a, 200 * MiB, 600 * MiB, 3);
  EXPECT_EQ(f.g().step(used(200 * MiB), 3).admit, std::vector<JobId>{b});
}

// One at a time, and a measured prediction is never a room start.
TEST(RoomStart, OneAtATimeAndOnlyForGuesses) {
  Fixture f(8 * GiB);
  JobId a = submit_measured(f, "a");
  JobId known = submit_cold(f, "known", "nvcc:compile[sm_90]", 6 * GiB, PredictionSource::history, 1.0);
  ASSERT_EQ(f.g().step(used(0), 0).admit, std::vector<JobId>{a});
  past_peak(f, a);
  EXPECT_TRUE(f.g().step(used(2 * GiB), 5).admit.empty()) << "its own history says 6 GiB";

  Fixture g(16 * GiB);
  JobId x = submit_measured(g, "x");
  JobId y = submit_cold(g, "y", "nvcc:compile[sm_90]", 15 * GiB);
  JobId z = submit_cold(g, "z", "nvcc:compile[sm_86]", 15 * GiB);  // no sibling to go by
  ASSERT_EQ(g.g().step(used(0), 0).admit, std::vector<JobId>{x});
  past_peak(g, x);
  ASSERT_EQ(g.g().step(used(2 * GiB), 5).admit, std::vector<JobId>{y});
  g.g().sample(y, 1 * GiB, 1 * GiB, 6);
  EXPECT_TRUE(g.g().step(used(3 * GiB), 6).admit.empty()) << "y is a room start still rising";
  // y past its own peak: a job like any other, and everything running is past its peak.
  g.g().sample(y, 3 * GiB, 3 * GiB, 7);
  g.g().sample(y, 1 * GiB, 3 * GiB, 8);
  EXPECT_EQ(g.g().step(used(3 * GiB), 8).admit, std::vector<JobId>{z});
  EXPECT_FALSE(g.g().job(y).run.in_room);
  EXPECT_TRUE(g.g().job(z).run.in_room);
  EXPECT_EQ(g.g().counters().at(Counter::room_starts), 2);
  (void)known;
}

// Behind a head that is no guess (measured, and too big for the room),
// the room goes to the first guess: a kind nothing has measured yet. Behind
// a head that is a guess and did not get the room, to nobody.
TEST(RoomStart, BehindAMeasuredHeadTheFirstGuessGetsTheRoom) {
  for (const bool head_measured : {true, false}) {
    Fixture f(8 * GiB);
    JobId a = submit_measured(f, "a");
    JobId b = head_measured ? f.submit("b", 6 * GiB, 5) : submit_cold(f, "b", "nvcc:compile[sm_90]", 10 * GiB);
    JobId c = submit_cold(f, "c", "nvcc:compile[sm_86]", 5 * GiB);
    JobId d = submit_cold(f, "d", "nvcc:compile[sm_86]", 5 * GiB);
    ASSERT_EQ(f.g().step(used(0), 0).admit, std::vector<JobId>{a});
    past_peak(f, a);  // holds 3.3 GiB: 4.7 GiB left
    const Decisions dec = f.g().step(used(2 * GiB), 5);
    if (!head_measured) {
      EXPECT_TRUE(dec.admit.empty()) << "a 10 GiB guess gets no room of 4.7, and nobody behind it does";
      continue;
    }
    ASSERT_EQ(dec.admit, std::vector<JobId>{c}) << "one room start, the first guess behind the head";
    EXPECT_TRUE(f.g().job(c).run.in_room);
    EXPECT_EQ(f.g().job(b).state, JobState::waiting);
    EXPECT_EQ(f.g().job(d).state, JobState::waiting);
  }
}

// Frozen at its room's edge, a room start is not thawed while the room is
// what it was, even where the build's memory is low enough to thaw a job
// like any other (it would be frozen again at once); it is once the room
// grows, or it is alone.
TEST(RoomStart, AFrozenRoomStartStaysFrozenWhileItsRoomIsFull) {
  Fixture f(8 * GiB);
  JobId a = submit_measured(f, "a");
  JobId b = submit_cold(f, "b", "nvcc:compile[sm_90]", 5 * GiB);  // a little over the 4.7 GiB room
  ASSERT_EQ(f.g().step(used(0), 0).admit, std::vector<JobId>{a});
  past_peak(f, a);
  ASSERT_EQ(f.g().step(used(2 * GiB), 5).admit, std::vector<JobId>{b});
  ASSERT_TRUE(f.g().job(b).run.in_room);
  f.g().sample(b, 4600 * MiB, 4600 * MiB, 6);
  ASSERT_EQ(f.g().step(used(6600 * MiB), 6).freeze, std::vector<JobId>{b});
  for (double t : {8.0, 10.0, 12.0}) EXPECT_TRUE(f.g().step(used(6600 * MiB), t).thaw.empty()) << t;
  f.g().exited(a, ExitKind::finished, 0, 13);
  EXPECT_EQ(f.g().step(used(4600 * MiB), 13).thaw, std::vector<JobId>{b});
}

// A default knows neither its job's time nor its shape: once outgrown it
// holds 1.2 x its peak to its end. Where its klass's profiles say what
// such a job uses once its memory has halved (Prediction::fallen_share),
// it holds that share of its peak while its memory stays halved, and the
// hold is back the moment it climbs again.
TEST(DefaultPastItsPeak, HoldsItsKlasssFallenShareWhileItsMemoryStaysHalved) {
  for (const double share : {0.0, 0.4}) {
    Fixture f(8 * GiB);
    const std::string nvcc = "nvcc:compile[sm_80]";
    Prediction guess;  // the 4 GiB default, and what its klass's profiles say
    guess.peak = 4 * GiB;
    guess.fallen_share = share;
    f.preds["a"] = guess;
    JobKey ka;
    ka.identity = "a";
    ka.klass = nvcc;
    JobId a = f.g().submit(ka, 0);
    Prediction small;  // a measured 3 GiB job waits behind it
    small.peak = 3 * GiB;
    small.source = PredictionSource::history;
    small.confidence = 1;
    f.preds["b"] = small;
    f.preds["c"] = small;
    JobKey kb, kc;
    kb.identity = "b";
    kc.identity = "c";
    ASSERT_EQ(f.g().step(used(0), 0).admit, std::vector<JobId>{a});
    JobId b = f.g().submit(kb, 0.1);
    JobId c = f.g().submit(kc, 0.1);
    f.g().sample(a, 6 * GiB, 6 * GiB, 3);  // outgrew its 4 GiB default
    EXPECT_TRUE(f.g().step(used(6 * GiB), 3).admit.empty()) << share;
    f.g().sample(a, 2 * GiB, 6 * GiB, 5);  // halved: 6 x 0.4 x 1.1 = 2.64 GiB held, else 7.2
    const Decisions d = f.g().step(used(2 * GiB), 5);
    if (share == 0) {
      EXPECT_TRUE(d.admit.empty()) << "no profile says what it does next: it holds 1.2 x its peak";
      continue;
    }
    ASSERT_EQ(d.admit, std::vector<JobId>{b});  // 8 - 2.64 - 3 leaves too little for c
    f.g().sample(a, 3200 * MiB, 6 * GiB, 6);  // a climbs again past half: back to its hold
    f.g().exited(b, ExitKind::finished, 0, 6);
    EXPECT_TRUE(f.g().step(used(3200 * MiB), 6).admit.empty()) << "halved once is not halved for good";
    f.g().sample(a, 2 * GiB, 6 * GiB, 8);
    EXPECT_EQ(f.g().step(used(2 * GiB), 8).admit, std::vector<JobId>{c});
  }
}
