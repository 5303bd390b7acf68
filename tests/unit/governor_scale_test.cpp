// The governor at the scale of thousands of waiting jobs: what it keeps
// between steps (the admission order, the running set, when the queue is
// predicted again) must decide exactly as recomputing everything would.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>

#include "governor/governor.hpp"

using namespace memgate;

namespace {

struct Scale {
  std::map<std::string, Prediction> preds;
  int predictions = 0;
  GovernorConfig cfg;
  std::unique_ptr<Governor> gov;

  explicit Scale(int slots) {
    cfg.budget = cfg.hard_limit = 64 * GiB;
    cfg.slots = slots;
    gov = std::make_unique<Governor>(cfg, [this](const JobKey& k) {
      ++predictions;
      auto it = preds.find(k.identity);
      if (it != preds.end()) return it->second;
      Prediction p;
      p.peak = 10 * MiB;
      p.wall_s = 1;
      p.source = PredictionSource::history;
      p.confidence = 1;
      return p;
    });
  }
  JobId submit(const std::string& id, double wall, double t = 0) {
    Prediction p;
    p.peak = 10 * MiB;
    p.wall_s = wall;
    p.source = PredictionSource::history;
    p.confidence = 1;
    preds[id] = p;
    JobKey k;
    k.identity = id;
    return gov->submit(k, t);
  }
  JobRecord record(JobId id, double now) {
    JobRecord r;
    r.key = gov->job(id).key;
    r.end_s = now;
    r.peak_bytes = 10 * MiB;
    return r;
  }
};

}  // namespace

TEST(GovernorScale, AdmitsLongestFirstWhateverOrderJobsArriveIn) {
  Scale s(2);
  JobId a = s.submit("a", 1), b = s.submit("b", 5), c = s.submit("c", 3);
  Decisions d = s.gov->step({}, 0);
  EXPECT_EQ(d.admit, (std::vector<JobId>{b, c}));
  // Arriving after the order was kept: it takes its place, not the end.
  JobId e = s.submit("e", 9, 0.1);
  s.gov->exited(b, ExitKind::finished, 0, 0.2);
  d = s.gov->step({}, 0.2);
  EXPECT_EQ(d.admit, std::vector<JobId>{e});
  s.gov->exited(c, ExitKind::finished, 0, 0.3);
  EXPECT_EQ(s.gov->step({}, 0.3).admit, std::vector<JobId>{a});
}

TEST(GovernorScale, AJobRequeuedBeforeTheNextStepIsAdmittedOnce) {
  Scale s(4);
  JobId a = s.submit("a", 2);
  ASSERT_EQ(s.gov->step({}, 0).admit, std::vector<JobId>{a});
  // Killed by the kernel at once, before any other step ran.
  EXPECT_TRUE(s.gov->exited(a, ExitKind::oom_killed, 137, 0.1));
  Decisions d = s.gov->step({}, 0.2);
  EXPECT_EQ(d.admit, std::vector<JobId>{a});
  EXPECT_EQ(s.gov->counts().running, 1);
  EXPECT_EQ(s.gov->counts().waiting, 0);
  EXPECT_TRUE(s.gov->step({}, 0.3).admit.empty());
}

TEST(GovernorScale, FewWaitingJobsArePredictedAgainAfterEveryLearning) {
  Scale s(1);
  JobId a = s.submit("a", 1);
  for (int i = 0; i < 5; ++i) s.submit("w" + std::to_string(i), 1);
  s.gov->step({}, 0);
  s.preds["w3"].wall_s = 7;
  const int before = s.predictions;
  s.gov->exited(a, ExitKind::finished, 0, 1);
  s.gov->learn(s.record(a, 1));
  EXPECT_EQ(s.predictions - before, 5);  // every waiting job, at once
  Decisions d = s.gov->step({}, 1);
  ASSERT_EQ(d.admit.size(), 1u);
  EXPECT_EQ(s.gov->job(d.admit[0]).key.identity, "w3");  // its new prediction made it the longest
}

