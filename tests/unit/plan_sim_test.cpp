// The plan simulator against schedules computed by hand: static -j N with
// processor sharing, memory that follows progress, the contention
// estimate of a recorded build, and memgate's governor in simulated time.
#include <gtest/gtest.h>

#include <numeric>

#include "plan/plan.hpp"
#include "plan/recorded.hpp"
#include "plan/simulate.hpp"

using namespace memgate;
using namespace memgate::plan;

namespace {

PlanJob flat_job(std::string name, double work_s, double cpu_s, Bytes bytes, int threads = 1) {
  PlanJob j;
  j.name = std::move(name);
  j.work_s = work_s;
  j.cpu_s = cpu_s;
  j.threads = threads;
  j.key.cpu_weight = threads;
  j.profile = {{0.0, bytes}, {1.0, bytes}};
  normalize(j);
  return j;
}

std::vector<int> in_order(size_t n) {
  std::vector<int> o(n);
  std::iota(o.begin(), o.end(), 0);
  return o;
}

double wall(const std::vector<PlanJob>& jobs, int n, int cores) {
  return simulate_static(jobs, in_order(jobs.size()), n, cores).wall_s;
}

Bytes peak(const std::vector<PlanJob>& jobs, int n, int cores) {
  return peak_memory(jobs, simulate_static(jobs, in_order(jobs.size()), n, cores).traces);
}

}  // namespace

TEST(PlanSim, FourIdenticalSleepingJobsAtJ2TakeTwiceOneJob) {
  std::vector<PlanJob> jobs(4, flat_job("sleep", 10, 0, 100 * MiB));
  EXPECT_DOUBLE_EQ(wall(jobs, 1, 1), 40);
  EXPECT_DOUBLE_EQ(wall(jobs, 2, 1), 20);  // one core, but sleeping jobs need none
  EXPECT_DOUBLE_EQ(wall(jobs, 4, 1), 10);
}

TEST(PlanSim, CpuBoundJobsOnTwoCoresAtJ4TakeAsLongAsAtJ2) {
  std::vector<PlanJob> jobs(4, flat_job("cc", 10, 10, 100 * MiB));
  EXPECT_NEAR(wall(jobs, 2, 2), 20, 1e-9);
  EXPECT_NEAR(wall(jobs, 4, 2), 20, 1e-9);
  EXPECT_NEAR(wall(jobs, 4, 4), 10, 1e-9);
  EXPECT_NEAR(wall(jobs, 3, 2), 25, 1e-9);  // 3 at 2/3 speed for 15 s, then the last alone for 10 s
}

TEST(PlanSim, SleepingJobsNeitherSlowNorAreSlowedByCpuJobs) {
  std::vector<PlanJob> jobs{flat_job("cc1", 10, 10, 1), flat_job("cc2", 10, 10, 1), flat_job("remote1", 10, 0, 1),
                            flat_job("remote2", 10, 0, 1)};
  EXPECT_NEAR(wall(jobs, 4, 2), 10, 1e-9);
}

TEST(PlanSim, OnlyTheCpuPartOfAJobStretches) {
  // Half computing, half waiting: 3 of them want 1.5 cores of 1. Each
  // computing thread gets 2/3 of a core, so W * (0.5 + 0.5 / (2/3)) = 1.25 W.
  std::vector<PlanJob> jobs(3, flat_job("half", 8, 4, 1));
  EXPECT_NEAR(wall(jobs, 3, 1), 10, 1e-9);
  std::vector<PlanJob> two(2, flat_job("half", 8, 4, 1));
  EXPECT_NEAR(wall(two, 2, 1), 8, 1e-9);  // 1 core of demand on 1 core: no slowdown
}

TEST(PlanSim, AMultiThreadedJobWiderThanTheMachineIsSlowed) {
  std::vector<PlanJob> jobs{flat_job("nvcc-t4", 10, 40, 1, 4)};
  EXPECT_NEAR(wall(jobs, 1, 2), 20, 1e-9);
  EXPECT_NEAR(wall(jobs, 1, 8), 10, 1e-9);
}

