#include "platform/cpu.hpp"

#include <gtest/gtest.h>

#include "fixtures.hpp"

using namespace memgate;
using namespace memgate::platform;
using memgate::test::fixture;
using memgate::test::layout_of;

TEST(CpuMax, ParsesQuotaAndUnlimited) {
  auto q = parse_cpu_max(fixture("cgroup2/files/cpu.max.quota"));
  ASSERT_TRUE(q && q->quota_us);
  EXPECT_EQ(*q->quota_us, 250000);
  EXPECT_EQ(q->period_us, 100000);
  EXPECT_EQ(quota_cores(*q), 3);  // 2.5 rounds up
  auto u = parse_cpu_max(fixture("cgroup2/files/cpu.max.unlimited"));
  ASSERT_TRUE(u);
  EXPECT_FALSE(u->quota_us);
  EXPECT_FALSE(quota_cores(*u));
}

TEST(CpuMax, MalformedAndTruncatedAreUnknown) {
  EXPECT_FALSE(parse_cpu_max(fixture("cgroup2/files/cpu.max.malformed")));
  EXPECT_FALSE(parse_cpu_max(fixture("cgroup2/files/cpu.max.zero_period")));
  EXPECT_FALSE(parse_cpu_max(fixture("cgroup2/files/cpu.max.truncated")));
}

TEST(CfsQuota, ParsesV1Files) {
  auto recorded = parse_cfs_quota(fixture("cgroup1/host/sys/fs/cgroup/cpu/cpu.cfs_quota_us"),
                                  fixture("cgroup1/host/sys/fs/cgroup/cpu/cpu.cfs_period_us"));
  ASSERT_TRUE(recorded);
  EXPECT_FALSE(recorded->quota_us);  // -1: no limit
  auto q = parse_cfs_quota("150000\n", "100000\n");
  ASSERT_TRUE(q);
  EXPECT_EQ(quota_cores(*q), 2);
  EXPECT_FALSE(parse_cfs_quota(fixture("cgroup1/files/cpu.cfs_quota_us.malformed"),
                               fixture("cgroup1/files/cpu.cfs_period_us")));
  EXPECT_FALSE(parse_cfs_quota("", "100000"));
  EXPECT_FALSE(parse_cfs_quota("-2", "100000"));
}

TEST(UsableCores, MinOfAffinityAndQuota) {
  EXPECT_EQ(usable_cores(128, std::nullopt), 128);
  EXPECT_EQ(usable_cores(128, 4), 4);
  EXPECT_EQ(usable_cores(2, 8), 2);
  EXPECT_EQ(usable_cores(0, std::nullopt), 1);
  EXPECT_EQ(quota_cores(CpuQuota{1, 100000}), 1);  // a sliver of a core is still one
}

// Found by fuzz_cgroup: rounding up by adding period - 1 overflowed.
TEST(UsableCores, AHugeQuotaIsManyCoresNotAnOverflow) {
  auto q = parse_cpu_max("9223372036854775807 100000\n");
  ASSERT_TRUE(q);
  EXPECT_EQ(quota_cores(*q), 1 << 20);
  auto v1 = parse_cfs_quota("9223372036854775807\n", "100000\n");
  ASSERT_TRUE(v1);
  EXPECT_EQ(quota_cores(*v1), 1 << 20);
}

TEST(CgroupQuota, WalksUpTheTree) {
  EXPECT_EQ(cgroup_quota_cores(layout_of("cgroup2/host")), 2);  // job 1.5, ci.scope 3
  EXPECT_EQ(cgroup_quota_cores(layout_of("cgroup2/container")), 2);
  EXPECT_EQ(cgroup_quota_cores(layout_of("cgroup1/docker")), 2);
  EXPECT_FALSE(cgroup_quota_cores(layout_of("cgroup1/host")));
  EXPECT_FALSE(cgroup_quota_cores(CgroupLayout{}));
}

TEST(CgroupQuota, ThisMachineHasAtLeastOneCore) {
  EXPECT_GE(affinity_cores(), 1);
  EXPECT_GE(detect_cores(), 1);
  EXPECT_LE(detect_cores(), affinity_cores());
}
