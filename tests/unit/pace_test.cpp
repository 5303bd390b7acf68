// When the runner's loop ticks and admits (run/pace.hpp): pure, on a
// clock the test gives.
#include "run/pace.hpp"

#include <gtest/gtest.h>

using namespace memgate;

TEST(Pace, TheTickComesSoonerNearTheLimit) {
  Pace p;
  EXPECT_TRUE(p.tick_due(0));
  p.ticked(1, 1 * GiB, 4 * GiB);
  EXPECT_FALSE(p.tick_due(1.05));
  EXPECT_TRUE(p.tick_due(1 + Pace::kTick_s));
  EXPECT_EQ(p.poll_timeout_ms(1), 101);
  p.ticked(2, 3900 * MiB, 4 * GiB);
  EXPECT_TRUE(p.tick_due(2 + Pace::kFastTick_s));
  p.ticked(3, 3900 * MiB, 0);  // no limit to be near
  EXPECT_FALSE(p.tick_due(3 + Pace::kFastTick_s));
}

TEST(Pace, AdmissionDueThisTurnMeansNoWaitAndRunsOnce) {
  Pace p;
  p.ticked(0, 0, GiB);
  p.schedule();
  EXPECT_EQ(p.poll_timeout_ms(0), 0);
  EXPECT_TRUE(p.take_scheduled());
  EXPECT_FALSE(p.take_scheduled());
  EXPECT_GT(p.poll_timeout_ms(0), 0);
}

TEST(Pace, TheFirstBurstIsGatheredWhateverIsKnown) {
  Pace p;
  p.ticked(0, 0, GiB);
  p.job_arrived(0.01, 0);  // nothing known, nothing admitted yet: 50 ms
  EXPECT_FALSE(p.scheduled());
  EXPECT_FALSE(p.tick_due(0.05));
  EXPECT_TRUE(p.tick_due(0.061));
}

// Wrappers of one burst connect over more than 50 ms on a loaded
// machine: the first burst lasts until it has been quiet for 50 ms, the
// regular tick included, but at most 0.5 s.
TEST(Pace, TheFirstBurstLastsUntilItIsQuiet) {
  Pace p;
  p.ticked(0, 0, GiB);  // the next regular tick at 0.1
  for (double t = 0.01; t < 0.2; t += 0.03) p.job_arrived(t, 30);
  EXPECT_FALSE(p.scheduled());
  EXPECT_FALSE(p.tick_due(0.15)) << "the regular tick waits for the burst too";
  EXPECT_FALSE(p.tick_due(0.22));
  EXPECT_TRUE(p.tick_due(0.241));

  Pace endless;
  endless.ticked(0, 0, GiB);
  for (double t = 0.01; t < 2; t += 0.01) endless.job_arrived(t, 0);
  EXPECT_TRUE(endless.tick_due(0.511)) << "at most 0.5 s after its first job";
}

TEST(Pace, AfterTheFirstAdmissionOnlyLongJobsWaitForTheirBurst) {
  Pace p;
  p.admitted();
  p.ticked(0, 0, GiB);
  p.job_arrived(0.01, 0.2);  // short: admitted this turn
  EXPECT_TRUE(p.take_scheduled());
  p.job_arrived(0.01, 2);  // 1% of 2 s: the tick comes in 20 ms
  EXPECT_FALSE(p.scheduled());
  EXPECT_FALSE(p.tick_due(0.025));
  EXPECT_TRUE(p.tick_due(0.031));
  p.job_arrived(0.02, 600);  // at most 50 ms, and never later than a tick already due sooner
  EXPECT_TRUE(p.tick_due(0.031));
}
