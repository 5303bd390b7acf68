// Pressure: freezing, thawing, killing and requeueing, and thrashing,
// driven with fakes (governor_fixture.hpp).
#include <gtest/gtest.h>

#include "governor_fixture.hpp"

using namespace memgate;
using namespace memgate::governor_test;

namespace {
// Three running jobs of 1 GiB predicted in a 4 GiB budget.
struct Pressure : Fixture {
  JobId a, b, c;
  Pressure() : Fixture(4 * GiB) {
    a = submit("a", 1 * GiB);
    b = submit("b", 1 * GiB);
    c = submit("c", 1 * GiB);
    g().step(used(0), 0);
    g().sample(a, 1 * GiB, 1 * GiB, 0.5);
    g().sample(b, 1 * GiB, 1 * GiB, 0.6);
    g().sample(c, 1 * GiB, 1 * GiB, 0.7);
  }
};
}  // namespace

TEST(GovernorPressure, FreezesTheNewestJobWhenMemoryRunsShort) {
  Pressure f;
  f.g().sample(f.a, 1900 * MiB, 1900 * MiB, 1);
  Decisions d = f.g().step(used(3950 * MiB), 1);
  EXPECT_EQ(d.freeze, std::vector<JobId>{f.c});
  EXPECT_EQ(f.g().job(f.c).state, JobState::frozen);
  EXPECT_EQ(f.g().counters().at(Counter::frozen), 1);
}

TEST(GovernorPressure, FreezesRespectACooldown) {
  Pressure f;
  EXPECT_EQ(f.g().step(used(3950 * MiB), 1).freeze.size(), 1u);
  EXPECT_TRUE(f.g().step(used(4000 * MiB), 1.1).freeze.empty());
  EXPECT_EQ(f.g().step(used(4000 * MiB), 1.5).freeze, std::vector<JobId>{f.b});
}

// Freezing stops growth and gives nothing back: while the level the last
// freeze left holds, no further job is frozen; once memory grows past it
// (1% of the limit), the next newest is.
TEST(GovernorPressure, AtALevelThatHoldsNoFurtherJobIsFrozen) {
  Pressure f;
  ASSERT_EQ(f.g().step(used(3800 * MiB), 1).freeze, std::vector<JobId>{f.c});
  EXPECT_TRUE(f.g().step(used(3800 * MiB), 2).freeze.empty());
  EXPECT_TRUE(f.g().step(used(3830 * MiB), 3).freeze.empty());
  EXPECT_EQ(f.g().job(f.b).state, JobState::running);
  EXPECT_EQ(f.g().step(used(3900 * MiB), 4).freeze, std::vector<JobId>{f.b});
}

// Growth counts from the least memory has been since the last freeze: a
// job ended, and another grew back to where the freeze left it.
TEST(GovernorPressure, MemoryThatFellAndGrowsBackFreezesAgain) {
  Pressure f;
  ASSERT_EQ(f.g().step(used(3800 * MiB), 1).freeze, std::vector<JobId>{f.c});
  f.g().step(used(3000 * MiB), 1.2);
  EXPECT_EQ(f.g().step(used(3800 * MiB), 2).freeze, std::vector<JobId>{f.b});
}

TEST(GovernorPressure, NeverFreezesTheLastRunningJob) {
  Pressure f;
  f.g().step(used(3800 * MiB), 1);    // freezes c
  f.g().step(used(3900 * MiB), 2);    // freezes b (memory still grew)
  ASSERT_EQ(f.g().job(f.b).state, JobState::frozen);
  Decisions d = f.g().step(used(4000 * MiB), 3);
  EXPECT_TRUE(d.freeze.empty());
  EXPECT_EQ(f.g().job(f.a).state, JobState::running);
}

TEST(GovernorPressure, NothingIsAdmittedWhileJobsAreFrozen) {
  Pressure f;
  JobId d1 = f.submit("d", 10 * MiB);
  f.g().step(used(3950 * MiB), 1);  // freezes c
  Decisions d = f.g().step(used(2 * GiB), 2);
  EXPECT_FALSE(contains(d.admit, d1));
}

