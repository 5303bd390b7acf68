// The runner's two process starts with real, small processes: the build
// command (run/build_process.hpp: its exit statuses, environment and
// signal state) and one job's OS side without cgroups (run/job_exec.hpp:
// measured, stopped, continued and killed through its /proc tree). Every
// wait is on the child's own state change, never on time.
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <fstream>

#include "run/build_process.hpp"
#include "run/job_exec.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"

using namespace memgate;
using memgate::test::ScopedEnv;
using memgate::test::TempDir;

namespace {

// A child of this test, killed and reaped whatever the test does.
struct Child {
  pid_t pid = -1;
  ~Child() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
    }
  }
  int wait(int options = 0) {
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, options), pid);
    if (WIFEXITED(status) || WIFSIGNALED(status)) pid = -1;
    return status;
  }
};

SpawnSpec spec_of(std::vector<std::string> argv) {
  SpawnSpec s;
  s.argv = std::move(argv);
  return s;
}

}  // namespace

TEST(ShellStatus, IsTheExitCodeOr128PlusTheSignal) {
  EXPECT_EQ(shell_status(3 << 8), 3);
  EXPECT_EQ(shell_status(0), 0);
  EXPECT_EQ(shell_status(SIGKILL), 128 + SIGKILL);
  EXPECT_EQ(shell_status(SIGTERM), 128 + SIGTERM);
}

TEST(SpawnBuild, AMissingCommandIs127AndNotExecutable126) {
  SpawnFailure f;
  EXPECT_EQ(spawn_build(spec_of({"/nonexistent/memgate-no-such-tool"}), &f), -1);
  EXPECT_EQ(f.exit_code, 127);
  EXPECT_NE(f.message.find("command not found"), std::string::npos);

  TempDir dir("spawn");
  const std::string plain = dir.path() + "/plain";
  std::ofstream(plain) << "not a program\n";
  ::chmod(plain.c_str(), 0644);
  SpawnFailure g;
  EXPECT_EQ(spawn_build(spec_of({plain}), &g), -1);
  EXPECT_EQ(g.exit_code, 126);

  SpawnFailure h;
  EXPECT_EQ(spawn_build(SpawnSpec{}, &h), -1);
  EXPECT_EQ(h.exit_code, 125);
}

TEST(SpawnBuild, AppliesTheEnvironmentChangesInTheChild) {
  ScopedEnv unset_me("MEMGATE_TEST_UNSET", "was set");
  SpawnSpec s = spec_of({"/bin/sh", "-c", R"(test "$MEMGATE_TEST_SET" = yes && test -z "${MEMGATE_TEST_UNSET+x}")"});
  s.env_changes = {{"MEMGATE_TEST_SET", "yes"}, {"MEMGATE_TEST_UNSET", ""}};
  SpawnFailure f;
  Child c{spawn_build(s, &f)};
  ASSERT_GT(c.pid, 0) << f.message;
  EXPECT_EQ(shell_status(c.wait()), 0);
  EXPECT_STREQ(std::getenv("MEMGATE_TEST_UNSET"), "was set") << "only the child's environment changes";
}

// memgate blocks the signals it reads through a signalfd; the build must
// not inherit that mask, or Ctrl-C's SIGTERM would never reach it.
TEST(SpawnBuild, TheBuildStartsWithAnEmptySignalMask) {
  sigset_t term, old;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  ASSERT_EQ(sigprocmask(SIG_BLOCK, &term, &old), 0);
  SpawnFailure f;
  Child c{spawn_build(spec_of({"/bin/sh", "-c", "kill -TERM $$; exit 0"}), &f)};
  sigprocmask(SIG_SETMASK, &old, nullptr);
  ASSERT_GT(c.pid, 0) << f.message;
  EXPECT_EQ(shell_status(c.wait()), 128 + SIGTERM);
}

// Without a cgroup a job is its program's /proc tree: measured by RSS,
// stopped and continued by signal, killed by SIGKILL.
// In a child, so this test's own priority is left alone: what raise_own_priority
// returns, the niceness the child then has, each as an exit code (+ 20).
static int niceness_after_raise(int start) {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::setpriority(PRIO_PROCESS, 0, start);
    const int said = raise_own_priority();
    errno = 0;
    const int now = ::getpriority(PRIO_PROCESS, 0);
    _exit(errno == 0 && now == said ? now + 20 : 99);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) - 20 : 99;
}

TEST(OwnPriority, RisesToItsNiceness) {
  if (::geteuid() != 0) GTEST_SKIP() << "raising a priority needs root (or RLIMIT_NICE)";
  EXPECT_EQ(niceness_after_raise(0), kOwnNice);
  EXPECT_EQ(niceness_after_raise(5), kOwnNice);
  EXPECT_EQ(niceness_after_raise(kOwnNice), kOwnNice);
}

TEST(JobExecProc, MeasuresFreezesAndKillsTheChildsTree) {
  Child c;
  c.pid = ::fork();
  ASSERT_GE(c.pid, 0);
  if (c.pid == 0) {
    for (;;) ::pause();
  }
  JobExec exec(nullptr, std::nullopt, 7);
  EXPECT_TRUE(exec.prepare_attempt().empty()) << "no cgroup dirs to join";
  EXPECT_TRUE(exec.set_child(c.pid));
  EXPECT_FALSE(exec.has_cgroup());
  std::vector<pid_t> tree = exec.tree();
  EXPECT_NE(std::find(tree.begin(), tree.end(), c.pid), tree.end());
  JobMemory m = exec.sample(Sampling::exact);
  EXPECT_GT(m.current, 0);
  EXPECT_EQ(m.peak, m.current);

  ASSERT_TRUE(exec.freeze(true));
  EXPECT_TRUE(WIFSTOPPED(c.wait(WUNTRACED)));
  ASSERT_TRUE(exec.freeze(false));
  EXPECT_TRUE(WIFCONTINUED(c.wait(WCONTINUED)));
  EXPECT_FALSE(exec.oom_killed());

  exec.kill();
  int status = c.wait();
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
}

TEST(JobExecProc, AJobWithoutAChildHasNothingToFreeze) {
  JobExec exec(nullptr, std::nullopt, 8);
  exec.prepare_attempt();
  EXPECT_TRUE(exec.tree().empty());
  EXPECT_FALSE(exec.freeze(true)) << "the governor is told, and undoes the freeze";
  EXPECT_EQ(exec.sample(Sampling::exact).current, 0);
}
