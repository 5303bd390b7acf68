#include "report/summary.hpp"

#include <gtest/gtest.h>

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

TEST(Summary, EveryLineIsPrefixedForStderr) {
  std::istringstream in(format_summary(build(74400, 0)));
  std::string line;
  int lines = 0;
  while (std::getline(in, line)) {
    ++lines;
    EXPECT_EQ(line.rfind("memgate: ", 0), 0u) << line;
  }
  EXPECT_GE(lines, 6);
}

TEST(Summary, ShowsWallTimeRateMemoryAndCounters) {
  BuildRecord b = build(0, 0);
  b.counters[Counter::frozen] = 3;
  b.counters[Counter::requeued] = 1;
  b.counters[Counter::retried] = 2;
  b.counters[Counter::oom_killed] = 1;
  b.counters[Counter::wait_memory_ms] = 70000;
  b.counters[Counter::waited_for_memory] = 12;
  b.jobs[3].exit_status = 1;
  std::string s = format_summary(b);
  EXPECT_TRUE(contains(s, "build finished in 2m00s")) << s;
  EXPECT_TRUE(contains(s, "40 jobs (1 failed), 20.0 objects/min")) << s;
  EXPECT_TRUE(contains(s, "peak memory 2.00 GiB of a 2.50 GiB budget (80%)")) << s;
  EXPECT_TRUE(contains(s, "jobs waited 1m10s for memory in total (12 jobs held back)")) << s;
  EXPECT_TRUE(contains(s, "3 freezes, 1 requeue, 2 retries, 1 OOM kill")) << s;
}

TEST(Summary, ListsTheFiveHeaviestJobsHeaviestFirst) {
  BuildRecord b = build(0, 0);
  b.jobs.clear();
  for (int i = 1; i <= 8; ++i) b.jobs.push_back(job("cc:job" + std::to_string(i) + ".o", i * GiB, i * GiB / 2));
  std::string s = format_summary(b);
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
  std::string s = format_summary(b);
  EXPECT_FALSE(contains(s, "\x1b")) << s;
  EXPECT_TRUE(contains(s, "cc:evil?[2J?name.o")) << s;
}

TEST(Summary, EmptyBuildIsNotAnError) {
  BuildRecord b;
  std::string s = format_summary(b);
  EXPECT_TRUE(contains(s, "0 jobs")) << s;
  EXPECT_TRUE(contains(s, "no compiler jobs were gated")) << s;
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
