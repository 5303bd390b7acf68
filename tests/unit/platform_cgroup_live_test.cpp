// The Cgroup handle against the real kernel: creates small, hard-limited
// cgroups below our own, runs forked children in them, and removes
// everything it made. Skips where no writable memory cgroup exists.
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

#include <fmt/core.h>
#include <gtest/gtest.h>

#include "platform/cgroup.hpp"
#include "util/fs.hpp"

using namespace memgate;
using namespace memgate::platform;

namespace {

class LiveCgroup : public ::testing::Test {
 protected:
  void SetUp() override {
    layout_ = detect_cgroups();
    if (layout_.version == CgroupVersion::none) GTEST_SKIP() << "no memory cgroup here";
    auto cg = Cgroup::create_under(layout_, fmt::format("memgate-unit-{}-{}", ::getpid(), counter_++));
    if (!cg) GTEST_SKIP() << "cannot create cgroups here: " << cg.error();
    cg_ = *cg;
  }
  void TearDown() override {
    if (!cg_.valid()) return;
    (void)cg_.kill_all();
    EXPECT_TRUE(cg_.remove().ok());
  }

  // A child that waits for a byte on a pipe, then runs `then` and exits.
  template <class F>
  pid_t spawn(int* release_fd, F then) {
    int fds[2];
    if (::pipe(fds) != 0) return -1;
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(fds[1]);
      char c;
      if (::read(fds[0], &c, 1) == 1) then();
      ::_exit(0);
    }
    ::close(fds[0]);
    *release_fd = fds[1];
    return pid;
  }

  static inline int counter_ = 0;
  CgroupLayout layout_;
  Cgroup cg_;
};

