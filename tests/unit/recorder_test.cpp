// The recorder: what one attempt and a whole build leave behind, from
// numbers alone (no processes, no history file).
#include "run/recorder.hpp"

#include <gtest/gtest.h>

using namespace memgate;

namespace {

// A g++ job submitted at 1 s, admitted at 2 s on a prediction from
// similar jobs, run once until 12 s: as the governor tells it.
JobId finished_job(Recorder& rec, Bytes peak) {
  GovJob g;
  g.id = 7;
  g.key.identity = "obj/a.o";
  g.key.tool = "g++";
  Prediction first;
  first.peak = 512 * MiB;
  first.source = PredictionSource::similar;
  rec.observe(JobFact::of(JobFact::Kind::submitted, 7, 1).named(g));
  rec.observe(JobFact::of(JobFact::Kind::started, 7, 2, 1, first));
  rec.observe(JobFact::of(JobFact::Kind::ended, 7, 12, 0, {}, Attempt{2, 12, Outcome::ok, peak}).named(g));
  return g.id;
}

// Memory rises to `peak` at 2 s into the attempt, stays until 4 s, then
// falls to a quarter: the shape of an nvcc job.
AttemptReport nvcc_like_attempt(Bytes peak) {
  AttemptReport a;
  a.argv = {"g++", "-c", "a.cpp", "-o", "obj/a.o"};
  a.cwd = "/src";
  a.attempt_start = 2;
  for (int i = 0; i <= 100; ++i) {
    double t = i * 0.1;
    Bytes b = t < 2 ? static_cast<Bytes>(peak * t / 2) : t <= 4 ? peak : peak / 4;
    a.profile.push_back(MemSample{t, b});
  }
  a.cpu_s = 9.5;
  return a;
}

}  // namespace

TEST(Recorder, RecordTakesPeakTimingFromTheAttemptsProfile) {
  Recorder rec("/src", "make", 1000);
  JobRecord r = rec.make_record(finished_job(rec, 2 * GiB), nvcc_like_attempt(2 * GiB), 12);
  EXPECT_EQ(r.key.identity, "obj/a.o");
  EXPECT_EQ(r.peak_bytes, 2 * GiB);
  EXPECT_EQ(r.predicted.source, PredictionSource::similar);
  EXPECT_DOUBLE_EQ(r.start_s, 2);
  EXPECT_DOUBLE_EQ(r.end_s, 12);
  EXPECT_DOUBLE_EQ(r.cpu_s, 9.5);
  EXPECT_NEAR(r.t_peak_s, 2.0, 0.11);
  EXPECT_NEAR(r.peak_over_frac, 0.41, 0.02);  // the first sample after 4 s of a 10 s attempt
  EXPECT_EQ(r.after_peak_bytes, 512 * MiB);
  EXPECT_LE(r.profile.size(), 64u);
  EXPECT_FALSE(r.argv_digest.empty());
  EXPECT_LT(r.profile[1].cpu_s, 0) << "no reading of its CPU time during the run: no clock";
}

// Readings of the job's CPU time during its run, and its CPU time at its
// end: every point of the record's profile is on its CPU clock.
TEST(Recorder, RecordPutsTheProfileOnTheJobsCpuClock) {
  Recorder rec("/src", "make", 1000);
  AttemptReport a = nvcc_like_attempt(2 * GiB);
  a.profile.front().cpu_s = 0;
  a.profile[50].cpu_s = 3.0;  // slow at first: 3 CPU-s in the first 5 s, 6.5 in the next 5
  JobRecord r = rec.make_record(finished_job(rec, 2 * GiB), a, 12);
  ASSERT_FALSE(r.profile.empty());
  for (const MemSample& p : r.profile) EXPECT_GE(p.cpu_s, 0) << p.t_s;
  EXPECT_DOUBLE_EQ(r.profile.back().cpu_s, 9.5);
}

// Waits, time frozen and attempts add up from what the governor told:
// a first attempt frozen once and requeued, a second frozen when it ended.
TEST(Recorder, RecordAddsUpTheGovernorsFacts) {
  Recorder rec("/src", "make", 1000);
  Prediction first, second;
  first.peak = 1 * GiB;
  first.source = PredictionSource::history;
  second.peak = 2 * GiB;
  rec.observe(JobFact::of(JobFact::Kind::submitted, 3, 0));
  rec.observe(JobFact::of(JobFact::Kind::started, 3, 1, 1, first));
  rec.observe(JobFact::of(JobFact::Kind::frozen, 3, 2));
  rec.observe(JobFact::of(JobFact::Kind::thawed, 3, 3));
  rec.observe(JobFact::of(JobFact::Kind::ended, 3, 4, 0, {}, Attempt{1, 4, Outcome::requeued, 1200 * MiB, 2.5}));
  rec.observe(JobFact::of(JobFact::Kind::started, 3, 6, 2, second));
  rec.observe(JobFact::of(JobFact::Kind::frozen, 3, 7));
  rec.observe(JobFact::of(JobFact::Kind::ended, 3, 8.5, 0, {}, Attempt{6, 8.5, Outcome::ok, 900 * MiB, 1}));
  JobRecord r = rec.make_record(3, AttemptReport{}, 8.5);
  EXPECT_DOUBLE_EQ(r.submit_s, 0);
  EXPECT_DOUBLE_EQ(r.start_s, 1) << "the first admission";
  EXPECT_EQ(r.predicted.peak, 1 * GiB) << "what the first admission reserved for";
  EXPECT_DOUBLE_EQ(r.wait_s, 3);
  EXPECT_DOUBLE_EQ(r.frozen_s, 2.5) << "1 s, and 1.5 s until the end";
  ASSERT_EQ(r.attempt_log.size(), 2u);
  EXPECT_EQ(r.attempt_log[0].outcome, Outcome::requeued);
  EXPECT_EQ(r.peak_bytes, 1200 * MiB) << "the highest attempt";
  EXPECT_EQ(r.attempts, 2);
}

