// The governor's policy, driven with fake predictions, fake memory
// readings and a fake clock: no processes anywhere. Pressure, remote
// engines and cold admission: governor_{pressure,remote,cold}_test.cpp.
#include <gtest/gtest.h>

#include "governor_fixture.hpp"

using namespace memgate;
using namespace memgate::governor_test;

TEST(Governor, OneJobAlwaysStartsWhenNothingRuns) {
  Fixture f(1 * GiB);
  JobId big = f.submit("big", 4 * GiB);
  Decisions d = f.g().step(used(0), 0);
  ASSERT_EQ(d.admit, std::vector<JobId>{big});
  EXPECT_EQ(f.g().counters().at(Counter::ran_alone), 1);
  EXPECT_EQ(f.g().events().back().kind, EventKind::alone);
}

TEST(Governor, BigJobRunsAloneAfterTheJobsThatFit) {
  Fixture f(2 * GiB);
  JobId big = f.submit("big", 4 * GiB, 100);
  JobId small = f.submit("small", 100 * MiB, 1);
  Decisions d = f.g().step(used(0), 0);
  ASSERT_EQ(d.admit, std::vector<JobId>{small});  // backfills; big cannot fit beside anything
  EXPECT_TRUE(f.g().step(used(0), 1).admit.empty());
  f.g().exited(small, ExitKind::finished, 0, 2);
  d = f.g().step(used(0), 2);
  EXPECT_EQ(d.admit, std::vector<JobId>{big});
  EXPECT_EQ(f.g().counters().at(Counter::ran_alone), 1);
  JobId late = f.submit("late", 100 * MiB, 1, 1, 3);
  EXPECT_FALSE(contains(f.g().step(used(0), 3).admit, late)) << "nothing runs beside a job bigger than the budget";
}

TEST(Governor, AdmitsOnlyWhatPredictedMemoryAllows) {
  Fixture f(2560 * MiB);
  JobId a = f.submit("a", 1 * GiB), b = f.submit("b", 1 * GiB), c = f.submit("c", 1 * GiB);
  Decisions d = f.g().step(used(0), 0);
  EXPECT_EQ(d.admit, (std::vector<JobId>{a, b}));
  EXPECT_TRUE(f.g().job(c).queue.blocked_by_memory);
  EXPECT_EQ(f.g().counts().waiting_memory, 1);
  EXPECT_EQ(f.g().counters().at(Counter::waited_for_memory), 1);
  f.g().exited(a, ExitKind::finished, 0, 1);
  d = f.g().step(used(0), 1);
  EXPECT_EQ(d.admit, std::vector<JobId>{c});
}

TEST(Governor, AdmitsOnlyWhatCpuSlotsAllow) {
  Fixture f(100 * GiB, 2);
  JobId a = f.submit("a", 1 * GiB), b = f.submit("b", 1 * GiB), c = f.submit("c", 1 * GiB);
  Decisions d = f.g().step(used(0), 0);
  EXPECT_EQ(d.admit, (std::vector<JobId>{a, b}));
  EXPECT_TRUE(f.g().job(c).queue.blocked_by_cpu);
  EXPECT_FALSE(f.g().job(c).queue.blocked_by_memory);
}

TEST(Governor, CpuWeightCountsSlotsAndIsCappedAtAllSlots) {
  Fixture f(100 * GiB, 4);
  JobId wide = f.submit("nvcc", 1 * GiB, 0, 3);
  JobId narrow = f.submit("cc", 1 * GiB, 0, 1);
  JobId wide2 = f.submit("nvcc2", 1 * GiB, 0, 2);
  Decisions d = f.g().step(used(0), 0);
  EXPECT_EQ(d.admit, (std::vector<JobId>{wide, narrow}));
  EXPECT_TRUE(f.g().job(wide2).queue.blocked_by_cpu);
  // A job wider than the machine still runs, taking every slot.
  Fixture g(100 * GiB, 2);
  JobId huge = g.submit("huge", 1 * GiB, 0, 8);
  EXPECT_EQ(g.g().step(used(0), 0).admit, std::vector<JobId>{huge});
}