TEST(GovernorScale, ManyWaitingJobsArePredictedAgainInBatchesAndWithinHalfASecond) {
  Scale s(1);
  JobId a = s.submit("a", 1);
  for (int i = 0; i < 320; ++i) s.submit("w" + std::to_string(i), 1);
  s.gov->step({}, 0);
  int before = s.predictions;
  s.gov->exited(a, ExitKind::finished, 0, 0.1);
  s.gov->learn(s.record(a, 0.1));
  EXPECT_EQ(s.predictions, before);  // 1 learned of 320 waiting: not yet
  s.preds["w200"].wall_s = 9;
  Decisions d = s.gov->step({}, 0.2);
  EXPECT_EQ(s.predictions, before);  // the last prediction was 0.2 s ago
  ASSERT_EQ(d.admit.size(), 1u);
  EXPECT_NE(s.gov->job(d.admit[0]).key.identity, "w200");
  JobId b = d.admit[0];
  s.gov->exited(b, ExitKind::finished, 0, 0.6);
  s.gov->learn(s.record(b, 0.6));
  d = s.gov->step({}, 0.6);  // 0.6 s after the last prediction: every waiting job again
  EXPECT_EQ(s.predictions - before, 319);
  ASSERT_EQ(d.admit.size(), 1u);
  EXPECT_EQ(s.gov->job(d.admit[0]).key.identity, "w200");
}

TEST(GovernorScale, TheWaitingJobsOfAShareOfLearningsArePredictedAgainAtOnce) {
  Scale s(16);
  for (int i = 0; i < 16; ++i) s.submit("r" + std::to_string(i), 1);
  for (int i = 0; i < 64; ++i) s.submit("w" + std::to_string(i), 1);
  std::vector<JobId> running = s.gov->step({}, 0).admit;
  ASSERT_EQ(running.size(), 16u);
  const int before = s.predictions;
  // 64 waiting: predicted again once 64/8 = 8 jobs were learned.
  for (int i = 0; i < 7; ++i) {
    s.gov->exited(running[i], ExitKind::finished, 0, 0.01 * (i + 1));
    s.gov->learn(s.record(running[i], 0.01 * (i + 1)));
  }
  EXPECT_EQ(s.predictions, before);
  s.gov->exited(running[7], ExitKind::finished, 0, 0.08);
  s.gov->learn(s.record(running[7], 0.08));
  EXPECT_EQ(s.predictions - before, 64);  // every waiting job (the running ones' came from history)
}

TEST(GovernorScale, RunningJobTimeIsCappedAtEachJobsPredictedDuration) {
  Scale s(2);
  s.submit("a", 2);
  s.submit("b", 10);
  ASSERT_EQ(s.gov->step({}, 0).admit.size(), 2u);
  EXPECT_DOUBLE_EQ(s.gov->counts(1).running_job_s, 2.0);
  EXPECT_DOUBLE_EQ(s.gov->counts(5).running_job_s, 2.0 + 5.0) << "a is past its 2 s: it counts 2";
  EXPECT_DOUBLE_EQ(s.gov->counts().running_job_s, 0.0) << "without a time, nothing";
}

TEST(GovernorScale, ALongQueueIsPredictedAgainNoMoreOftenThanItsSizeAllows) {
  // 4000 waiting: the timer predicts them again after 4000 / 2000 = 2 s,
  // not after half a second (the 500 learnings a share needs never come).
  Scale s(1);
  JobId a = s.submit("a", 1);
  for (int i = 0; i < 4000; ++i) s.submit("w" + std::to_string(i), 1);
  s.gov->step({}, 0);
  const int before = s.predictions;
  s.gov->exited(a, ExitKind::finished, 0, 0.1);
  s.gov->learn(s.record(a, 0.1));
  JobId b = s.gov->step({}, 0.1).admit.at(0);
  s.gov->step({}, 0.7);
  s.gov->step({}, 1.9);
  EXPECT_EQ(s.predictions, before);
  s.gov->exited(b, ExitKind::finished, 0, 2.0);
  s.gov->step({}, 2.2);
  EXPECT_EQ(s.predictions - before, 3999);
}