// The key and place a record names are the governor's at the attempt's
// end: a job its engine gave back is recorded as the local compile it was.
TEST(Recorder, RecordNamesTheJobAsTheGovernorLastToldIt) {
  Recorder rec("/src", "make", 1000);
  GovJob g;
  g.id = 4;
  g.key.identity = "distcc>g++:compile:a.cpp->a.o";
  g.where.placement = Placement::remote;
  g.where.engine = "distcc";
  rec.observe(JobFact::of(JobFact::Kind::submitted, 4, 0).named(g));
  rec.observe(JobFact::of(JobFact::Kind::started, 4, 1, 1));
  g.key.identity = "g++:compile:a.cpp->a.o";
  g.where.placement = Placement::local;
  rec.observe(JobFact::of(JobFact::Kind::ended, 4, 3, 0, {}, Attempt{1, 3, Outcome::ok, 300 * MiB}).named(g));
  JobRecord r = rec.make_record(4, AttemptReport{}, 3);
  EXPECT_EQ(r.key.identity, "g++:compile:a.cpp->a.o");
  EXPECT_EQ(r.where, Placement::local);
  EXPECT_EQ(r.engine, "distcc") << "who gave it back";
  EXPECT_EQ(r.peak_bytes, 300 * MiB);
  EXPECT_EQ(r.attempts, 1);
}

TEST(Recorder, BuildRecordMapsEventsToJobsAndKeepsOvershoots) {
  Recorder rec("/src", "make -j8", 1000);
  rec.sample_memory(0.5, 100 * MiB);
  rec.sample_memory(1.5, 900 * MiB);
  rec.sample_memory(2.5, 300 * MiB);
  JobId id = finished_job(rec, GiB);
  rec.finish(id, rec.make_record(id, nvcc_like_attempt(GiB), 12));

  Recorder::Totals t;
  t.end_unix = 1020;
  t.exit_status = 2;
  t.budget = 4 * GiB;
  t.cgroup_peak = 950 * MiB;
  t.counters[Counter::frozen] = 1;
  t.events = {GovEvent{3, EventKind::overshoot, 7, "uses more"}, GovEvent{4, EventKind::freeze, 7, "tight"},
              GovEvent{5, EventKind::pressure, -1, "stalls"}, GovEvent{6, EventKind::thaw, 99, "unknown job"}};
  BuildRecord b = rec.build_record(t);

  EXPECT_EQ(b.cwd, "/src");
  EXPECT_EQ(b.command, "make -j8");
  EXPECT_DOUBLE_EQ(b.wall_s(), 20);
  EXPECT_EQ(b.exit_status, 2);
  EXPECT_EQ(b.peak_bytes, 950 * MiB) << "the cgroup's own peak beats the sampled one";
  EXPECT_EQ(get(b.counters, Counter::frozen), 1);
  ASSERT_EQ(b.jobs.size(), 1u);
  ASSERT_EQ(b.events.size(), 4u);
  EXPECT_EQ(b.events[0].kind, EventKind::overshoot) << "the report shows overshoots (the log does not)";
  EXPECT_EQ(b.events[0].job, 0) << "job ids become indexes into the build's jobs";
  EXPECT_EQ(b.events[1].kind, EventKind::freeze);
  EXPECT_EQ(b.events[2].job, -1);
  EXPECT_EQ(b.events[3].job, -1) << "an event of a job that never finished names no job";
  EXPECT_EQ(b.memory.size(), 3u);
  EXPECT_EQ(rec.peak_used(), 900 * MiB);
}

TEST(Recorder, QuotesCommandsLikeAShell) {
  EXPECT_EQ(quote_command({"make", "-j8", "CC=gcc"}), "make -j8 CC=gcc");
  EXPECT_EQ(quote_command({"sh", "-c", "echo 'hi' there"}), "sh -c 'echo '\\''hi'\\'' there'");
  EXPECT_EQ(quote_command({"x", ""}), "x ''");
}