TEST(GovernorPressure, ThawsOnlyAfterMemoryStaysLow) {
  Pressure f;
  f.g().step(used(3950 * MiB), 1);  // freezes c
  f.g().sample(f.a, 100 * MiB, 1 * GiB, 2);
  // Low, but not yet for pressure.thaw_hold_s.
  EXPECT_TRUE(f.g().step(used(2200 * MiB), 2).thaw.empty());
  EXPECT_TRUE(f.g().step(used(2200 * MiB), 2.5).thaw.empty());
  // A spike resets the hold.
  EXPECT_TRUE(f.g().step(used(3700 * MiB), 2.8).thaw.empty());
  EXPECT_TRUE(f.g().step(used(2200 * MiB), 3.0).thaw.empty());
  EXPECT_TRUE(f.g().step(used(2200 * MiB), 3.5).thaw.empty());
  Decisions d = f.g().step(used(2200 * MiB), 4.1);
  EXPECT_EQ(d.thaw, std::vector<JobId>{f.c});
  EXPECT_EQ(f.g().job(f.c).state, JobState::running);
  EXPECT_NEAR(f.record(f.c, 4.1).frozen_s, 3.1, 1e-9);
}

TEST(GovernorPressure, ThawsAtOnceWhenNothingElseCanRun) {
  Pressure f;
  f.g().step(used(3800 * MiB), 1);  // c
  f.g().step(used(3900 * MiB), 2);  // b
  f.g().exited(f.a, ExitKind::finished, 0, 2.1);
  Decisions d = f.g().step(used(3900 * MiB), 2.1);
  EXPECT_EQ(d.thaw, std::vector<JobId>{f.b});
}

TEST(GovernorPressure, KillsTheNewestJobAndRequeuesItWithMoreMemory) {
  Pressure f;
  f.g().sample(f.c, 1200 * MiB, 1200 * MiB, 1);
  Decisions d = f.g().step(used(4040 * MiB), 1);
  ASSERT_EQ(d.kill, std::vector<JobId>{f.c});
  EXPECT_EQ(f.g().job(f.c).state, JobState::killing);
  // No second kill while the first victim is still dying.
  EXPECT_TRUE(f.g().step(used(4040 * MiB), 3).kill.empty());
  EXPECT_TRUE(f.g().exited(f.c, ExitKind::killed_by_us, 137, 3));
  const GovJob& c = f.g().job(f.c);
  EXPECT_EQ(c.state, JobState::waiting);
  EXPECT_GE(c.peak_floor, 1500 * MiB);
  EXPECT_EQ(f.g().counters().at(Counter::requeued), 1);
  EXPECT_EQ(f.record(f.c, 3).attempt_log.back().outcome, Outcome::requeued);
}

// The cost of optimism: what freezes and requeues took, in
// job-seconds frozen and CPU-seconds of work thrown away.
TEST(GovernorPressure, CountsTheCostOfOptimism) {
  Pressure f;
  EXPECT_EQ(f.g().counters().at(Counter::frozen_ms), 0);
  EXPECT_EQ(f.g().counters().at(Counter::requeued_cpu_ms), 0);
  ASSERT_EQ(f.g().step(used(3800 * MiB), 1).freeze, std::vector<JobId>{f.c});
  ASSERT_EQ(f.g().step(used(3900 * MiB), 1.5).freeze, std::vector<JobId>{f.b});
  // Two jobs frozen from 1.5 s to 2.5 s, one from 1 s: 2.5 job-seconds.
  f.g().step(used(3900 * MiB), 2.5);
  EXPECT_EQ(f.g().counters().at(Counter::frozen_ms), 2500);
  // Past the kill line: the newest job (c) dies and is requeued; the
  // 3.25 CPU-seconds it had done are the cost.
  Decisions d = f.g().step(used(4040 * MiB), 3);
  ASSERT_EQ(d.kill, std::vector<JobId>{f.c});
  ASSERT_TRUE(f.g().exited(f.c, ExitKind::killed_by_us, 137, 3.5, 3.25));
  EXPECT_EQ(f.g().counters().at(Counter::requeued_cpu_ms), 3250);
  EXPECT_DOUBLE_EQ(f.record(f.c, 3.5).attempt_log.back().cpu_s, 3.25);
  EXPECT_EQ(f.g().counters().at(Counter::retried), 1);
  // A kernel OOM kill costs its CPU too; a job that finishes costs nothing.
  ASSERT_TRUE(f.g().exited(f.b, ExitKind::oom_killed, 137, 4, 0.5));
  EXPECT_EQ(f.g().counters().at(Counter::requeued_cpu_ms), 3750);
  f.g().exited(f.a, ExitKind::finished, 0, 5, 40);
  EXPECT_EQ(f.g().counters().at(Counter::requeued_cpu_ms), 3750);
  EXPECT_EQ(f.g().counters().at(Counter::retried), 2);
}

