#include "platform/cpu.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

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

TEST(ProcStat, BusyTimeIsEverythingButIdleAndIowait) {
  // cpu user nice system idle iowait irq softirq steal guest guest_nice
  auto busy = parse_proc_stat_busy_s("cpu  100 20 30 5000 70 4 6 10 50 0\ncpu0 50 10 15 2500 35 2 3 5 25 0\n", 100);
  ASSERT_TRUE(busy);
  EXPECT_DOUBLE_EQ(*busy, 1.70);  // (100 + 20 + 30 + 4 + 6 + 10) / 100; guest is in user
  EXPECT_FALSE(parse_proc_stat_busy_s("cpu0 1 2 3 4\n", 100));
  EXPECT_FALSE(parse_proc_stat_busy_s("cpu  1 2 x 4\n", 100));
  EXPECT_FALSE(parse_proc_stat_busy_s("", 100));
  EXPECT_TRUE(read_machine_busy_s());  // this machine's
}

TEST(CpuWeight, RaisedWhenOurCgroupOrOneAboveHasMoreThanTheDefault) {
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("memgate-cpuweight-" + std::to_string(::getpid()));
  fs::create_directories(root / "bench" / "run");
  auto write = [](const fs::path& p, const char* text) { std::ofstream(p) << text; };
  CgroupLayout v1;
  v1.cpu_version = CgroupVersion::v1;
  v1.cpu_root = root.string();
  v1.cpu_dir = (root / "bench" / "run").string();
  write(root / "cpu.shares", "1024\n");
  write(root / "bench" / "run" / "cpu.shares", "1024\n");
  EXPECT_FALSE(cgroup_cpu_weight_raised(v1));
  write(root / "bench" / "cpu.shares", "16384\n");  // bench/plan-accuracy's
  EXPECT_TRUE(cgroup_cpu_weight_raised(v1));
  CgroupLayout v2 = v1;
  v2.cpu_version = CgroupVersion::v2;
  write(root / "bench" / "run" / "cpu.weight", "100\n");
  EXPECT_FALSE(cgroup_cpu_weight_raised(v2));
  write(root / "bench" / "cpu.weight", "1600\n");
  EXPECT_TRUE(cgroup_cpu_weight_raised(v2));
  EXPECT_FALSE(cgroup_cpu_weight_raised(CgroupLayout{}));
  fs::remove_all(root);
}
