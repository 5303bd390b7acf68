#include "core/capacity.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "platform/meminfo.hpp"
#include "util/log.hpp"

using namespace memgate;

TEST(Capacity, PhysicalWhenNoCgroupLimit) {
  auto c = compute_capacity(432 * GiB, std::nullopt);
  EXPECT_EQ(c.capacity, 432 * GiB);
  EXPECT_EQ(c.capacity_source, "physical");
  EXPECT_FALSE(c.cgroup_limit);
}

TEST(Capacity, CgroupLimitBelowPhysicalWins) {
  auto c = compute_capacity(432 * GiB, std::make_pair(3 * GiB, std::string("/sys/fs/cgroup/memory/x")));
  EXPECT_EQ(c.capacity, 3 * GiB);
  EXPECT_EQ(c.capacity_source, "cgroup");
  EXPECT_EQ(c.cgroup_limit_source, "/sys/fs/cgroup/memory/x");
  EXPECT_EQ(c.physical, 432 * GiB);
}

TEST(Capacity, CgroupLimitAbovePhysicalIsReportedButPhysicalBinds) {
  auto c = compute_capacity(16 * GiB, std::make_pair(64 * GiB, std::string("/c")));
  EXPECT_EQ(c.capacity, 16 * GiB);
  EXPECT_EQ(c.capacity_source, "physical");
  EXPECT_EQ(c.cgroup_limit, 64 * GiB);
}

TEST(Reserve, FivePercentClamped) {
  EXPECT_EQ(default_reserve(100 * GiB), 5 * GiB);
  EXPECT_EQ(default_reserve(432 * GiB), 8 * GiB);  // capped
  EXPECT_EQ(default_reserve(4 * GiB), 512 * MiB);  // floor
  EXPECT_EQ(default_reserve(768 * MiB), 384 * MiB);  // never more than half
  EXPECT_EQ(default_reserve(0), 0);
}

TEST(Budget, DefaultIsCapacityMinusReserve) {
  auto b = compute_budget(100 * GiB, std::nullopt, std::nullopt);
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(b->reserve, 5 * GiB);
  EXPECT_EQ(b->budget, 95 * GiB);
  EXPECT_FALSE(b->clamped);
}

TEST(Budget, FlagsTakeSizesAndPercentages) {
  auto b = compute_budget(100 * GiB, std::string("10%"), std::string("50G"));
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(b->reserve, 10 * GiB);
  EXPECT_EQ(b->budget, 50 * GiB);
  b = compute_budget(100 * GiB, std::string("2G"), std::string("80%"));
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(b->budget, 80 * GiB);
}

TEST(Budget, MemoryAboveCapacityMinusReserveIsClampedWithAWarning) {
  std::vector<std::string> lines;
  log::set_sink([&](log::Level, std::string_view line) { lines.emplace_back(line); });
  auto b = compute_budget(100 * GiB, std::nullopt, std::string("200G"));
  log::reset_sink();
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(b->budget, 95 * GiB);
  EXPECT_TRUE(b->clamped);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("memgate: warning: --memory 200G"), std::string::npos) << lines[0];
}

TEST(Budget, BadInputIsAClearError) {
  auto bad = compute_budget(100 * GiB, std::nullopt, std::string("lots"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("--memory"), std::string::npos);
  bad = compute_budget(100 * GiB, std::string("12Q"), std::nullopt);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("--reserve"), std::string::npos);
  EXPECT_FALSE(compute_budget(100 * GiB, std::string("100%"), std::nullopt).ok());  // leaves nothing
  EXPECT_FALSE(compute_budget(100 * GiB, std::string("200G"), std::nullopt).ok());
  EXPECT_FALSE(compute_budget(100 * GiB, std::nullopt, std::string("0")).ok());
  EXPECT_FALSE(compute_budget(0, std::nullopt, std::nullopt).ok());
}

// Issue 12, item 7: `--memory 1` and `--memory 0.5` gave a 1-byte budget.
TEST(Budget, MemoryBelowTheMinimumIsAnError) {
  for (const char* tiny : {"1", "0.5", "1000", "63M", "1%"}) {
    auto b = compute_budget(4 * GiB, std::nullopt, std::string(tiny));
    EXPECT_FALSE(b.ok()) << tiny;
  }
  EXPECT_TRUE(compute_budget(4 * GiB, std::nullopt, std::string("64M")).ok());
  EXPECT_NE(memory_flag_problem("1"), "");
  EXPECT_NE(memory_flag_problem("0.5"), "");
  EXPECT_NE(memory_flag_problem("0x10G"), "");
  EXPECT_NE(memory_flag_problem("0%"), "");
  EXPECT_EQ(memory_flag_problem("64M"), "");
  EXPECT_EQ(memory_flag_problem("1%"), "");  // its bytes are known only with the capacity
  EXPECT_EQ(memory_flag_problem("8G"), "");
}

TEST(DetectCapacity, NeverAboveMemTotal) {
  auto c = detect_capacity();
  auto mi = platform::read_meminfo();
  ASSERT_TRUE(mi && mi->total);
  EXPECT_EQ(c.physical, *mi->total);
  EXPECT_LE(c.capacity, c.physical);
  EXPECT_GT(c.capacity, 0);
  EXPECT_TRUE(c.capacity_source == "physical" || c.capacity_source == "cgroup");
}
