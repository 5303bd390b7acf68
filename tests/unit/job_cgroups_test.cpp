// Job cgroups made ahead and removed later (run/job_cgroups.hpp), on a
// v1-shaped tree of plain directories (a memory and a freezer "hierarchy"
// under a temp dir): making and removing one is a mkdir and an rmdir
// there as on cgroupfs. The clock is the test's.
#include "run/job_cgroups.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "support/temp_dir.hpp"
#include "util/fs.hpp"

namespace memgate {

namespace {

double g_now = 0;
double g_step = 0;  // how far each reading of the clock moves it
double test_clock() {
  const double t = g_now;
  g_now += g_step;
  return t;
}

class JobCgroupsTest : public ::testing::Test {
 protected:
  JobCgroupsTest() {
    g_now = 100;
    g_step = 0;
    std::filesystem::create_directories(dir_ / "memory/memgate-1");
    std::filesystem::create_directories(dir_ / "freezer/memgate-1");
  }
  platform::Cgroup parent() const {
    return platform::Cgroup::open(platform::CgroupVersion::v1, dir_ / "memory/memgate-1", dir_ / "freezer/memgate-1");
  }
  // The job cgroups in the memory hierarchy, by name.
  std::set<std::string> on_disk() const {
    std::set<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(dir_ / "memory/memgate-1"))
      out.insert(e.path().filename().string());
    return out;
  }

  test::TempDir dir_{"job-cgroups"};
};

}  // namespace

TEST_F(JobCgroupsTest, TidyMakesCgroupsAheadAndATakeHandsOutAFreshOneEachTime) {
  JobCgroups jobs(parent(), test_clock);
  EXPECT_FALSE(jobs.tidy(3, 1.0)) << "nothing is left to do once three are ready";
  EXPECT_EQ(jobs.ready(), 3u);
  EXPECT_EQ(on_disk(), (std::set<std::string>{"job-1", "job-2", "job-3"}));
  std::set<std::string> taken;
  for (int i = 0; i < 4; ++i) {  // the fourth is made there and then
    auto cg = jobs.take();
    ASSERT_TRUE(cg) << cg.error();
    EXPECT_TRUE(path_exists(cg->memory_dir()));
    EXPECT_TRUE(path_exists(cg->freezer_dir()));
    EXPECT_TRUE(taken.insert(cg->memory_dir()).second) << "handed out twice: " << cg->memory_dir();
  }
  EXPECT_EQ(jobs.ready(), 0u);
  EXPECT_EQ(on_disk().size(), 4u);
}

TEST_F(JobCgroupsTest, TidyStopsAtItsBudgetAndSaysMoreIsDue) {
  JobCgroups jobs(parent(), test_clock);
  g_step = 0.001;  // every step of work takes a millisecond
  EXPECT_TRUE(jobs.tidy(10, 0.0025));
  EXPECT_GE(jobs.ready(), 1u);
  EXPECT_LE(jobs.ready(), 4u);
  int turns = 1;
  while (jobs.tidy(10, 0.0025)) ++turns;
  EXPECT_EQ(jobs.ready(), 10u);
  EXPECT_GE(turns, 3);
  g_step = 0;
  EXPECT_FALSE(jobs.tidy(1, 0)) << "one wanted, ten ready";
}

TEST_F(JobCgroupsTest, ARetiredCgroupIsRemovedAndOneNotYetEmptyIsTriedAgainLater) {
  JobCgroups jobs(parent(), test_clock);
  auto a = jobs.take();
  auto b = jobs.take();
  ASSERT_TRUE(a && b);
  // b is not empty yet (on cgroupfs: its last process still exiting).
  std::ofstream(b->memory_dir() + "/left") << "x";
  jobs.retire(*a);
  jobs.retire(*b);
  EXPECT_EQ(jobs.retired(), 2u);
  EXPECT_FALSE(jobs.tidy(0, 1.0)) << "the one that could not go is not due again at once";
  EXPECT_FALSE(path_exists(a->memory_dir()));
  EXPECT_FALSE(path_exists(a->freezer_dir()));
  EXPECT_TRUE(path_exists(b->memory_dir()));
  EXPECT_EQ(jobs.retired(), 1u);
  std::filesystem::remove(b->memory_dir() + "/left");
  EXPECT_FALSE(jobs.tidy(0, 1.0));
  EXPECT_EQ(jobs.retired(), 1u) << "tried again only kRetry_s later";
  g_now += JobCgroups::kRetry_s;
  EXPECT_FALSE(jobs.tidy(0, 1.0));
  EXPECT_EQ(jobs.retired(), 0u);
  EXPECT_TRUE(on_disk().empty());
}

TEST_F(JobCgroupsTest, AParentWhereNoneCanBeMadeIsTriedAgainLaterNotAtEveryTurn) {
  std::filesystem::remove_all(dir_ / "memory/memgate-1");
  JobCgroups jobs(parent(), test_clock);
  EXPECT_FALSE(jobs.tidy(2, 1.0));
  EXPECT_EQ(jobs.ready(), 0u);
  EXPECT_FALSE(jobs.tidy(2, 1.0)) << "not due again within kRetry_s";
  EXPECT_FALSE(jobs.take()) << "a grant that cannot have a cgroup hears why";
  std::filesystem::create_directories(dir_ / "memory/memgate-1");
  g_now += JobCgroups::kRetry_s;
  EXPECT_FALSE(jobs.tidy(2, 1.0));
  EXPECT_EQ(jobs.ready(), 2u);
}

TEST_F(JobCgroupsTest, CpuAccountingIsWhatTheParentShows) {
  EXPECT_FALSE(JobCgroups(parent(), test_clock).cpu_accounted()) << "v1 without cpuacct beside memory";
  std::ofstream(dir_ / "memory/memgate-1/cpuacct.usage") << "1500000000\n";
  EXPECT_TRUE(JobCgroups(parent(), test_clock).cpu_accounted());
}

}  // namespace memgate
