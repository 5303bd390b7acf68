// A job's CPU time as JobExec reads it where it has no cgroup (/proc), with
// a real child process: its own time and that of a grandchild it waited for.
#include "run/job_exec.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

using namespace memgate;

namespace {

double cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

void burn(double seconds) {
  const double until = cpu_now() + seconds;
  volatile unsigned long x = 0;
  while (cpu_now() < until) x = x + 1;
}

}  // namespace

TEST(JobExecCpu, ProcFallbackCountsTheTreeAndTheChildrenItWaitedFor) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // A compiler driver: a helper that burns 0.2 s and is waited for,
    // then 0.1 s of its own; then it stops until killed.
    pid_t helper = ::fork();
    if (helper == 0) {
      burn(0.2);
      ::_exit(0);
    }
    int st = 0;
    ::waitpid(helper, &st, 0);
    burn(0.1);
    ::raise(SIGSTOP);
    ::_exit(0);
  }
  int st = 0;
  ASSERT_EQ(::waitpid(child, &st, WUNTRACED), child);
  ASSERT_TRUE(WIFSTOPPED(st));
  JobExec exec(nullptr, std::nullopt, 1);
  EXPECT_TRUE(exec.prepare_attempt().empty());
  exec.set_child(child);
  JobMemory m = exec.sample(Sampling::exact);
  ::kill(child, SIGKILL);
  ::waitpid(child, &st, 0);
  EXPECT_GE(m.cpu_s, 0.25);  // ticks of 10 ms: 0.3 s less rounding
  EXPECT_LE(m.cpu_s, 2.0);
  EXPECT_GT(m.current, 0);
}