TEST(GovernorPressure, NeverKillsTheOnlyJob) {
  Fixture f(1 * GiB);
  JobId a = f.submit("a", 512 * MiB);
  f.g().step(used(0), 0);
  f.g().sample(a, 1 * GiB, 1 * GiB, 1);
  Decisions d = f.g().step(used(1 * GiB), 1);
  EXPECT_TRUE(d.kill.empty());
  EXPECT_TRUE(d.freeze.empty());
}

TEST(GovernorPressure, KernelOomKillsAreRerunButBounded) {
  Fixture f(1 * GiB);
  f.cfg.max_attempts = 3;
  JobId a = f.submit("a", 512 * MiB);
  for (int attempt = 1; attempt <= 3; ++attempt) {
    Decisions d = f.g().step(used(0), attempt);
    ASSERT_EQ(d.admit, std::vector<JobId>{a}) << attempt;
    bool rerun = f.g().exited(a, ExitKind::oom_killed, 128 + 9, attempt + 0.5);
    EXPECT_EQ(rerun, attempt < 3) << attempt;
  }
  EXPECT_EQ(f.g().job(a).state, JobState::done);
  EXPECT_EQ(f.g().counters().at(Counter::oom_killed), 3);
  EXPECT_EQ(f.g().counters().at(Counter::failed), 1);
}

TEST(GovernorPressure, ThrashingFreezesAndStopsAdmissionUntilItClears) {
  Pressure f;
  JobId d1 = f.submit("d", 10 * MiB);
  MemoryView v = used(2 * GiB);
  v.psi_full_avg10 = 25;
  Decisions d = f.g().step(v, 1);
  EXPECT_EQ(d.freeze, std::vector<JobId>{f.c});
  EXPECT_FALSE(contains(d.admit, d1));
  v.psi_full_avg10 = 5;  // between the thresholds: still thrashing
  EXPECT_TRUE(f.g().step(v, 3).thaw.empty());
  v.psi_full_avg10 = 0.5;
  f.g().step(v, 4);
  d = f.g().step(v, 5.1);
  EXPECT_EQ(d.thaw, std::vector<JobId>{f.c});
}

TEST(GovernorPressure, NeighboursStallsDoNotFreezeABuildWithRoom) {
  Pressure f;  // hard limit 4 GiB, the build uses 2 GiB
  JobId d1 = f.submit("d", 10 * MiB);
  MemoryView v = used(2 * GiB, 512 * MiB);
  v.psi_full_avg10 = 40;  // another tenant thrashing inside its own limit
  v.psi_machine_wide = true;
  Decisions d = f.g().step(v, 1);
  EXPECT_TRUE(d.freeze.empty());
  EXPECT_TRUE(contains(d.admit, d1));
  EXPECT_EQ(f.g().counters().at(Counter::memory_bound_ms), 0);
  for (const GovEvent& e : f.g().events()) EXPECT_NE(e.kind, EventKind::pressure);
}

TEST(GovernorPressure, MachineWideStallsCountWhenTheMachineIsNearlyFull) {
  Pressure f;
  MemoryView v = used(2 * GiB, 1700 * MiB);  // 3.7 of 4 GiB: over 88%
  v.psi_full_avg10 = 40;
  v.psi_machine_wide = true;
  Decisions d = f.g().step(v, 1);
  EXPECT_EQ(d.freeze, std::vector<JobId>{f.c});
  auto pressure = std::find_if(f.g().events().begin(), f.g().events().end(),
                               [](const GovEvent& e) { return e.kind == EventKind::pressure; });
  ASSERT_NE(pressure, f.g().events().end());
  EXPECT_NE(pressure->reason.find("the machine's memory stalls"), std::string::npos);
}