TEST(PlanSim, PeakOfJnIsTheSumOfTheNLargestConcurrentProfiles) {
  std::vector<PlanJob> jobs{flat_job("a", 10, 10, 3 * GiB), flat_job("b", 10, 10, 1 * GiB),
                            flat_job("c", 10, 10, 2 * GiB), flat_job("d", 10, 10, 4 * GiB)};
  // Same lengths: -j2 runs {a, b} then {c, d}; a job ending and the next
  // starting at one instant never count together.
  EXPECT_NEAR(peak(jobs, 2, 8), 6 * GiB, 1024);
  EXPECT_NEAR(peak(jobs, 1, 8), 4 * GiB, 1024);
  EXPECT_NEAR(peak(jobs, 4, 8), 10 * GiB, 1024);
  EXPECT_EQ(largest_peaks_sum(jobs, 2), 7 * GiB);  // the bound over any order
}

TEST(PlanSim, MemoryFollowsProgressNotTheClock) {
  // Two CPU jobs share one core, so `spiky` reaches half its work at t = W,
  // after `short` (a sleeping job holding 1 GiB until 0.75 W) has ended.
  // Following the clock instead would put the spike at W / 2, over `short`.
  PlanJob spiky = flat_job("spiky", 10, 10, 0);
  spiky.profile = {{0.0, 0}, {0.45, 0}, {0.5, 1 * GiB}, {0.55, 0}, {1.0, 0}};
  normalize(spiky);
  std::vector<PlanJob> jobs{spiky, flat_job("other", 10, 10, 0), flat_job("short", 7.5, 0, 1 * GiB)};
  EXPECT_NEAR(peak(jobs, 3, 1), 1 * GiB, 1024);
  EXPECT_NEAR(wall(jobs, 3, 1), 20, 1e-9);
}

TEST(PlanSim, PeakFindsOverlapsBetweenProfilePoints) {
  // A rising and a falling ramp cross mid-way: the sum is flat at 1 GiB,
  // never 2 GiB, and a spike of one lands on the other's slope.
  PlanJob up = flat_job("up", 10, 0, 0), down = flat_job("down", 10, 0, 0);
  up.profile = {{0.0, 0}, {1.0, 1 * GiB}};
  down.profile = {{0.0, 1 * GiB}, {1.0, 0}};
  normalize(up);
  normalize(down);
  EXPECT_NEAR(peak({up, down}, 2, 1), 1 * GiB, 1024);
  PlanJob spike = flat_job("spike", 10, 0, 0);
  spike.profile = {{0.0, 0}, {0.25, 0}, {0.3, 2 * GiB}, {0.35, 0}, {1.0, 0}};
  normalize(spike);
  EXPECT_NEAR(peak({up, spike}, 2, 1), 2 * GiB + 3 * GiB / 10, 1024);
}

TEST(PlanSim, RecordedContentionIsTakenOutOfTheWallTimes) {
  // Recorded: 4 CPU jobs of 10 CPU-s each ran together on 2 cores for 20 s.
  BuildRecord b;
  b.slots = 2;
  for (int i = 0; i < 4; ++i) {
    JobRecord j;
    j.key.identity = "cc" + std::to_string(i);
    j.submit_s = j.start_s = 0;
    j.end_s = 20;
    j.cpu_s = 10;
    j.peak_bytes = 100 * MiB;
    b.jobs.push_back(j);
  }
  JobRecord sleeper;
  sleeper.key.identity = "sleep";
  sleeper.submit_s = sleeper.start_s = 0;
  sleeper.end_s = 20;
  sleeper.peak_bytes = 100 * MiB;
  b.jobs.push_back(sleeper);
  std::vector<PlanJob> jobs = jobs_from_build(b);
  ASSERT_EQ(jobs.size(), 5u);
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(jobs[i].work_s, 10, 1e-6) << jobs[i].name;
  EXPECT_NEAR(jobs[4].work_s, 20, 1e-9) << "a sleeping job was not slowed";
  EXPECT_NEAR(wall(jobs, 5, 2), 20, 1e-6) << "re-simulating the recorded build gives its wall time back";
  EXPECT_NEAR(wall(jobs, 1, 2), 60, 1e-6);
}

