// The real `memgate` binary as a wrapper: the grant runs the program in its
// job, the program's end and signals are passed on, and a governor that is
// gone or hangs up never stops the build (wrapper_fixture.hpp).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "wrapper_fixture.hpp"

using namespace memgate;
using namespace memgate::wrapper_test;

TEST_F(WrapperTest, RequestArrivesAndGrantRunsTheProgramInItsJob) {
  // A plain file named cgroup.procs is not a cgroup (the
  // wrapper, often root, must not write its pid to whatever file a
  // governor names): it is left alone, with a warning. The second dir does
  // not exist. Failing to join either must not stop the program.
  ASSERT_EQ(::mkdir((tmp_ + "/cg").c_str(), 0755), 0);
  ASSERT_TRUE(write_file(tmp_ + "/cg/cgroup.procs", "", true).ok());
  cgroups_ = {tmp_ + "/cg", tmp_ + "/no-such-cgroup"};
  Env env = base_env();
  env["PATH"] = shims_ + ":/usr/bin:" + shims_ + ":/bin";
  pid_t pid = wrap({"/bin/sh", "-c", "printf '%s\\n%s\\n' \"$MEMGATE_JOB\" \"$PATH\" > job.txt; exit 3", "x"}, env);
  int status = wait_for(pid);
  ASSERT_TRUE(WIFEXITED(status)) << err_of(pid);
  EXPECT_EQ(WEXITSTATUS(status), 3) << err_of(pid);

  auto requests = all<RequestMsg>();
  ASSERT_EQ(requests.size(), 1u);
  const auto& r = requests[0];
  EXPECT_EQ(r.argv, (std::vector<std::string>{"/bin/sh", "-c", r.argv[2], "x"}));
  EXPECT_EQ(r.cwd, tmp_);
  EXPECT_EQ(r.tool, "sh");
  EXPECT_FALSE(r.identity.empty());
  EXPECT_GE(r.cpu_weight, 1);

  auto started = all<StartedMsg>();
  ASSERT_EQ(started.size(), 1u);
  EXPECT_NE(started[0].pid, pid);
  EXPECT_EQ(read_file(tmp_ + "/cg/cgroup.procs").value_or("?"), "");

  auto exits = all<ExitMsg>();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_TRUE(WIFEXITED(exits[0].status));
  EXPECT_EQ(WEXITSTATUS(exits[0].status), 3);
  EXPECT_GT(exits[0].maxrss_bytes, 0);

  EXPECT_EQ(read_file(tmp_ + "/job.txt").value_or(""), "42\n/usr/bin:/bin\n");  // marker set, shims gone
  EXPECT_EQ(count_of(err_of(pid), "ignoring the granted cgroup"), 2) << err_of(pid);
}

TEST_F(WrapperTest, GrantedProgramThatCannotBeExecutedFailsLikeAShell) {
  // Executable, but not a program the kernel can run: execve fails in the
  // spawned child, which shares the wrapper's memory and only reports errno.
  std::string bad = tmp_ + "/not-a-program";
  ASSERT_TRUE(write_file(bad, "\x7f" "ELF but not really", true).ok());
  ASSERT_EQ(::chmod(bad.c_str(), 0755), 0);
  pid_t pid = wrap({bad}, base_env());
  int status = wait_for(pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 126);
  EXPECT_NE(err_of(pid).find("memgate: error: cannot run '" + bad + "': Exec format error"), std::string::npos)
      << err_of(pid);
  auto exits = all<ExitMsg>();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(WEXITSTATUS(exits[0].status), 126);
}

