// The runner's connected jobs (run/live_jobs.hpp): found by connection
// and by id, an attempt's curve from grant to end, and the tick's reads of
// their memory, with fake job processes and the real governor.
#include "run/live_jobs.hpp"

#include <gtest/gtest.h>

#include <memory>

#include "predict/envelope.hpp"
#include "predict/profile.hpp"
#include "support/runner_fakes.hpp"

using namespace memgate;

namespace {

class LiveJobsTest : public ::testing::Test {
 protected:
  LiveJobsTest() {
    GovernorConfig gc;
    gc.budget = gc.hard_limit = 4 * GiB;
    gc.slots = 4;
    gov_ = std::make_unique<Governor>(gc, [](const JobKey& k) {
      Prediction p;
      p.peak = 256 * MiB;
      p.source = PredictionSource::history;
      p.confidence = 1;
      if (k.identity == "job9") {  // falls to a quarter at 30% of its 20 s of CPU
        p.cpu_s = 20;
        p.envelope = step_envelope(0.3, 0.25);
      }
      return p;
    });
  }
  // A job submitted on `conn` and granted at `t`.
  FakeJobState& running(ConnId conn, double t) {
    JobKey key;
    key.identity = "job" + std::to_string(conn);
    ConnectedJob job;
    job.conn = conn;
    job.id = gov_->submit(key, t);
    auto s = std::make_shared<FakeJobState>();
    job.exec = std::make_unique<FakeJob>(s);
    job.begin_attempt(t);
    states_[conn] = s;
    live_.add(std::move(job));
    gov_->step(view_, t);
    return *s;
  }

  std::unique_ptr<Governor> gov_;
  LiveJobs live_;
  MemoryView view_;
  std::map<ConnId, std::shared_ptr<FakeJobState>> states_;
};

}  // namespace

TEST_F(LiveJobsTest, AJobIsFoundByItsConnectionAndItsIdUntilErased) {
  running(7, 0);
  ConnectedJob* job = live_.find(7);
  ASSERT_NE(job, nullptr);
  EXPECT_EQ(live_.by_job(job->id), job);
  EXPECT_EQ(live_.size(), 1u);
  const JobId id = job->id;
  live_.erase(7);
  EXPECT_EQ(live_.find(7), nullptr);
  EXPECT_EQ(live_.by_job(id), nullptr);
  EXPECT_TRUE(live_.empty());
  live_.erase(7);  // twice: nothing
}

TEST_F(LiveJobsTest, AnAttemptsCurveStartsAtItsGrantAndItsEndResetsWhatMemgateDid) {
  running(1, 10);
  ConnectedJob& job = *live_.find(1);
  job.add_sample(12, 300 * MiB);
  ASSERT_EQ(job.profile.size(), 2u);
  EXPECT_DOUBLE_EQ(job.profile.back().t_s, 2) << "since the attempt started";
  job.killed_by_us = true;
  job.cpu_at_kill_s = 3;
  job.current = 300 * MiB;
  job.end_attempt();
  EXPECT_FALSE(job.killed_by_us);
  EXPECT_EQ(job.cpu_at_kill_s, 0);
  EXPECT_EQ(job.current, 0);
  EXPECT_EQ(states_[1]->ended, 1);
  job.begin_attempt(20);
  EXPECT_EQ(job.profile.size(), 1u) << "a new attempt, a new curve";
}

TEST_F(LiveJobsTest, ALongCurveIsThinnedToHalf) {
  running(1, 0);
  ConnectedJob& job = *live_.find(1);
  for (std::size_t i = job.profile.size(); i < ConnectedJob::kMaxSamples; ++i) job.add_sample(static_cast<double>(i) * 0.01, MiB);
  ASSERT_EQ(job.profile.size(), ConnectedJob::kMaxSamples);
  job.add_sample(100, 2 * MiB);
  EXPECT_LE(job.profile.size(), ConnectedJob::kMaxSamples / 2 + 1);
  EXPECT_EQ(job.profile.back().bytes, 2 * MiB);
}