TEST(Governor, MemoryOutsideTheBuildCountsAgainstTheLimit) {
  Fixture f(4 * GiB);
  f.cfg.hard_limit = 4 * GiB;
  f.submit("a", 1 * GiB);
  f.submit("b", 1 * GiB);
  f.submit("c", 1 * GiB);
  Decisions d = f.g().step(used(0, 2 * GiB), 0);
  EXPECT_EQ(d.admit.size(), 2u);
}

TEST(Governor, BuildOverheadCountsAgainstTheLimit) {
  Fixture f(4 * GiB);
  f.submit("a", 1 * GiB);
  f.submit("b", 1 * GiB);
  f.submit("c", 1 * GiB);
  // 1.5 GiB used by the build tool and ungated processes.
  Decisions d = f.g().step(used(3 * GiB / 2), 0);
  EXPECT_EQ(d.admit.size(), 2u);
}

TEST(Governor, LongestPredictedJobsStartFirst) {
  Fixture f(100 * GiB, 2);
  JobId s = f.submit("short", 1 * GiB, 10);
  JobId l = f.submit("long", 1 * GiB, 100);
  JobId m = f.submit("mid", 1 * GiB, 50);
  Decisions d = f.g().step(used(0), 0);
  EXPECT_EQ(d.admit, (std::vector<JobId>{l, m}));
  EXPECT_TRUE(f.g().job(s).queue.blocked_by_cpu);
}

TEST(Governor, SmallerJobsBackfillMemoryTheHeadCannotUse) {
  Fixture f(3 * GiB);
  JobId a = f.submit("a", 2 * GiB, 100);
  JobId b = f.submit("b", 2 * GiB, 90);
  JobId c = f.submit("c", 512 * MiB, 10);
  Decisions d = f.g().step(used(0), 0);
  EXPECT_EQ(d.admit, (std::vector<JobId>{a, c}));
  EXPECT_TRUE(f.g().job(b).queue.blocked_by_memory);
}

// Longest-first backfills without looking ahead, so a head that has
// waited starvation_s keeps its memory from later jobs. Packing needs no
// such guard: its reservation for the head already admits only what does
// not delay it, so a job that ends first still runs.
TEST(Governor, AStarvingHeadJobStopsBackfill) {
  for (AdmissionPolicy policy : {AdmissionPolicy::longest_first, AdmissionPolicy::packing}) {
    Fixture f(3 * GiB);
    f.cfg.starvation_s = 30;
    f.cfg.admission = policy;
    JobId a = f.submit("a", 2 * GiB, 100);
    JobId b = f.submit("b", 2 * GiB, 90);
    f.g().step(used(0), 0);
    // Small jobs keep arriving; before the deadline they backfill.
    JobId s1 = f.submit("s1", 512 * MiB, 1, 1, 1);
    EXPECT_TRUE(contains(f.g().step(used(0), 1).admit, s1));
    f.g().exited(s1, ExitKind::finished, 0, 31);
    JobId s2 = f.submit("s2", 512 * MiB, 1, 1, 31);
    Decisions d = f.g().step(used(0), 31);
    if (policy == AdmissionPolicy::longest_first)
      EXPECT_FALSE(contains(d.admit, s2)) << "b has waited 31 s; s2 must leave room for it";
    else
      EXPECT_TRUE(contains(d.admit, s2)) << "s2 ends long before a frees b's memory";
    f.g().exited(a, ExitKind::finished, 0, 32);
    d = f.g().step(used(0), 32);
    EXPECT_TRUE(contains(d.admit, b)) << name(policy);
  }
}

