// What the governor is shown each tick, from the raw readings of the
// build's cgroups, the capacity cgroup and /proc (pure: no cgroups here).
#include "run/confinement.hpp"

#include <gtest/gtest.h>

using namespace memgate;

TEST(ConfinementView, BuildIsItsCgroupWithoutReclaimableCache) {
  MemoryReadings r;
  r.jobs_current = 1 * GiB;
  r.build_usage = 3 * GiB;
  r.build_inactive = 1 * GiB;
  r.mem_total = 24 * GiB;
  r.mem_available = 18 * GiB;
  MemoryView v = to_view(r);
  EXPECT_EQ(v.build_used, 2 * GiB);
  EXPECT_EQ(v.outside, 4 * GiB) << "the machine's use minus the build's";
}

TEST(ConfinementView, WithoutCgroupsTheBuildIsItsJobs) {
  MemoryReadings r;
  r.jobs_current = 700 * MiB;
  r.mem_total = 8 * GiB;
  r.mem_available = 6 * GiB;
  MemoryView v = to_view(r);
  EXPECT_EQ(v.build_used, 700 * MiB);
  EXPECT_EQ(v.outside, 2 * GiB - 700 * MiB);
}

TEST(ConfinementView, CapacityCgroupBeatsTheMachineWideFigure) {
  MemoryReadings r;
  r.build_usage = 1 * GiB;
  r.capacity_usage = 1536 * MiB;
  r.capacity_inactive = 256 * MiB;
  r.mem_total = 24 * GiB;
  r.mem_available = 2 * GiB;  // other tenants of the host: not ours to count
  MemoryView v = to_view(r);
  EXPECT_EQ(v.outside, 256 * MiB);
}

TEST(ConfinementView, NothingReadableMeansNothingOutside) {
  MemoryReadings r;
  r.jobs_current = 5 * MiB;
  r.psi_full_avg10 = 12.5;
  MemoryView v = to_view(r);
  EXPECT_EQ(v.build_used, 5 * MiB);
  EXPECT_EQ(v.outside, 0);
  ASSERT_TRUE(v.psi_full_avg10.has_value());
  EXPECT_DOUBLE_EQ(*v.psi_full_avg10, 12.5);
}

TEST(ConfinementView, UsageBelowTheCacheNeverGoesNegative) {
  MemoryReadings r;
  r.build_usage = 100 * MiB;
  r.build_inactive = 300 * MiB;
  EXPECT_EQ(to_view(r).build_used, 0);
}