// Freezing has no completion event on v1; a bounded poll is all there is.
bool wait_frozen(const Cgroup& cg, bool want) {
  for (int i = 0; i < 200; ++i) {
    if (cg.frozen() == want) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

TEST_F(LiveCgroup, LimitMembershipFreezeKillAndRemove) {
  ASSERT_TRUE(cg_.set_memory_limit(64 * MiB, 48 * MiB).ok());
  auto lim = cg_.memory_limit();
  ASSERT_TRUE(lim && lim->bytes);
  EXPECT_EQ(*lim->bytes, 64 * MiB);

  int release = -1;
  pid_t child = spawn(&release, [] { ::pause(); });
  ASSERT_GT(child, 0);
  ASSERT_TRUE(cg_.add_process(child).ok());
  EXPECT_EQ(cg_.processes(), std::vector<pid_t>{child});
  ASSERT_EQ(::write(release, "x", 1), 1);
  ::close(release);
  EXPECT_TRUE(cg_.usage().has_value());

  if (cg_.can_freeze()) {
    ASSERT_TRUE(cg_.freeze(true).ok());
    EXPECT_TRUE(wait_frozen(cg_, true));
  }
  // Killing must work on a frozen cgroup too.
  ASSERT_TRUE(cg_.kill_all().ok());
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_TRUE(cg_.processes().empty());
  std::string dir = cg_.memory_dir();
  ASSERT_TRUE(cg_.remove().ok());
  EXPECT_FALSE(path_exists(dir));
  cg_ = Cgroup();
}

TEST_F(LiveCgroup, OomKillInAChildCountsForTheParent) {
  auto child_cg = cg_.create_child("oom");
  ASSERT_TRUE(child_cg.ok()) << child_cg.error();
  ASSERT_TRUE(child_cg->set_memory_limit(32 * MiB).ok());
  EXPECT_EQ(cg_.oom_kills(), 0);
  int release = -1;
  pid_t pid = spawn(&release, [] {
    // Far past the 32 MiB limit: the kernel OOM-kills us inside the cgroup.
    for (int i = 0; i < 64; ++i) {
      char* p = static_cast<char*>(std::malloc(4 * MiB));
      if (p) std::memset(p, 1, 4 * MiB);
    }
  });
  ASSERT_GT(pid, 0);
  ASSERT_TRUE(child_cg->add_process(pid).ok());
  ASSERT_EQ(::write(release, "x", 1), 1);
  ::close(release);
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_EQ(child_cg->oom_kills(), 1);
  EXPECT_EQ(cg_.oom_kills(), 1);  // summed over the subtree on v1, hierarchical on v2
  EXPECT_GE(child_cg->peak().value_or(0), 30 * MiB);
}

TEST_F(LiveCgroup, RemoveTakesEmptyChildrenAlong) {
  auto a = cg_.create_child("a");
  ASSERT_TRUE(a.ok()) << a.error();
  auto b = a->create_child("b");
  ASSERT_TRUE(b.ok()) << b.error();
  EXPECT_FALSE(cg_.create_child("a").ok());  // exists already: an error, not a silent reuse
  std::string dir = cg_.memory_dir();
  ASSERT_TRUE(cg_.remove().ok());
  EXPECT_FALSE(path_exists(b->memory_dir()));
  EXPECT_FALSE(path_exists(dir));
  cg_ = Cgroup();
}

TEST_F(LiveCgroup, ResetPeakOnV1) {
  if (cg_.version() != CgroupVersion::v1) GTEST_SKIP() << "v2 resets memory.peak per file descriptor";
  EXPECT_TRUE(cg_.reset_peak().ok());
  EXPECT_EQ(cg_.peak(), 0);
}

// The ungated scan reads the build's cgroups without the jobs' own.
TEST_F(LiveCgroup, AllProcessesExceptSkipsTheNamedChildren) {
  auto job = cg_.create_child("job-1-1");
  auto other = cg_.create_child("build");
  ASSERT_TRUE(job && other);
  int r1 = -1, r2 = -1;
  pid_t in_job = spawn(&r1, [] {});
  pid_t in_build = spawn(&r2, [] {});
  ASSERT_GT(in_job, 0);
  ASSERT_GT(in_build, 0);
  ASSERT_TRUE(job->add_process(in_job).ok());
  ASSERT_TRUE(other->add_process(in_build).ok());
  auto all = cg_.all_processes();
  std::sort(all.begin(), all.end());
  auto want = std::vector<pid_t>{std::min(in_job, in_build), std::max(in_job, in_build)};
  EXPECT_EQ(all, want);
  EXPECT_EQ(cg_.all_processes_except("job-"), std::vector<pid_t>{in_build});
  ::close(r1);
  ::close(r2);
  int st = 0;
  ::waitpid(in_job, &st, 0);
  ::waitpid(in_build, &st, 0);
}

// A job cgroup made below a held directory reads as one opened by its
// path: the same memory in use, peak and members.
TEST_F(LiveCgroup, AChildOfAHeldDirectoryReadsAsByItsPath) {
  const Cgroup held = cg_.with_open_dir();
  auto job = held.create_child("job-7");
  ASSERT_TRUE(job.ok()) << job.error();
  const Cgroup by_path = Cgroup::open(job->version(), job->memory_dir(), job->freezer_dir());
  int release = -1;
  pid_t child = spawn(&release, [] {});
  ASSERT_GT(child, 0);
  ASSERT_TRUE(job->add_process(child).ok());
  EXPECT_EQ(job->processes(), std::vector<pid_t>{child});
  EXPECT_EQ(job->processes(), by_path.processes());
  ASSERT_TRUE(job->usage().has_value());
  EXPECT_TRUE(by_path.usage().has_value());
  EXPECT_EQ(job->peak().has_value(), by_path.peak().has_value());
  EXPECT_EQ(job->cpu_s().has_value(), by_path.cpu_s().has_value());
  ::close(release);
  int st = 0;
  ::waitpid(child, &st, 0);
  // Gone from the kernel, gone from both.
  ASSERT_TRUE(job->remove().ok());
  EXPECT_FALSE(job->usage().has_value());
  EXPECT_FALSE(by_path.usage().has_value());
}