TEST(Governor, AJobPastItsPeakReleasesItsReservation) {
  Fixture f(2 * GiB);
  Prediction p;
  p.peak = 1536 * MiB;
  p.wall_s = 100;
  p.peak_over_frac = 0.3;
  p.after_peak = 256 * MiB;
  f.preds["nvcc"] = p;
  JobKey k;
  k.identity = "nvcc";
  JobId a = f.g().submit(k, 0);
  JobId b = f.submit("b", 1 * GiB);
  EXPECT_EQ(f.g().step(used(0), 0).admit, std::vector<JobId>{a});
  f.g().sample(a, 1500 * MiB, 1500 * MiB, 20);
  EXPECT_TRUE(f.g().step(used(1500 * MiB), 20).admit.empty());
  f.g().sample(a, 300 * MiB, 1500 * MiB, 40);
  Decisions d = f.g().step(used(300 * MiB), 40);
  EXPECT_EQ(d.admit, std::vector<JobId>{b});
}

TEST(Governor, AJobWithALatePeakKeepsItsReservation) {
  Fixture f(2 * GiB);
  Prediction p;
  p.peak = 1536 * MiB;
  p.wall_s = 100;
  p.peak_over_frac = 0.9;  // several archs one after another
  p.after_peak = 256 * MiB;
  f.preds["nvcc"] = p;
  JobKey k;
  k.identity = "nvcc";
  JobId a = f.g().submit(k, 0);
  f.submit("b", 1 * GiB);
  f.g().step(used(0), 0);
  f.g().sample(a, 300 * MiB, 1500 * MiB, 40);
  EXPECT_TRUE(f.g().step(used(300 * MiB), 40).admit.empty());
  EXPECT_GE(f.g().reservation(f.g().job(a), 40), 1536 * MiB);
}

TEST(Governor, AJobThatOutgrowsItsPredictionReservesMore) {
  Fixture f(4 * GiB);
  JobId a = f.submit("a", 1 * GiB);
  f.g().step(used(0), 0);
  f.g().sample(a, 2 * GiB, 2 * GiB, 1);
  EXPECT_GT(f.g().reservation(f.g().job(a), 1), 2 * GiB);
  EXPECT_EQ(f.g().counters().at(Counter::overshoot), 1);
}

// Packing: R (6 GiB, 100 s) runs in a 10 GiB budget; waiting
// are L (7 GiB, 300 s), A (4 GiB, 150 s) and H (4 GiB, 20 s). L fits when
// R ends at 100 s. A fits now but would hold its 4 GiB until 151 s.
namespace {
struct Packing : Fixture {
  JobId r, l, a, h;
  Packing(AdmissionPolicy policy, double l_peak_over) : Fixture(10 * GiB) {
    cfg.admission = policy;
    r = submit("r", 6 * GiB, 100);
    EXPECT_EQ(g().step(used(0), 0).admit, std::vector<JobId>{r});
    Prediction p;
    p.peak = 7 * GiB;
    p.wall_s = 300;
    p.peak_over_frac = l_peak_over;
    p.after_peak = 1 * GiB;
    p.source = PredictionSource::history;
    p.confidence = 1;
    preds["l"] = p;
    JobKey k;
    k.identity = "l";
    l = g().submit(k, 1);
    a = submit("a", 4 * GiB, 150, 1, 1);
    h = submit("h", 4 * GiB, 20, 1, 1);
  }
};
}  // namespace

TEST(GovernorPacking, LongestFirstStartsTheLongestJobThatFits) {
  Packing f(AdmissionPolicy::longest_first, 0.3);
  EXPECT_EQ(f.g().step(used(0), 1).admit, std::vector<JobId>{f.a});
}

TEST(GovernorPacking, AJobThatWouldDelayTheLongOneWaitsAndAHeavyShortOneGoes) {
  // L falls to 1 GiB 30% into its life: started at 100 s, it makes room
  // for A at 190 s; both end by 400 s. Started now, A would keep L out
  // until 151 s and the two would end at 451 s. H ends before L can start.
  Packing f(AdmissionPolicy::packing, 0.3);
  Decisions d = f.g().step(used(0), 1);
  EXPECT_EQ(d.admit, std::vector<JobId>{f.h});
  EXPECT_TRUE(f.g().job(f.a).queue.blocked_by_memory);
  f.g().exited(f.h, ExitKind::finished, 0, 21);
  EXPECT_TRUE(f.g().step(used(0), 21).admit.empty()) << "A still waits for L";
  f.g().exited(f.r, ExitKind::finished, 0, 100);
  EXPECT_EQ(f.g().step(used(0), 100).admit, std::vector<JobId>{f.l});
}