// The job's CPU clock: a sample that read the CPU time puts it on its
// point of the curve; one that kept an earlier reading does not (it
// would date that reading late). Thinning keeps the clock, filled in.
TEST_F(LiveJobsTest, ASampleThatReadTheCpuTimePutsItOnTheCurve) {
  FakeJobState& s = running(1, 0);
  view_.build_used = 3 * GiB;  // every job every tick
  s.mem = JobMemory{100 * MiB, 100 * MiB, 0.75, /*cpu_fresh=*/true};
  live_.sample(*gov_, view_, 1);
  s.mem = JobMemory{200 * MiB, 200 * MiB, 0.75, /*cpu_fresh=*/false};
  live_.sample(*gov_, view_, 2);
  const ConnectedJob& job = *live_.find(1);
  ASSERT_EQ(job.profile.size(), 3u);
  EXPECT_DOUBLE_EQ(job.profile[0].cpu_s, 0) << "an attempt starts at 0 s of CPU";
  EXPECT_DOUBLE_EQ(job.profile[1].cpu_s, 0.75);
  EXPECT_LT(job.profile[2].cpu_s, 0);

  ConnectedJob& long_job = *live_.find(1);
  for (std::size_t i = long_job.profile.size(); i < ConnectedJob::kMaxSamples; ++i)
    long_job.add_sample(2 + static_cast<double>(i) * 0.01, static_cast<Bytes>(i % 7) * MiB,
                        i % 400 == 0 ? 0.75 + static_cast<double>(i) * 0.01 : -1);
  long_job.add_sample(60, MiB, 60);
  interpolate_cpu_clock(long_job.profile);  // as the job's record does at its end
  int between_readings = 0;
  for (std::size_t i = 1; i < long_job.profile.size(); ++i) {
    const MemSample& p = long_job.profile[i];
    ASSERT_GE(p.cpu_s, 0) << i;
    EXPECT_GE(p.cpu_s, long_job.profile[i - 1].cpu_s) << i;
    // The readings, not a line from the start to the end, date the
    // points thinning kept: the clock ran 1.25 s behind the wall.
    if (p.t_s > 6 && p.t_s < 38) {
      EXPECT_NEAR(p.cpu_s, p.t_s - 1.25, 0.01) << i;
      ++between_readings;
    }
  }
  EXPECT_GT(between_readings, 100);
}

TEST_F(LiveJobsTest, TheTickTellsTheGovernorWhatEachRunningJobUses) {
  running(1, 0).mem = JobMemory{100 * MiB, 150 * MiB};
  running(2, 0).mem = JobMemory{200 * MiB, 200 * MiB};
  view_.build_used = 3 * GiB;  // near the limit: every job every tick
  live_.sample(*gov_, view_, 1);
  EXPECT_EQ(gov_->job(live_.find(1)->id).run.attempt_peak, 150 * MiB);
  EXPECT_EQ(live_.current(gov_->active_jobs()), 300 * MiB);
  live_.sample(*gov_, view_, 1.01);
  EXPECT_EQ(states_[1]->samples, 2);
}

TEST_F(LiveJobsTest, WithRoomToSpareEachJobIsReadEverySecondInItsOwnPhase) {
  FakeJobState& a = running(1, 0);
  FakeJobState& b = running(2, 0);
  view_.build_used = 100 * MiB;
  for (double t = 0; t < 2.0; t += 0.1) live_.sample(*gov_, view_, t);
  // Read at once, then every second after a first wait set by the id.
  EXPECT_GE(a.samples, 2);
  EXPECT_LE(a.samples, 3);
  EXPECT_GE(b.samples, 2);
  EXPECT_LE(b.samples, 3);
  EXPECT_LT(a.samples + b.samples, 20) << "not every tick";
}

// The CPU time is read only for a job whose reservation follows its
// progress: a declining envelope and a predicted CPU time.
TEST_F(LiveJobsTest, OnlyAJobReleasedByItsProgressHasItsCpuTimeRead) {
  FakeJobState& flat = running(1, 0);
  FakeJobState& falls = running(9, 0);
  for (double t = 1; t < 4 && (flat.samples == 0 || falls.samples == 0); t += 0.5) live_.sample(*gov_, view_, t, nullptr);
  ASSERT_GT(flat.samples, 0);
  ASSERT_GT(falls.samples, 0);
  EXPECT_EQ(flat.last_sampling, Sampling::sparse);  // the build far under its limit
  EXPECT_EQ(falls.last_sampling, Sampling::quick);
}

// A job whose reservation does not follow its progress has its peak read
// every 4 s while the build is far under its limit, every second near it.
TEST_F(LiveJobsTest, TheFlatJobsPeakIsReadSparselyOnlyWhileTheBuildIsFarUnderItsLimit) {
  FakeJobState& flat = running(1, 0);
  view_.build_used = 100 * MiB;
  live_.sample(*gov_, view_, 1, nullptr);
  EXPECT_EQ(flat.last_sampling, Sampling::sparse);
  view_.build_used = 3 * GiB;  // over half the 4 GiB limit
  live_.sample(*gov_, view_, 2.5, nullptr);
  EXPECT_EQ(flat.last_sampling, Sampling::memory);
  EXPECT_EQ(slow_sample_every(Sampling::sparse), 4.0);
  EXPECT_EQ(slow_sample_every(Sampling::memory), 1.0);
  EXPECT_EQ(slow_sample_every(Sampling::quick), 1.0);
}
