// Cgroups a dead memgate left: found beside ours by their owner lock and
// pid, never a live one's, and removed (on a fake tree in a temp dir: the real ones are
// exercised by tests/e2e/run_memgate_killed.sh).
#include "platform/cgroup_stale.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include "support/temp_dir.hpp"

using namespace memgate;
using namespace memgate::platform;
namespace fs = std::filesystem;

namespace {

class StaleCgroups : public ::testing::Test {
 protected:
  std::string mk(const std::string& rel) {
    fs::create_directories(root_ + "/" + rel);
    return root_ + "/" + rel;
  }
  test::TempDir tmp_{"stale"};
  std::string root_ = tmp_.path();
};

std::vector<pid_t> pids_of(const std::vector<StaleCgroup>& v) {
  std::vector<pid_t> out;
  for (const auto& s : v) out.push_back(s.pid);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_F(StaleCgroups, V1FindsDeadMemgatesInBothHierarchiesAndLeavesTheLiving) {
  CgroupLayout l;
  l.version = CgroupVersion::v1;
  l.memory_dir = mk("memory/us");
  l.freezer_dir = mk("freezer/us");
  mk("memory/us/memgate-100/job-1-1");
  mk("freezer/us/memgate-100/job-1-1");
  mk("memory/us/memgate-200");  // alive
  mk("freezer/us/memgate-300");  // only the freezer twin is left
  mk("memory/us/memgate-test-run_budget-9-a");  // a test's cgroup, not memgate's
  mk("memory/us/other");
  auto stale = find_stale_cgroups(l, [](pid_t p) { return p == 200; });
  EXPECT_EQ(pids_of(stale), (std::vector<pid_t>{100, 300}));
  for (const auto& s : stale) ASSERT_TRUE(clean_stale_cgroup(s).ok());
  EXPECT_FALSE(fs::exists(root_ + "/memory/us/memgate-100"));
  EXPECT_FALSE(fs::exists(root_ + "/freezer/us/memgate-100"));
  EXPECT_FALSE(fs::exists(root_ + "/freezer/us/memgate-300"));
  EXPECT_TRUE(fs::exists(root_ + "/memory/us/memgate-200"));
  EXPECT_TRUE(fs::exists(root_ + "/memory/us/memgate-test-run_budget-9-a"));
}

// A live run in another pid namespace: its pid means nothing here (gone,
// or another process), but it holds the owner lock, so it is left alone;
// once that run ends (its lock goes with it), the same cgroup is stale.
TEST_F(StaleCgroups, AHeldOwnerLockKeepsACgroupWhosePidIsGone) {
  CgroupLayout l;
  l.version = CgroupVersion::v1;
  l.memory_dir = mk("memory/us");
  l.freezer_dir = mk("freezer/us");
  auto live = Cgroup::open(CgroupVersion::v1, mk("memory/us/memgate-500"), mk("freezer/us/memgate-500"));
  mk("freezer/us/memgate-600");  // another live run's freezer twin only
  auto twin = Cgroup::open(CgroupVersion::v1, "", root_ + "/freezer/us/memgate-600");
  auto nobody = [](pid_t) { return false; };
  {
    auto lock = OwnerLock::take(live);
    auto twin_lock = OwnerLock::take(twin);
    EXPECT_EQ(lock.held(), 2u);
    EXPECT_EQ(twin_lock.held(), 1u);
    EXPECT_TRUE(owner_lock_held(live.memory_dir()));
    EXPECT_TRUE(owner_lock_held(live.freezer_dir()));
    EXPECT_EQ(pids_of(find_stale_cgroups(l, nobody)), std::vector<pid_t>{});
  }
  EXPECT_FALSE(owner_lock_held(live.memory_dir()));
  EXPECT_EQ(pids_of(find_stale_cgroups(l, nobody)), (std::vector<pid_t>{500, 600}));
}

// Either directory of a v1 pair held is enough: a run whose memory twin
// was removed by hand still holds its freezer cgroup.
TEST_F(StaleCgroups, OneHeldDirectoryOfAPairKeepsTheCgroup) {
  CgroupLayout l;
  l.version = CgroupVersion::v1;
  l.memory_dir = mk("memory/us");
  l.freezer_dir = mk("freezer/us");
  mk("memory/us/memgate-700");
  auto frz = Cgroup::open(CgroupVersion::v1, "", mk("freezer/us/memgate-700"));
  auto lock = OwnerLock::take(frz);
  EXPECT_EQ(pids_of(find_stale_cgroups(l, [](pid_t) { return false; })), std::vector<pid_t>{});
}

TEST_F(StaleCgroups, V2LooksBesideTheLeafMemgateIsIn) {
  CgroupLayout l;
  l.version = CgroupVersion::v2;
  l.memory_dir = l.freezer_dir = mk("user/session/memgate-leaf");
  mk("user/session/memgate-4242/build");
  auto stale = find_stale_cgroups(l, [](pid_t) { return false; });
  ASSERT_EQ(pids_of(stale), (std::vector<pid_t>{4242}));
  EXPECT_EQ(stale[0].cgroup.memory_dir(), root_ + "/user/session/memgate-4242");
}

TEST(StaleCgroupPids, APidIsAliveWhileAnyProcessHasIt) {
  EXPECT_TRUE(pid_exists(::getpid()));
  EXPECT_FALSE(pid_exists(0));
  const std::string fixtures = std::string(MEMGATE_FIXTURES) + "/proc/tree";
  EXPECT_TRUE(pid_exists(210, fixtures));
  EXPECT_FALSE(pid_exists(9999, fixtures));
}