TEST(PlanSim, CpuOthersTookOnALoadedMachineIsNotReadAsWaiting) {
  // Two compiles of 0.88 CPU-s each ran together for 2.2 s on
  // 2 cores while a burner beside them took 1.2 cores. Without the burner's
  // CPU they read as 60% waiting and -j8 looks 3x faster; with it, as
  // compiles slowed by the burner, and no job count beats -j2.
  BuildRecord b;
  b.slots = 2;
  b.start_unix = 100;
  b.end_unix = 102.2;
  b.counters[Counter::other_cpu_ms] = 2640;  // 1.2 cores over 2.2 s
  for (int i = 0; i < 2; ++i) {
    JobRecord j;
    j.key.identity = "cc" + std::to_string(i);
    j.end_s = 2.2;
    j.cpu_s = 0.88;
    j.peak_bytes = 10 * MiB;
    b.jobs.push_back(j);
  }
  JobRecord sleeper;  // a job that slept beside them stays a sleeper
  sleeper.key.identity = "sleep";
  sleeper.end_s = 2.2;
  sleeper.cpu_s = 0.01;
  b.jobs.push_back(sleeper);
  EXPECT_NEAR(cores_left_to_build(b), 0.8, 1e-9);
  std::vector<PlanJob> jobs = jobs_from_build(b);
  for (size_t i = 0; i < 2; ++i) EXPECT_NEAR(jobs[i].cpu_fraction(), 1.0, 1e-6) << jobs[i].name;
  EXPECT_GT(jobs[2].work_s, 2.0);
  std::vector<PlanJob> many;
  for (int i = 0; i < 8; ++i) many.push_back(jobs[static_cast<size_t>(i % 2)]);
  EXPECT_NEAR(wall(many, 8, 2), wall(many, 2, 2), 1e-6);

  b.jobs.pop_back();  // the two compiles without other_cpu_ms, for contrast
  b.counters.clear();
  EXPECT_LT(jobs_from_build(b)[0].cpu_fraction(), 0.5);
}

TEST(PlanSim, AJobWithoutAProfileGetsOneFromItsFigures) {
  BuildRecord b;
  b.slots = 1;
  JobRecord j;
  j.key.identity = "nvcc";
  j.start_s = 0;
  j.end_s = 100;
  j.peak_bytes = 4 * GiB;
  j.t_peak_s = 20;
  j.peak_over_frac = 0.3;
  j.after_peak_bytes = 1 * GiB;
  b.jobs.push_back(j);
  PlanJob p = jobs_from_build(b).at(0);
  EXPECT_EQ(p.peak, 4 * GiB);
  EXPECT_EQ(memory_at(p.profile, 0.2), 4 * GiB);
  EXPECT_EQ(memory_at(p.profile, 0.3), 4 * GiB);
  EXPECT_EQ(memory_at(p.profile, 0.6), 1 * GiB);
  EXPECT_DOUBLE_EQ(p.predicted.peak_over_frac, 0.3);
  EXPECT_DOUBLE_EQ(p.predicted.wall_s, 100);
}

TEST(PlanSim, DownsamplingKeepsThePeak) {
  std::vector<MemSample> s;
  for (int t = 0; t < 300; ++t) s.push_back({static_cast<double>(t), (t == 137 ? 9 : 1) * GiB});
  auto prof = profile_from_samples(s, 300, 9 * GiB, 137);
  EXPECT_LE(prof.size(), kMaxProfilePoints);
  Bytes top = 0;
  for (const auto& pt : prof) top = std::max(top, pt.bytes);
  EXPECT_EQ(top, 9 * GiB);
  EXPECT_DOUBLE_EQ(prof.front().p, 0.0);
  EXPECT_DOUBLE_EQ(prof.back().p, 1.0);
}

TEST(PlanMemgate, RunsWhatFitsTheBudgetAndNeverExceedsIt) {
  // 3 GiB each, 8 GiB capacity (512 MiB reserve): two at a time.
  std::vector<PlanJob> jobs(4, flat_job("cc", 10, 10, 3 * GiB));
  Machine m{4, 8 * GiB, 512 * MiB};
  MemgateRun run = simulate_memgate(jobs, m);
  EXPECT_TRUE(run.finished);
  EXPECT_EQ(run.failed, 0);
  EXPECT_NEAR(run.wall_s, 20, 1e-6);
  EXPECT_NEAR(run.peak, 6 * GiB, 1024);
  EXPECT_EQ(get(run.counters, Counter::admitted), 4);
}