TEST(GovernorPacking, AJobThatDelaysTheLongOneStartsWhenWaitingWouldEndLater) {
  // L holds 7 GiB to its end: A cannot run beside it at all, so making A
  // wait only puts it after L (ending at 550 s instead of 451 s).
  Packing f(AdmissionPolicy::packing, 1.0);
  EXPECT_EQ(f.g().step(used(0), 1).admit, std::vector<JobId>{f.a});
}

// R, predicted to end at 100 s, still runs: when it will end, and L fit,
// is not known. It is taken to run on by as much again as it has overrun:
// at 150 s, to 200 s, so H, which ends first, starts and A (which would
// keep L out to 300 s) waits; at 300 s, to 500 s, so A, which ends by
// then, starts. Taken to end a tenth of its time from now at every step,
// L's moment was always close and A waited for it for ever: a real nvcc
// kernel on a machine slower than its prior's ran 214 CPU-s for a
// predicted 137 while a job that fit beside its tail waited
// (bench/real-kernels).
TEST(GovernorPacking, ARunningJobPastItsPredictedTimeIsTakenToRunAsLongAgainAsItHasOverrun) {
  Packing f(AdmissionPolicy::packing, 0.3);
  EXPECT_EQ(f.g().step(used(0), 150).admit, std::vector<JobId>{f.h});
  EXPECT_TRUE(f.g().job(f.a).queue.blocked_by_memory);
  f.g().exited(f.h, ExitKind::finished, 0, 170);
  EXPECT_TRUE(f.g().step(used(0), 170).admit.empty()) << "R taken to end at 240 s: A would keep L out";
  EXPECT_EQ(f.g().step(used(0), 300).admit, std::vector<JobId>{f.a});
}

// A small queue is weighed whole. R (6 GiB, 100 s) runs on one of two
// slots in 10.5 GiB; waiting are H (6 GiB, 200 s), A (4 GiB, 150 s) and
// C (4 GiB, 100 s), each falling to 1 GiB 30-40% into its life. H fits
// once R falls, at 30 s. A fits now, but would keep H out to 100 s. By
// the two jobs alone A should wait (H at 30 s, A at 100 s: both end by
// 250 s, not 300 s); but then C waits for a slot until H ends and the
// build ends at 330 s. A started now, H at 100 s and C at 150 s end it at
// 300 s. The shape of bench/real-kernels' four nvcc kernels, where one
// core stood idle for the first 150 s.
namespace {
struct SmallQueue : Fixture {
  JobId r, h, a, c;
  explicit SmallQueue(int fillers) : Fixture(10 * GiB + 512 * MiB, 2) {
    const auto job = [this](const std::string& id, Bytes peak, double wall, double fall_x) {
      Prediction p;
      p.peak = peak;
      p.wall_s = wall;
      p.peak_over_frac = fall_x;
      p.after_peak = 1 * GiB;
      p.source = PredictionSource::history;
      p.confidence = 1;
      preds[id] = p;
      JobKey k;
      k.identity = id;
      return g().submit(k, 0);
    };
    r = job("r", 6 * GiB, 100, 0.3);
    EXPECT_EQ(g().step(used(0), 0).admit, std::vector<JobId>{r});
    h = job("h", 6 * GiB, 200, 0.3);
    a = job("a", 4 * GiB, 150, 0.4);
    c = job("c", 4 * GiB, 100, 0.3);
    // Jobs that never fit beside anything, shorter than all: they only
    // make the queue long.
    for (int i = 0; i < fillers; ++i) job("filler" + std::to_string(i), 10 * GiB, 5, 1.0);
  }
};
}  // namespace

