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

namespace {
// A whole machine of `physical`, or a cgroup (container) limit of
// `limit` on a machine with much more memory.
Capacity machine(Bytes physical) { return compute_capacity(physical, std::nullopt); }
Capacity confined(Bytes limit) { return compute_capacity(1024 * GiB, std::make_pair(limit, std::string("/c"))); }
}  // namespace

// The reserve rule (capacity.hpp): a whole machine keeps 5% (512 MiB ..
// 8 GiB) for everything else on it; inside a cgroup limit the outside is
// protected by the limit, and 2% (128 MiB .. 2 GiB) keeps the build off
// its own hard limit.
TEST(Reserve, FitsTheSituation) {
  EXPECT_EQ(default_reserve(machine(2 * GiB)), 512 * MiB);    // floor: 25% of a tiny machine
  EXPECT_EQ(default_reserve(confined(2 * GiB)), 128 * MiB);   // floor: 6% of a tiny container
  EXPECT_EQ(default_reserve(machine(24 * GiB)), 24 * GiB / 20);
  EXPECT_EQ(default_reserve(confined(24 * GiB)), 24 * GiB / 50);
  EXPECT_EQ(default_reserve(machine(432 * GiB)), 8 * GiB);    // capped
  EXPECT_EQ(default_reserve(confined(432 * GiB)), 2 * GiB);   // capped
  EXPECT_EQ(default_reserve(machine(100 * GiB)), 5 * GiB);
  EXPECT_EQ(default_reserve(machine(768 * MiB)), 384 * MiB);  // never more than half
  EXPECT_EQ(default_reserve(confined(200 * MiB)), 100 * MiB);
  EXPECT_EQ(default_reserve(machine(0)), 0);
}

// The case: two 805 MiB nvcc kernels did not fit the 1.5 GiB
// budget of a 2 GiB cgroup; they fit its budget now, with the governor's
// freeze threshold (92% of it) still below the limit minus both.
TEST(Reserve, TwoKernelsFitATwoGigabyteContainer) {
  auto b = compute_budget(confined(2 * GiB), std::nullopt, std::nullopt);
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(b->reserve_rule, "cgroup");
  EXPECT_EQ(b->budget, 2 * GiB - 128 * MiB);
  EXPECT_LE(2 * 805 * MiB, b->budget * 92 / 100);
  auto m = compute_budget(machine(2 * GiB), std::nullopt, std::nullopt);
  ASSERT_TRUE(m.ok());
  EXPECT_EQ(m->reserve_rule, "machine");
  EXPECT_GT(2 * 805 * MiB, m->budget);
}

// Whatever the rule, the budget (the confinement's limit) stays below the
// capacity, so the build's hard limit is never the capacity itself.
TEST(Reserve, BudgetAlwaysBelowTheHardLimit) {
  for (Bytes c : {512 * MiB, 2 * GiB, 24 * GiB, 432 * GiB}) {
    for (const Capacity& cap : {machine(c), confined(c)}) {
      auto b = compute_budget(cap, std::nullopt, std::nullopt);
      ASSERT_TRUE(b.ok()) << b.error();
      EXPECT_GE(b->reserve, std::min<Bytes>(128 * MiB, c / 2)) << c;
      EXPECT_EQ(b->budget + b->reserve, c);
    }
  }
  auto flag = compute_budget(confined(24 * GiB), std::string("1G"), std::nullopt);
  ASSERT_TRUE(flag.ok());
  EXPECT_EQ(flag->reserve, 1 * GiB);
  EXPECT_EQ(flag->reserve_rule, "--reserve");
}

TEST(Budget, DefaultIsCapacityMinusReserve) {
  auto b = compute_budget(machine(100 * GiB), std::nullopt, std::nullopt);
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(b->reserve, 5 * GiB);
  EXPECT_EQ(b->budget, 95 * GiB);
  EXPECT_FALSE(b->clamped);
}

TEST(Budget, FlagsTakeSizesAndPercentages) {
  auto b = compute_budget(machine(100 * GiB), std::string("10%"), std::string("50G"));
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(b->reserve, 10 * GiB);
  EXPECT_EQ(b->budget, 50 * GiB);
  b = compute_budget(machine(100 * GiB), std::string("2G"), std::string("80%"));
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(b->budget, 80 * GiB);
}

TEST(Budget, MemoryAboveCapacityMinusReserveIsClampedWithAWarning) {
  std::vector<std::string> lines;
  log::set_sink([&](log::Level, std::string_view line) { lines.emplace_back(line); });
  auto b = compute_budget(machine(100 * GiB), std::nullopt, std::string("200G"));
  log::reset_sink();
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(b->budget, 95 * GiB);
  EXPECT_TRUE(b->clamped);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines[0].find("memgate: warning: --memory 200G"), std::string::npos) << lines[0];
}

TEST(Budget, BadInputIsAClearError) {
  auto bad = compute_budget(machine(100 * GiB), std::nullopt, std::string("lots"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("--memory"), std::string::npos);
  bad = compute_budget(machine(100 * GiB), std::string("12Q"), std::nullopt);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find("--reserve"), std::string::npos);
  EXPECT_FALSE(compute_budget(machine(100 * GiB), std::string("100%"), std::nullopt).ok());  // leaves nothing
  EXPECT_FALSE(compute_budget(machine(100 * GiB), std::string("200G"), std::nullopt).ok());
  EXPECT_FALSE(compute_budget(machine(100 * GiB), std::nullopt, std::string("0")).ok());
  EXPECT_FALSE(compute_budget(machine(0), std::nullopt, std::nullopt).ok());
}

// `--memory 1` and `--memory 0.5` gave a 1-byte budget.
TEST(Budget, MemoryBelowTheMinimumIsAnError) {
  for (const char* tiny : {"1", "0.5", "1000", "63M", "1%"}) {
    auto b = compute_budget(machine(4 * GiB), std::nullopt, std::string(tiny));
    EXPECT_FALSE(b.ok()) << tiny;
  }
  EXPECT_TRUE(compute_budget(machine(4 * GiB), std::nullopt, std::string("64M")).ok());
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