TEST(PlanMemgate, StartsJobsInTheMemoryAJobPastItsPeakGaveBack) {
  // Peaks at 3 GiB early, then holds 512 MiB: the governor releases the
  // reservation once a job is past its peak, so jobs overlap.
  PlanJob j = flat_job("nvcc", 100, 100, 0);
  j.profile = synthesize_profile(3 * GiB, 0.1, 0.2, 512 * MiB);
  j.predicted = {};
  normalize(j);
  ASSERT_LT(j.predicted.peak_over_frac, 0.25);
  std::vector<PlanJob> jobs(4, j);
  Machine m{4, 4 * GiB + 512 * MiB, 512 * MiB};  // 4 GiB budget: one peak at a time
  MemgateRun run = simulate_memgate(jobs, m);
  EXPECT_TRUE(run.finished);
  // A job past its peak keeps 1.1 x 512 MiB: the next one fits beside one
  // such job, not two, so pairs overlap: 0-100 and 22-122, then 100-200
  // and 122-222. Serialised would take 400 s.
  EXPECT_NEAR(run.wall_s, 222, 1.0);
  EXPECT_LE(run.peak, m.budget());
  EXPECT_EQ(get(run.counters, Counter::oom_killed), 0);
}

TEST(PlanMemgate, AnUnderpredictedJobIsFrozenOrKilledAndTheBuildStillFinishes) {
  PlanJob j = flat_job("liar", 20, 20, 3 * GiB);
  j.predicted.peak = 1 * GiB;  // history was wrong
  std::vector<PlanJob> jobs(3, j);
  Machine m{4, 6 * GiB, 512 * MiB};
  MemgateRun run = simulate_memgate(jobs, m);
  EXPECT_TRUE(run.finished);
  EXPECT_EQ(run.failed, 0);
  std::int64_t acted = 0;
  for (Counter c : {Counter::frozen, Counter::requeued, Counter::oom_killed}) acted += get(run.counters, c);
  EXPECT_GT(acted, 0);
  // The cost of optimism: a killed attempt's CPU (progress x 20 CPU-s)
  // is counted, never more than the attempts could have spent.
  std::int64_t deaths = get(run.counters, Counter::requeued) + get(run.counters, Counter::oom_killed);
  if (deaths > 0) {
    EXPECT_GT(get(run.counters, Counter::requeued_cpu_ms), 0);
  }
  EXPECT_LE(get(run.counters, Counter::requeued_cpu_ms), deaths * 20000);
  EXPECT_GE(run.wall_s, 40);
}

namespace {

PlanJob peaky_job(std::string name, double work_s, Bytes peak, double peak_over, Bytes after) {
  PlanJob j = flat_job(std::move(name), work_s, 0, 0);
  j.profile = synthesize_profile(peak, 0.1, peak_over, after);
  j.predicted = {};
  normalize(j);
  return j;
}

MemgateRun with_policy(const std::vector<PlanJob>& jobs, const Machine& m, AdmissionPolicy p) {
  MemgateSimOptions o;
  o.admission = p;
  return simulate_memgate(jobs, m, o);
}

}  // namespace

// A job that would keep a longer one from starting waits when
// the longer one will make room for it soon after its peak.
TEST(PlanMemgate, PackingLetsALongJobStartAndFitsTheNextOneBesideItsTail) {
  // 11 GiB budget. X (300 s, 6 GiB until 20%, then 1 GiB) runs first. L
  // (280 s, 7 GiB until 30%, then 1 GiB) fits once X is past its peak.
  // Longest-first starts A (250 s, 4 GiB) beside X at once, so L starts
  // only when A ends: 250 + 280 = 530 s. Packing holds A for L (60 s),
  // starts H (20 s, 4 GiB) in the gap and A beside L's tail (144 s).
  std::vector<PlanJob> jobs{peaky_job("x", 300, 6 * GiB, 0.2, 1 * GiB), peaky_job("l", 280, 7 * GiB, 0.3, 1 * GiB),
                            flat_job("a", 250, 0, 4 * GiB), flat_job("h", 20, 0, 4 * GiB)};
  Machine m{8, 11 * GiB + 512 * MiB, 512 * MiB};
  ASSERT_EQ(m.budget(), 11 * GiB);
  MemgateRun lf = with_policy(jobs, m, AdmissionPolicy::longest_first);
  MemgateRun pk = with_policy(jobs, m, AdmissionPolicy::packing);
  for (const MemgateRun* r : {&lf, &pk}) {
    EXPECT_TRUE(r->finished);
    EXPECT_EQ(r->failed, 0);
    EXPECT_LE(r->peak, m.budget());
    EXPECT_EQ(get(r->counters, Counter::oom_killed), 0);
  }
  // Longest-first starts H at 64 s beside A in the memory X gives back as
  // it falls, up to 97% of the budget: the governor may freeze or requeue
  // there. Packing never gets that close.
  EXPECT_EQ(get(pk.counters, Counter::requeued), 0);
  EXPECT_EQ(get(pk.counters, Counter::frozen), 0);
  EXPECT_NEAR(lf.wall_s, 530, 2);
  // 395 s by the predictions; a job's reservation falls with its memory
  // over the few seconds after its peak, so L and A start a few seconds
  // after the predicted moments.
  EXPECT_NEAR(pk.wall_s, 400, 10);
}

