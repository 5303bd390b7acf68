#include "report/summary.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

using namespace memgate;

namespace {

JobRecord job(const std::string& identity, Bytes peak, Bytes predicted) {
  JobRecord j;
  j.key.tool = "cc";
  j.key.identity = identity;
  j.peak_bytes = peak;
  j.predicted.peak = predicted;
  j.start_s = 1;
  j.end_s = 5;
  return j;
}

// 40 jobs in 120 s on a 2.5 GiB budget, limited as the counters say.
BuildRecord build(std::int64_t memory_bound_ms, std::int64_t cpu_bound_ms) {
  BuildRecord b;
  b.start_unix = 1000;
  b.end_unix = 1120;
  b.budget = 2560 * MiB;
  b.peak_bytes = 2048 * MiB;
  for (int i = 0; i < 40; ++i) b.jobs.push_back(job("cc:obj/f" + std::to_string(i) + ".o", (i + 1) * MiB, 0));
  b.counters = {{Counter::memory_bound_ms, memory_bound_ms}, {Counter::cpu_bound_ms, cpu_bound_ms}};
  return b;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(Summary, MemoryBoundBuildSaysMoreRamWouldHelp) {
  std::string s = format_summary(build(74400, 6000));  // 62% and 5% of 120 s
  EXPECT_TRUE(contains(s, "memgate: memory-bound for 62% of the build: more RAM would help, more cores would not\n")) << s;
}

TEST(Summary, CpuBoundBuildSaysMoreCoresWouldHelp) {
  std::string s = format_summary(build(1000, 96000));
  EXPECT_TRUE(contains(s, "CPU-bound for 80% of the build: more cores would help")) << s;
  EXPECT_FALSE(contains(s, "memory-bound")) << s;
}

TEST(Summary, BothLimitsAreNamedWhenBothHeldTheBuildBack) {
  std::string s = format_summary(build(48000, 36000));
  EXPECT_TRUE(contains(s, "memory-bound for 40% and CPU-bound for 30% of the build")) << s;
}

TEST(Summary, NeitherLimitMeansTheBuildsOwnParallelismDid) {
  std::string s = format_summary(build(6000, 12000));  // 5% and 10%: below the 20% threshold
  EXPECT_TRUE(contains(s, "neither memory nor CPU held jobs back: the build's own parallelism")) << s;
}

TEST(Summary, SaysSoWhenTheLimitsWereNotRecorded) {
  BuildRecord b = build(0, 0);
  b.counters.clear();
  EXPECT_TRUE(contains(format_summary(b), "did not record what limited it"));
}

static int line_count(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

TEST(Summary, EveryLineIsPrefixedForStderr) {
  std::istringstream in(format_summary(build(74400, 0), {}, {}, true));
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    EXPECT_EQ(line.rfind("memgate: ", 0), 0u) << line;
  }
  EXPECT_GE(lines, 6);
}

TEST(Summary, TwoLinesWhenMemgateDidNotAct) {
  BuildRecord b = build(1000, 96000);
  b.counters[Counter::wait_memory_ms] = 3000;  // waiting is admission, not an action
  std::string s = format_summary(b);
  EXPECT_EQ(s,
            "memgate: 40 jobs in 2m00s (20.0/min), peak 2.00 GiB of 2.50 GiB (80%)\n"
            "memgate: CPU-bound for 80% of the build: more cores would help, more RAM would not\n");
  EXPECT_FALSE(contains(s, "0 freezes")) << s;
}

TEST(Summary, OneLineForABuildWithoutJobs) {
  BuildRecord b;
  b.start_unix = 1000;
  b.end_unix = 1000.5;
  EXPECT_EQ(format_summary(b), "memgate: finished in 0.5s, no compiler jobs gated\n");
  b.exit_status = 1;
  EXPECT_EQ(format_summary(b), "memgate: finished in 0.5s, exit status 1, no compiler jobs gated\n");
}

TEST(Summary, DetailsFollowWhenMemgateFroze) {
  BuildRecord b = build(74400, 0);
  b.counters[Counter::frozen] = 2;
  b.counters[Counter::frozen_ms] = 4000;
  std::string s = format_summary(b);
  EXPECT_TRUE(contains(s, "memgate: jobs waited 0.0s for memory in total (0 jobs held back), 4.0s frozen\n")) << s;
  EXPECT_TRUE(contains(s, "memgate: 2 freezes\n")) << s;
  EXPECT_TRUE(contains(s, "heaviest jobs (peak, predicted):")) << s;
  EXPECT_FALSE(contains(s, "requeue")) << "only what happened: " << s;
}

TEST(Summary, VerboseShowsEveryCounter) {
  std::string s = format_summary(build(0, 0), {}, {}, true);
  EXPECT_TRUE(contains(s, "0 freezes, 0 requeues, 0 retries, 0 OOM kills, 0 jobs ran alone")) << s;
  EXPECT_GT(line_count(s), 3);
}

TEST(Summary, ShowsWallTimeRateMemoryAndCounters) {
  BuildRecord b = build(0, 0);
  b.counters[Counter::frozen] = 3;
  b.counters[Counter::requeued] = 1;
  b.counters[Counter::requeued_cpu_ms] = 4200;
  b.counters[Counter::retried] = 2;
  b.counters[Counter::oom_killed] = 1;
  b.counters[Counter::wait_memory_ms] = 70000;
  b.counters[Counter::waited_for_memory] = 12;
  b.jobs[3].exit_status = 1;
  std::string s = format_summary(b);
  EXPECT_TRUE(contains(s, "memgate: 40 jobs (1 failed) in 2m00s (20.0/min), peak 2.00 GiB of 2.50 GiB (80%)\n")) << s;
  EXPECT_TRUE(contains(s, "jobs waited 1m10s for memory in total (12 jobs held back)")) << s;
  EXPECT_TRUE(contains(s, "3 freezes, 1 requeue, 2 retries, 1 OOM kill")) << s;
  EXPECT_TRUE(contains(s, ", 4.2s of CPU done again")) << s;
}

TEST(Summary, SaysHowMuchReservationWasReleasedPastPeaks) {
  BuildRecord b = build(0, 0);
  EXPECT_FALSE(contains(format_summary(b), "released")) << "not recorded: not said";
  b.counters[Counter::released_mib_s] = 0;
  EXPECT_FALSE(contains(format_summary(b), "released")) << "none: not said unless verbose";
  EXPECT_TRUE(contains(format_summary(b, {}, {}, true), "released 0.0 GiB·s"));
  b.counters[Counter::released_mib_s] = 5 * 1024 + 512;
  std::string s = format_summary(b);
  EXPECT_TRUE(contains(s, "memgate: released 5.5 GiB·s of reservations past peaks")) << s;
  EXPECT_DOUBLE_EQ(build_facts(b).released_gib_s, 5.5);
  EXPECT_FALSE(contains(s, "started as others' memory fell")) << "timed starts not recorded: not said";
  b.counters[Counter::timed_starts] = 6;
  s = format_summary(b);
  EXPECT_TRUE(contains(s, "(jobs ran beside others' tails); 6 jobs started as others' memory fell")) << s;
  EXPECT_EQ(build_facts(b).timed_starts, 6);
  EXPECT_EQ(build_facts(b).room_starts, -1) << "not recorded";
  b.counters[Counter::room_starts] = 2;
  s = format_summary(b);
  EXPECT_TRUE(contains(s, "6 jobs started as others' memory fell; 2 jobs started on a guess in the room they left")) << s;
  EXPECT_EQ(build_facts(b).room_starts, 2);
}

TEST(Summary, ListsTheFiveHeaviestJobsHeaviestFirst) {
  BuildRecord b = build(0, 0);
  b.jobs.clear();
  for (int i = 1; i <= 8; ++i) b.jobs.push_back(job("cc:job" + std::to_string(i) + ".o", i * GiB, i * GiB / 2));
  std::string s = format_summary(b, {}, {}, true);
  size_t last = 0;
  for (int i = 8; i >= 4; --i) {
    size_t at = s.find("cc:job" + std::to_string(i) + ".o");
    ASSERT_NE(at, std::string::npos) << i << "\n" << s;
    EXPECT_GT(at, last) << "heaviest first";
    last = at;
  }
  EXPECT_TRUE(contains(s, "8.00 GiB  4.00 GiB  cc:job8.o")) << s;
  for (int i = 1; i <= 3; ++i) EXPECT_FALSE(contains(s, "cc:job" + std::to_string(i) + ".o")) << s;
}

TEST(Summary, IdentitiesCannotDriveTheTerminal) {
  BuildRecord b = build(0, 0);
  b.jobs[39].key.identity = "cc:evil\x1b[2J\nname.o";
  b.jobs[39].peak_bytes = 100 * GiB;
  std::string s = format_summary(b, {}, {}, true);
  EXPECT_FALSE(contains(s, "\x1b")) << s;
  EXPECT_TRUE(contains(s, "cc:evil?[2J?name.o")) << s;
}

TEST(Summary, EmptyBuildIsNotAnError) {
  BuildRecord b;
  std::string s = format_summary(b);
  EXPECT_TRUE(contains(s, "no compiler jobs gated")) << s;
}

TEST(ShortenMiddle, KeepsBothEndsAndRespectsUtf8) {
  EXPECT_EQ(shorten_middle("short", 10), "short");
  EXPECT_EQ(shorten_middle("abcdefghijklmnopqrstuvwxyz", 11), "abcd...wxyz");
  std::string s = shorten_middle("ααααααααααααααααααααα", 12);  // 2-byte characters
  EXPECT_LE(s.size(), 12u);
  EXPECT_NE(s.find("..."), std::string::npos);
  EXPECT_NE(static_cast<unsigned char>(s.back()) & 0xC0, 0xC0) << "no dangling lead byte";
  EXPECT_EQ(s.size() % 2, 1u) << "whole characters on each side of the three dots";
}

namespace {

// A failed build whose job 1 was killed by memory on every attempt.
BuildRecord lost_build(const std::vector<Outcome>& outcomes, int exit_status = 137) {
  BuildRecord b = build(0, 0);
  b.jobs.resize(3);
  b.exit_status = 2;  // make's status
  b.budget = 1536 * MiB;
  b.jobs[1] = job("c++:compile:src/huge.cpp->huge.o", 2300 * MiB, 512 * MiB);
  b.jobs[1].exit_status = exit_status;
  for (const auto& o : outcomes) b.jobs[1].attempt_log.push_back(Attempt{1, 2, o, 2300 * MiB});
  b.jobs[1].attempts = static_cast<int>(outcomes.size());
  return b;
}

// The lines after the last "memgate: degraded" or verdict line.
std::string tail_from(const std::string& s, const std::string& start) {
  size_t at = s.find(start);
  return at == std::string::npos ? "" : s.substr(at);
}

}  // namespace

TEST(MemoryFailure, AJobKilledByTheKernelIsNamedWithItsPeakAndTheBudget) {
  BuildRecord b = lost_build({Outcome::oom, Outcome::oom, Outcome::oom, Outcome::oom});
  std::string s = format_summary(b);
  std::string tail = tail_from(s, "memgate: the build failed because a job ran out of memory");
  ASSERT_FALSE(tail.empty()) << s;
  EXPECT_EQ(s.substr(s.size() - tail.size()), tail) << "the explanation ends the output";
  EXPECT_TRUE(contains(tail, "not because of a compiler error")) << tail;
  EXPECT_TRUE(contains(tail, "memgate:   c++:compile:src/huge.cpp->huge.o\n")) << tail;
  EXPECT_TRUE(contains(tail, "was killed by the kernel's OOM killer (SIGKILL, exit status 137), 4 times: memgate reran it and gave up"))
      << tail;
  EXPECT_TRUE(contains(tail, "it reached 2.25 GiB against a budget of 1.50 GiB (150%)")) << tail;
  EXPECT_TRUE(contains(tail, "\"Killed\" or \"Error 137\"")) << tail;
  EXPECT_TRUE(contains(tail, "what to do: this one job needs more memory than the build may use")) << tail;
  EXPECT_TRUE(contains(tail, "a lower -O level or -g0 for this file")) << tail;
  b.jobs[1].key.tool = "nvcc";
  EXPECT_TRUE(contains(format_memory_failure(b), "fewer GPU targets (TORCH_CUDA_ARCH_LIST, FLASH_ATTN_CUDA_ARCHS)"));
}

TEST(MemoryFailure, AJobThatFitsTheBudgetPointsAtMemoryOutsideTheBuild) {
  BuildRecord b = lost_build({Outcome::oom});
  b.budget = 8 * GiB;
  std::string s = format_memory_failure(b);
  EXPECT_TRUE(contains(s, "was killed by the kernel's OOM killer (SIGKILL, exit status 137);")) << s;
  EXPECT_FALSE(contains(s, "times: memgate reran")) << s;
  EXPECT_TRUE(contains(s, "the job fits the budget on its own")) << s;
  EXPECT_TRUE(contains(s, "--no-confine")) << s;
}

TEST(MemoryFailure, AKillByMemgateAndABareSigkillAreToldApart) {
  std::string by_us = format_memory_failure(lost_build({Outcome::requeued, Outcome::requeued, Outcome::requeued, Outcome::requeued}));
  EXPECT_TRUE(contains(by_us, "was killed by memgate under memory pressure 4 times")) << by_us;
  std::string bare = format_memory_failure(lost_build({Outcome::failed}));
  EXPECT_TRUE(contains(bare, "was killed by SIGKILL (exit status 137)")) << bare;
  EXPECT_TRUE(contains(bare, "dmesg")) << bare;
}

TEST(MemoryFailure, NothingIsSaidWhenMemoryWasNotTheCause) {
  BuildRecord compile_error = lost_build({Outcome::failed}, 1);
  EXPECT_EQ(format_memory_failure(compile_error), "");
  BuildRecord rerun_and_fine = lost_build({Outcome::oom, Outcome::ok}, 0);
  rerun_and_fine.exit_status = 0;
  EXPECT_EQ(format_memory_failure(rerun_and_fine), "");
  EXPECT_TRUE(jobs_lost_to_memory(rerun_and_fine).empty());
  // A failed build whose OOM-killed job was rerun and finished: the failure is elsewhere.
  BuildRecord other = lost_build({Outcome::oom, Outcome::ok}, 0);
  other.jobs[2] = job("c++:compile:bad.cpp->bad.o", 100 * MiB, 0);
  other.jobs[2].exit_status = 1;
  EXPECT_EQ(format_memory_failure(other), "");
}

TEST(MemoryFailure, SeveralLostJobsAreListedHeaviestFirst) {
  BuildRecord b = lost_build({Outcome::oom});
  b.jobs[0] = job("c++:compile:src/bigger.cpp->bigger.o", 3 * GiB, 0);
  b.jobs[0].exit_status = 137;
  b.jobs[0].attempt_log.push_back(Attempt{1, 2, Outcome::oom, 3 * GiB});
  auto lost = jobs_lost_to_memory(b);
  ASSERT_EQ(lost.size(), 2u);
  EXPECT_EQ(lost[0].job, 0);
  EXPECT_EQ(lost[1].job, 1);
  std::string s = format_memory_failure(b);
  EXPECT_TRUE(contains(s, "because 2 jobs ran out of memory")) << s;
  EXPECT_LT(s.find("bigger.o"), s.find("huge.o")) << s;
}

TEST(MemoryFailure, AnUngatedProcessKilledByTheKernelIsExplained) {
  BuildRecord b = build(0, 0);
  b.exit_status = 1;
  b.budget = 2 * GiB;
  b.peak_bytes = 2 * GiB;
  b.counters[Counter::oom_killed_ungated] = 1;
  b.events.push_back(BuildEvent{3, EventKind::oom_kill, -1, "pid 4242 (python3) in the build's own cgroup"});
  std::string s = format_memory_failure(b);
  EXPECT_TRUE(contains(s, "the kernel's OOM killer killed 1 process memgate did not gate")) << s;
  EXPECT_TRUE(contains(s, "memgate:   pid 4242 (python3) in the build's own cgroup\n")) << s;
  EXPECT_TRUE(contains(s, "not an error of the build's own")) << s;
  EXPECT_TRUE(contains(s, "the build peaked at 2.00 GiB against a budget of 2.00 GiB")) << s;
  EXPECT_TRUE(contains(s, "what to do:")) << s;
}

TEST(MemoryFailure, DegradedLineComesBeforeTheExplanation) {
  BuildRecord b = lost_build({Outcome::oom, Outcome::oom, Outcome::oom, Outcome::oom});
  std::string s = format_summary(b, {"build not confined (--no-confine)"});
  size_t degraded = s.find("memgate: degraded: build not confined (--no-confine)\n");
  size_t why = s.find("memgate: the build failed because a job ran out of memory");
  ASSERT_NE(degraded, std::string::npos) << s;
  ASSERT_NE(why, std::string::npos) << s;
  EXPECT_LT(degraded, why);
  EXPECT_EQ(format_summary(build(0, 0), {}), format_summary(build(0, 0)));
}

// Where the jobs ran, and the ones distcc gave back.
TEST(Summary, SaysWhereJobsRanAndWhichTheEngineCompiledHere) {
  BuildRecord b = build(0, 0);
  for (int i = 0; i < 3; ++i) {
    b.jobs[i].where = Placement::remote;
    b.jobs[i].engine = "distcc";
  }
  b.jobs[3].engine = "distcc";  // fell back: recorded local
  b.counters[Counter::fell_back] = 1;
  std::string s = format_summary(b);
  EXPECT_TRUE(contains(s, "3 jobs ran through distcc (local side at most 3.00 MiB)")) << s;
  EXPECT_TRUE(contains(s, "1 job handed to an engine but compiled here (its local fallback)")) << s;
}

TEST(Summary, SlotsBelowTheCoresAreNamedNotTheCores) {
  BuildRecord b = build(0, 0);
  b.counters[Counter::slots_bound_ms] = 60000;  // jobs = 1 on 2 cores, half the build
  b.slots = 1;
  b.cores = 2;
  std::string s = format_summary(b);
  EXPECT_TRUE(contains(s, "held back by --jobs for 50% of the build: 1 slot on 2 cores")) << s;
  EXPECT_FALSE(contains(s, "CPU-bound")) << s;
  EXPECT_FALSE(contains(s, "more cores would help")) << s;
}