TEST(GovernorPacking, AJobThatDelaysTheHeadStartsWhenTheWholeSmallQueueEndsSooner) {
  SmallQueue f(0);
  EXPECT_EQ(f.g().step(used(0), 0.1).admit, std::vector<JobId>{f.a});
}

TEST(GovernorPacking, WithManyWaitingAJobIsWeighedByTheTwoJobsAlone) {
  SmallQueue f(8);
  EXPECT_TRUE(f.g().step(used(0), 0.1).admit.empty());
  EXPECT_TRUE(f.g().job(f.a).queue.blocked_by_memory);
}

TEST(GovernorPacking, WithoutDurationsItIsLongestFirst) {
  // Cold: no job's duration is known, so no moment can be told.
  for (AdmissionPolicy policy : {AdmissionPolicy::longest_first, AdmissionPolicy::packing}) {
    Fixture f(3 * GiB);
    f.cfg.admission = policy;
    JobId a = f.submit("a", 2 * GiB);
    JobId b = f.submit("b", 2 * GiB);
    JobId c = f.submit("c", 512 * MiB);
    EXPECT_EQ(f.g().step(used(0), 0).admit, (std::vector<JobId>{a, c})) << name(policy);
    EXPECT_TRUE(f.g().job(b).queue.blocked_by_memory);
  }
}

TEST(GovernorPacking, PolicyNames) {
  EXPECT_EQ(name(AdmissionPolicy::longest_first), "longest-first");
  EXPECT_EQ(parse_admission_policy("packing"), AdmissionPolicy::packing);
  EXPECT_EQ(parse_admission_policy("longest-first"), AdmissionPolicy::longest_first);
  EXPECT_FALSE(parse_admission_policy("fastest"));
}

TEST(Governor, CountsTimeHeldBackByMemoryAndByCpu) {
  Fixture f(1 * GiB, 1);
  f.submit("a", 800 * MiB);
  f.submit("b", 800 * MiB);
  f.g().step(used(0), 0);  // a runs, b waits for the CPU slot
  f.g().step(used(0), 2);
  EXPECT_EQ(f.g().counters().at(Counter::cpu_bound_ms), 2000);
  Fixture m(1 * GiB, 4);
  m.submit("a", 800 * MiB);
  m.submit("b", 800 * MiB);
  m.g().step(used(0), 0);
  m.g().step(used(0), 3);
  EXPECT_EQ(m.g().counters().at(Counter::memory_bound_ms), 3000);
  EXPECT_EQ(m.g().counters().at(Counter::wait_memory_ms), 3000);
}

// --jobs 8 on 2 cores: a job waiting for memory while both cores compute
// is held back by the cores, not the memory; --jobs 1 on 2 cores holds a
// job back with a core free: the slots, not the cores.
TEST(Governor, WhatHeldABuildBackIsReadAgainstTheCores) {
  Fixture f(1 * GiB, 8);
  f.cfg.cores = 2;
  f.submit("a", 400 * MiB);
  f.submit("b", 400 * MiB);
  f.submit("c", 400 * MiB);  // does not fit beside a and b
  f.g().step(used(0), 0);
  f.g().step(used(0), 2);
  EXPECT_EQ(f.g().counters().at(Counter::cpu_bound_ms), 2000) << "both cores were busy";
  EXPECT_EQ(f.g().counters().at(Counter::memory_bound_ms), 0);
  Fixture one(1 * GiB, 8);
  one.cfg.cores = 2;
  one.submit("a", 800 * MiB);
  one.submit("b", 800 * MiB);
  one.g().step(used(0), 0);
  one.g().step(used(0), 3);
  EXPECT_EQ(one.g().counters().at(Counter::memory_bound_ms), 3000) << "a core was free: memory held b back";
  Fixture slots(4 * GiB, 1);
  slots.cfg.cores = 2;
  slots.submit("a", 100 * MiB);
  slots.submit("b", 100 * MiB);
  slots.g().step(used(0), 0);
  slots.g().step(used(0), 1);
  EXPECT_EQ(slots.g().counters().at(Counter::slots_bound_ms), 1000) << "--jobs 1 on 2 cores";
  EXPECT_EQ(slots.g().counters().at(Counter::cpu_bound_ms), 0);
  // --jobs 4 on 2 cores under ninja -j4: none waits here, four share two cores.
  Fixture over(4 * GiB, 4);
  over.cfg.cores = 2;
  for (const char* n : {"a", "b", "c", "d"}) over.submit(n, 100 * MiB);
  ASSERT_EQ(over.g().step(used(0), 0).admit.size(), 4u);
  over.g().step(used(0), 2);
  EXPECT_EQ(over.g().counters().at(Counter::cpu_bound_ms), 2000) << "4 jobs on 2 cores";
  Fixture even(4 * GiB, 2);
  even.cfg.cores = 2;
  for (const char* n : {"a", "b"}) even.submit(n, 100 * MiB);
  even.g().step(used(0), 0);
  even.g().step(used(0), 2);
  EXPECT_EQ(even.g().counters().at(Counter::cpu_bound_ms), 0) << "as many jobs as cores, none waiting";
}