TEST_F(WrapperTest, DeathBySignalIsPassedOn) {
  pid_t pid = wrap({"/bin/sh", "-c", "kill -TERM $$"}, base_env());
  int status = wait_for(pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << err_of(pid);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  auto exits = all<ExitMsg>();
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_TRUE(WIFSIGNALED(exits[0].status));
}

TEST_F(WrapperTest, ForwardsSigtermToTheProgram) {
  // A governor busy shutting down sends no verdict: a wrapper that was
  // told to stop must not wait for one.
  no_verdicts_ = true;
  std::string fifo = tmp_ + "/ready";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  pid_t pid = wrap({MEMJOB_BINARY, "--forever", "--peak", "1M", "--ready", fifo}, base_env());
  ASSERT_TRUE(serve_until([&] { return !all<StartedMsg>().empty(); }));
  char buf[16];
  int fd = ::open(fifo.c_str(), O_RDONLY);  // returns once memjob opens it: it is running
  ASSERT_GE(fd, 0);
  EXPECT_GT(::read(fd, buf, sizeof buf), 0);
  ::close(fd);
  ASSERT_EQ(::kill(pid, SIGTERM), 0);  // the wrapper only; it must pass it on
  int status = wait_for(pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << err_of(pid);
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  auto exits = all<ExitMsg>();
  ASSERT_EQ(exits.size(), 1u);
  ASSERT_TRUE(WIFSIGNALED(exits[0].status));
  EXPECT_EQ(WTERMSIG(exits[0].status), SIGTERM);
}

TEST_F(WrapperTest, RerunVerdictRunsTheProgramAgain) {
  reruns_ = 2;
  pid_t pid = wrap({"/bin/sh", "-c", "echo run >> runs.txt"}, base_env());
  int status = wait_for(pid);
  ASSERT_TRUE(WIFEXITED(status)) << err_of(pid);
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(read_file(tmp_ + "/runs.txt").value_or(""), "run\nrun\nrun\n");
  EXPECT_EQ(all<RequestMsg>().size(), 1u);  // one job, three attempts on one connection
  EXPECT_EQ(all<StartedMsg>().size(), 3u);
  EXPECT_EQ(all<ExitMsg>().size(), 3u);
}

TEST_F(WrapperTest, DeadSocketRunsTheProgramAndWarnsOncePerBuild) {
  Env env = base_env();
  env["MEMGATE_SOCKET"] = tmp_ + "/dead.sock";  // its directory exists; nobody listens
  std::vector<pid_t> pids;
  for (int i = 0; i < 6; ++i) pids.push_back(wrap({"/bin/sh", "-c", "echo ran >> ran.txt"}, env));
  std::string errors;
  for (pid_t pid : pids) {
    int status = wait_for(pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << err_of(pid);
    errors += err_of(pid);
  }
  EXPECT_EQ(count_of(read_file(tmp_ + "/ran.txt").value_or(""), "ran\n"), 6);
  EXPECT_EQ(count_of(errors, "memgate: warning: governor at " + tmp_ + "/dead.sock is not answering"), 1) << errors;
  EXPECT_EQ(server_->counters().accepted, 0u);
}

TEST_F(WrapperTest, GoneSocketDirectoryStillWarnsOnlyOnce) {
  Env env = base_env();
  std::string gone = tmp_ + "/gone-dir/memgate.sock";
  env["MEMGATE_SOCKET"] = gone;
  std::string errors;
  for (int i = 0; i < 3; ++i) {
    pid_t pid = wrap({"/bin/true"}, env);
    int status = wait_for(pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    errors += err_of(pid);
  }
  EXPECT_EQ(count_of(errors, "is not answering"), 1) << errors;
  // The fallback marker lives in /tmp, named after the socket path.
  std::uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : gone) h = (h ^ c) * 1099511628211ULL;
  char marker[128];
  std::snprintf(marker, sizeof marker, "/tmp/memgate-warned-%u-%016llx", ::geteuid(), static_cast<unsigned long long>(h));
  EXPECT_TRUE(path_exists(marker));
  ::unlink(marker);
}

TEST_F(WrapperTest, GovernorHangingUpBeforeAGrantMeansRunUngated) {
  hang_up_on_request_ = true;
  pid_t pid = wrap({"/bin/sh", "-c", "exit 4"}, base_env());
  int status = wait_for(pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 4);
  EXPECT_EQ(all<RequestMsg>().size(), 1u);
  EXPECT_TRUE(all<StartedMsg>().empty());
  EXPECT_EQ(count_of(err_of(pid), "is not answering; running jobs ungated"), 1);
}

TEST_F(WrapperTest, GovernorLostAfterStartLetsTheProgramFinish) {
  hang_up_on_started_ = true;
  pid_t pid = wrap({"/bin/sh", "-c", "echo once >> runs.txt; exit 5"}, base_env());
  int status = wait_for(pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 5);
  EXPECT_EQ(read_file(tmp_ + "/runs.txt").value_or(""), "once\n");  // no rerun, no second run
}

TEST_F(WrapperTest, DisableAndNestedCallsBypassTheGovernor) {
  Env disabled = base_env();
  disabled["MEMGATE_DISABLE"] = "1";
  Env nested = base_env();
  nested["MEMGATE_JOB"] = "7";
  Env outside = base_env();
  outside.erase("MEMGATE_SOCKET");
  for (const Env& env : {disabled, nested, outside}) {
    pid_t pid = wrap({"/bin/sh", "-c", "exit 6"}, env);
    int status = wait_for(pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 6);
    EXPECT_EQ(err_of(pid), "");  // silently
  }
  EXPECT_EQ(server_->counters().accepted, 0u);
}
