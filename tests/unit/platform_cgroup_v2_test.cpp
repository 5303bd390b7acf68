// cgroup v2's "no internal processes" rule: the plan (pure), and the leaf
// move and its undo on a copy of a hand-written login-session tree
// (tests/fixtures/cgroup2/login). Plain files cannot enforce the kernel's
// rules, so these check what memgate writes; tests/vm runs it for real.
#include "platform/cgroup_v2.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "fixtures.hpp"
#include "platform/cgroup.hpp"
#include "util/fs.hpp"

using namespace memgate;
using namespace memgate::platform;
namespace fs = std::filesystem;

namespace {

const std::string kSession = "/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope";

// A writable copy of the login fixture, removed afterwards.
class LoginTree : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("memgate-v2-test-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::copy(memgate::test::kFixtures + "/cgroup2/login", root_, fs::copy_options::recursive);
    session_ = root_.string() + kSession;
  }
  void TearDown() override { fs::remove_all(root_); }
  std::string text(const std::string& path) { return read_file(path).value_or("<missing>"); }

  fs::path root_;
  std::string session_;
};

}  // namespace

TEST(PlanV2Base, ACgroupHoldingProcessesMovesThemIntoALeaf) {
  V2Facts f{"/cg/session-3.scope", false, true, false, true};
  auto p = plan_v2_base(f);
  ASSERT_TRUE(p.ok()) << p.error();
  EXPECT_EQ(p->base, "/cg/session-3.scope");
  EXPECT_TRUE(p->move_to_leaf);
  EXPECT_TRUE(p->via_leaf);
}

TEST(PlanV2Base, InTheLeafAlreadyTheParentIsTheBase) {
  V2Facts f{"/cg/session-3.scope/memgate-leaf", false, true, false, true};
  auto p = plan_v2_base(f);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->base, "/cg/session-3.scope");
  EXPECT_FALSE(p->move_to_leaf);
  EXPECT_TRUE(p->via_leaf);
}

TEST(PlanV2Base, ALeafNamedLikeOursWhoseParentHasNoMemoryIsJustACgroup) {
  V2Facts f{"/cg/x/memgate-leaf", false, true, false, false};
  auto p = plan_v2_base(f);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->base, "/cg/x/memgate-leaf");
  EXPECT_TRUE(p->move_to_leaf);
}

TEST(PlanV2Base, TheRootAndAnEnabledCgroupNeedNoMove) {
  auto root = plan_v2_base(V2Facts{"/sys/fs/cgroup", true, true, false, false});
  ASSERT_TRUE(root.ok());
  EXPECT_FALSE(root->move_to_leaf);
  EXPECT_FALSE(root->via_leaf);
  auto enabled = plan_v2_base(V2Facts{"/cg/a", false, true, true, true});
  ASSERT_TRUE(enabled.ok());
  EXPECT_EQ(enabled->base, "/cg/a");
  EXPECT_FALSE(enabled->move_to_leaf);
}

TEST(PlanV2Base, NoMemoryControllerOfferedIsAnErrorThatSaysWhy) {
  auto p = plan_v2_base(V2Facts{"/cg/a", false, false, false, false});
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().find("memory controller is not available in /cg/a"), std::string::npos) << p.error();
}

TEST_F(LoginTree, PrepareMakesTheLeafAndEnablesMemoryButNotTheCpuItIsNotOffered) {
  auto b = prepare_v2_base(session_);
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_EQ(b->dir, session_);
  EXPECT_EQ(b->own, session_ + "/memgate-leaf");
  EXPECT_TRUE(b->via_leaf);
  EXPECT_TRUE(fs::is_directory(b->own));
  EXPECT_EQ(text(session_ + "/cgroup.subtree_control"), "+memory");  // one write; no +cpu
}

TEST_F(LoginTree, CreateUnderThatFailsAfterTheMoveUndoesIt) {
  auto layout = platform::detect_cgroups(text(root_.string() + "/self_cgroup"), text(root_.string() + "/mountinfo"),
                                         root_.string());
  ASSERT_EQ(layout.version, CgroupVersion::v2);
  ASSERT_EQ(layout.memory_dir, session_);
  // A plain directory gets no memory.max from the kernel, so the new cgroup
  // counts as lacking the controller: the leaf move must be rolled back.
  auto cg = Cgroup::create_under(layout, "memgate-77");
  ASSERT_FALSE(cg.ok());
  EXPECT_NE(cg.error().find("has no memory controller"), std::string::npos) << cg.error();
  EXPECT_FALSE(fs::exists(session_ + "/memgate-77"));
  EXPECT_FALSE(fs::exists(session_ + "/memgate-leaf"));
  EXPECT_EQ(layout.memory_dir, session_);  // memgate did not move
}

TEST_F(LoginTree, ReleaseWaitsForTheLastMemgate) {
  ASSERT_TRUE(prepare_v2_base(session_).ok());
  fs::create_directory(session_ + "/memgate-4242");  // another run, still going
  ASSERT_TRUE(release_v2_base(session_).ok());
  EXPECT_EQ(text(session_ + "/cgroup.subtree_control"), "+memory");
  EXPECT_TRUE(fs::is_directory(session_ + "/memgate-leaf"));
  fs::remove(session_ + "/memgate-4242");
  // The last one out: controllers off (memory only; cpu was never on).
  ASSERT_TRUE(write_file(session_ + "/cgroup.subtree_control", "memory", true).ok());  // as the kernel shows it
  ASSERT_TRUE(release_v2_base(session_).ok());
  EXPECT_EQ(text(session_ + "/cgroup.subtree_control"), "-memory");
  EXPECT_FALSE(fs::exists(session_ + "/memgate-leaf"));
}

TEST_F(LoginTree, ReleaseWithoutALeafDoesNothing) {
  ASSERT_TRUE(release_v2_base(session_).ok());
  EXPECT_EQ(text(session_ + "/cgroup.subtree_control"), "");
}

TEST(PlanV2Base, NotDelegatedSaysHowSystemdDelegates) {
  EXPECT_EQ(not_delegated_hint(false), " (the cgroup is not delegated to this user)");
  EXPECT_NE(not_delegated_hint(true).find("systemd-run --user --scope -p Delegate=yes"), std::string::npos);
}

TEST(BuildPressure, TheBuildCgroupsOwnStallsWhereTheKernelHasThem) {
  auto session = Cgroup::open(CgroupVersion::v2, memgate::test::kFixtures + "/cgroup2/login" + kSession);
  auto p = build_memory_pressure(&session);
  ASSERT_TRUE(p.psi && p.psi->full);
  EXPECT_STREQ(p.source, "build cgroup");
  EXPECT_DOUBLE_EQ(p.psi->full->avg10, 22.75);
  // A cgroup without memory.pressure (v1, or a kernel without PSI): the
  // machine's, if it has PSI at all.
  auto job = Cgroup::open(CgroupVersion::v2, memgate::test::kFixtures + "/cgroup2/host/sys/fs/cgroup/build.slice");
  EXPECT_FALSE(job.pressure());
  auto machine = build_memory_pressure(&job);
  EXPECT_STREQ(machine.source, machine.psi ? "machine" : "none");
  EXPECT_STREQ(build_memory_pressure(nullptr).source, machine.source);
}