TEST(Governor, WaitingJobsPickUpBetterPredictions) {
  Fixture f(2 * GiB);
  JobId a = f.submit("a", 1536 * MiB);
  JobId b = f.submit("b", 1536 * MiB);
  f.g().step(used(0), 0);
  EXPECT_EQ(f.g().job(b).state, JobState::waiting);
  f.preds["b"].peak = 300 * MiB;  // what the predictor will say once it has learned
  JobRecord finished;
  finished.key.identity = "a";
  f.g().learn(finished);
  EXPECT_EQ(f.learned, std::vector<std::string>{"a"});
  Decisions d = f.g().step(used(0), 1);
  EXPECT_EQ(d.admit, std::vector<JobId>{b});
  (void)a;
}

TEST(Governor, RecordsWaitTimeAcrossAttempts) {
  Fixture f(2 * GiB);
  JobId a = f.submit("a", 1536 * MiB, 0, 1, 0);
  JobId b = f.submit("b", 1536 * MiB, 0, 1, 0);
  f.g().step(used(0), 0);
  f.g().exited(a, ExitKind::finished, 0, 5);
  f.g().step(used(0), 5);
  EXPECT_DOUBLE_EQ(f.record(b, 5).wait_s, 5);
  EXPECT_EQ(f.g().job(b).state, JobState::running);
}

TEST(Governor, AWrapperThatLeavesWhileWaitingIsCancelled) {
  Fixture f(1 * GiB, 1);
  JobId a = f.submit("a", 512 * MiB);
  JobId b = f.submit("b", 512 * MiB);
  f.g().step(used(0), 0);
  EXPECT_FALSE(f.g().exited(b, ExitKind::lost, -1, 1));
  EXPECT_EQ(f.g().job(b).state, JobState::done);
  EXPECT_EQ(f.g().counters().at(Counter::cancelled), 1);
  f.g().exited(a, ExitKind::finished, 0, 2);
  EXPECT_TRUE(f.g().step(used(0), 2).admit.empty());
}

// Offload and decline.
// default), they start in the build tool's order (the wrappers' pids), not
// in the order their wrappers happened to connect.
TEST(Governor, TiesGoInTheBuildToolsOrder) {
  Fixture f(8 * GiB, 1);
  JobKey late, early, plain;
  late.identity = "small_a";
  early.identity = "big_a";
  plain.identity = "no_order";
  JobId l = f.g().submit(late, 0, "", 4200);
  JobId e = f.g().submit(early, 0, "", 4100);
  ASSERT_EQ(f.g().step(used(0), 0).admit, std::vector<JobId>{e});
  f.g().exited(e, ExitKind::finished, 0, 1);
  ASSERT_EQ(f.g().step(used(0), 1).admit, std::vector<JobId>{l});
  // Without an order, the order of submission.
  Fixture g(8 * GiB, 1);
  JobId first = g.g().submit(plain, 0);
  g.g().submit(late, 0);
  EXPECT_EQ(g.g().step(used(0), 0).admit, std::vector<JobId>{first});
}