// Where waiting gains nothing, packing does what longest-first does, and
// it is never slower on the scenarios above.
TEST(PlanMemgate, PackingIsNoSlowerWhereWaitingGainsNothing) {
  Machine m{8, 11 * GiB + 512 * MiB, 512 * MiB};
  // L holds its 7 GiB to the end: A can never run beside it.
  std::vector<PlanJob> serial{peaky_job("x", 300, 6 * GiB, 0.2, 1 * GiB), flat_job("l", 280, 0, 7 * GiB),
                              flat_job("a", 250, 0, 4 * GiB), flat_job("h", 20, 0, 4 * GiB)};
  // (Packing is faster here, 530 s to 550 s: its reservation for the head
  // lets the short h run where longest-first's starvation guard holds it.)
  EXPECT_LE(with_policy(serial, m, AdmissionPolicy::packing).wall_s,
            with_policy(serial, m, AdmissionPolicy::longest_first).wall_s + 1e-6);
  PlanJob nv = flat_job("nvcc", 100, 100, 0);
  nv.profile = synthesize_profile(3 * GiB, 0.1, 0.2, 512 * MiB);
  nv.predicted = {};
  normalize(nv);
  std::vector<std::pair<std::vector<PlanJob>, Machine>> cases{
      {std::vector<PlanJob>(4, flat_job("cc", 10, 10, 3 * GiB)), Machine{4, 8 * GiB, 512 * MiB}},
      {std::vector<PlanJob>(4, nv), Machine{4, 4 * GiB + 512 * MiB, 512 * MiB}},
      {serial, m}};
  for (const auto& [jobs, machine] : cases)
    EXPECT_LE(with_policy(jobs, machine, AdmissionPolicy::packing).wall_s,
              with_policy(jobs, machine, AdmissionPolicy::longest_first).wall_s + 1e-6);
}

TEST(PlanRecommend, SmallestSafeCountWithinFivePercentOfTheBest) {
  // 8 CPU jobs of 10 s and 1 GiB on 4 cores: -j4 and more take 20 s.
  std::vector<PlanJob> jobs(8, flat_job("cc", 10, 10, 1 * GiB));
  PlanOptions o;
  o.orders = 20;
  PlanResult r = make_plan(jobs, Machine{4, 64 * GiB, 2 * GiB}, o);
  ASSERT_TRUE(r.recommended);
  EXPECT_EQ(*r.recommended, 4);
  EXPECT_NEAR(r.best_safe_wall_s, 20, 1e-6);
  // With 3.5 GiB of budget only 3 fit: -j3 takes 30 s, and is the answer.
  r = make_plan(jobs, Machine{4, 4 * GiB, 512 * MiB}, o);
  ASSERT_TRUE(r.recommended);
  EXPECT_EQ(*r.recommended, 3);
  EXPECT_EQ(r.safe_up_to, 3);
  const PlanRow& row4 = r.rows.at(3);
  EXPECT_EQ(row4.jobs, 4);
  EXPECT_FALSE(row4.safe);
  EXPECT_DOUBLE_EQ(row4.oom_risk, 0.0) << "4 GiB exactly is not above the capacity";
  const PlanRow& row5 = r.rows.at(4);
  EXPECT_DOUBLE_EQ(row5.oom_risk, 1.0);
  ASSERT_TRUE(r.memgate);
  EXPECT_NEAR(r.memgate->wall_s, 30, 1e-6);
}

TEST(PlanRecommend, NothingIsSafeWhenOneJobAloneIsTooBig) {
  std::vector<PlanJob> jobs{flat_job("small", 10, 10, 1 * GiB), flat_job("huge", 10, 10, 10 * GiB)};
  PlanResult r = make_plan(jobs, Machine{4, 8 * GiB, 512 * MiB});
  EXPECT_FALSE(r.recommended);
  EXPECT_EQ(r.safe_up_to, 0);
  EXPECT_EQ(r.largest_job, "huge");
}
