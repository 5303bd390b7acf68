// The real `memgate` binary through its shims: the real compiler found,
// never memgate itself; version and cargo probes pass straight through;
// exec form and the markers of ungated runs; which granted cgroups the
// wrapper joins (wrapper_fixture.hpp).
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "wrapper_fixture.hpp"

using namespace memgate;
using namespace memgate::wrapper_test;

TEST_F(WrapperTest, ShimFindsTheRealCompilerNeverItself) {
  make_script(real_ + "/g++", "echo \"real g++ $*\"; echo \"PATH=$PATH\"");
  std::string alias = tmp_ + "/alias";
  ASSERT_EQ(::symlink(shims_.c_str(), alias.c_str()), 0);
  Env env = base_env();
  env.erase("MEMGATE_SOCKET");
  env["PATH"] = shims_ + ":" + alias + ":" + shims_ + ":" + real_ + ":/usr/bin:/bin";
  pid_t pid = spawn(shims_ + "/g++", {"g++", "-c", "a.cpp"}, env);
  int status = wait_for(pid);
  ASSERT_TRUE(WIFEXITED(status)) << err_of(pid);
  EXPECT_EQ(WEXITSTATUS(status), 0) << err_of(pid);
  EXPECT_EQ(out_of(pid), "real g++ -c a.cpp\nPATH=" + real_ + ":/usr/bin:/bin\n");
}

TEST_F(WrapperTest, GatedShimReportsTheRealCompiler) {
  make_script(real_ + "/c++", "echo compiled > \"$2\"");
  Env env = base_env();
  env["PATH"] = shims_ + ":" + real_ + ":/usr/bin:/bin";
  pid_t pid = spawn(shims_ + "/c++", {"c++", "-o", "a.o"}, env);
  int status = wait_for(pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << err_of(pid);
  auto requests = all<RequestMsg>();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].argv, (std::vector<std::string>{real_ + "/c++", "-o", "a.o"}));
  EXPECT_EQ(requests[0].tool, "c++");
  EXPECT_EQ(read_file(tmp_ + "/a.o").value_or(""), "compiled\n");
}

TEST_F(WrapperTest, ShimWithoutARealCompilerSaysSo) {
  Env env = base_env();
  env["PATH"] = shims_ + ":" + shims_ + ":/nonexistent";
  pid_t pid = spawn(shims_ + "/hipcc", {"hipcc", "-c", "k.hip"}, env);
  int status = wait_for(pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 127);
  EXPECT_EQ(err_of(pid), "memgate: error: cannot find the real 'hipcc' in PATH\n");
  EXPECT_EQ(server_->counters().accepted, 0u);
}

TEST_F(WrapperTest, VersionProbesPassStraightThrough) {
  make_script(real_ + "/g++", "echo \"probe $*\"");
  Env env = base_env();
  env["PATH"] = shims_ + ":" + real_ + ":/usr/bin:/bin";
  const std::vector<std::vector<std::string>> probes = {
      {"--version"}, {"-v"}, {"-dumpversion"}, {"-dumpfullversion"}, {"-dumpmachine"}, {"-print-search-dirs"}, {"--help"}};
  for (const auto& args : probes) {
    std::vector<std::string> argv = {"g++"};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_t pid = spawn(shims_ + "/g++", argv, env);
    int status = wait_for(pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << err_of(pid);
    EXPECT_EQ(out_of(pid), "probe " + args[0] + "\n");
  }
  pid_t launcher = wrap({real_ + "/g++", "--version"}, env);
  EXPECT_EQ(WEXITSTATUS(wait_for(launcher)), 0);
  EXPECT_EQ(server_->counters().accepted, 0u);  // the governor never heard of them

  // `-v` with other arguments is a real (verbose) compile: gated.
  pid_t verbose = spawn(shims_ + "/g++", {"g++", "-v", "-c", "a.cpp"}, env);
  EXPECT_EQ(WEXITSTATUS(wait_for(verbose)), 0);
  EXPECT_EQ(all<RequestMsg>().size(), 1u);
}

TEST_F(WrapperTest, RecordedShimPathUnderTheLauncherMeansTheRealCompiler) {
  // CMake configured under `memgate run` records CXX=<shims>/c++ and the
  // launcher: `memgate wrap -- <shims>/c++ ...` must run the real c++, gated once.
  make_script(real_ + "/c++", "echo \"real c++ $*\"");
  Env env = base_env();
  env["PATH"] = shims_ + ":" + real_ + ":/usr/bin:/bin";
  pid_t pid = wrap({shims_ + "/c++", "-c", "x.cpp"}, env);
  int status = wait_for(pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << err_of(pid);
  EXPECT_EQ(out_of(pid), "real c++ -c x.cpp\n");
  EXPECT_EQ(all<RequestMsg>().size(), 1u);
}

TEST_F(WrapperTest, WrappingMemgateItselfIsRefused) {
  pid_t pid = wrap({MEMGATE_BINARY, "wrap", "--", "/bin/true"}, base_env());
  int status = wait_for(pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 125);
  EXPECT_NE(err_of(pid).find("is memgate itself"), std::string::npos) << err_of(pid);
  EXPECT_EQ(server_->counters().accepted, 0u);
}

TEST_F(WrapperTest, MissingProgramFailsLikeAShell) {
  pid_t missing = wrap({tmp_ + "/no-such-program"}, base_env());
  EXPECT_EQ(WEXITSTATUS(wait_for(missing)), 127);
  EXPECT_NE(err_of(missing).find("memgate: error: cannot run '" + tmp_ + "/no-such-program'"), std::string::npos);
  ASSERT_TRUE(write_file(tmp_ + "/not-executable", "x", true).ok());
  pid_t denied = wrap({tmp_ + "/not-executable"}, base_env());
  EXPECT_EQ(WEXITSTATUS(wait_for(denied)), 126);
  pid_t bare = wrap({"no-such-compiler-xyz"}, base_env());
  EXPECT_EQ(WEXITSTATUS(wait_for(bare)), 127);
  EXPECT_EQ(server_->counters().accepted, 0u);
  pid_t usage = spawn(MEMGATE_BINARY, {"memgate", "wrap"}, base_env());
  EXPECT_EQ(WEXITSTATUS(wait_for(usage)), 2);
}

TEST_F(WrapperTest, ExecFormRunsExactlyWhatTheInterceptedCallWould) {
  // `memgate-wrap exec PATH ARGV0 ARGS...` (from the preload library): the
  // file PATH runs with argv untouched, argv[0] included, and PATH as it was.
  make_script(real_ + "/clang++", "echo \"argv0=$0 args=$* job=$MEMGATE_JOB path=$PATH\"");
  Env env = base_env();
  env["PATH"] = "/opt/x:/usr/bin:/bin";
  pid_t pid = spawn(MEMGATE_WRAP_BINARY, {"memgate-wrap", "exec", real_ + "/clang++", "clang++", "-c", "a.cpp"}, env);
  int status = wait_for(pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << err_of(pid);
  EXPECT_EQ(out_of(pid), "argv0=" + real_ + "/clang++ args=-c a.cpp job=42 path=/opt/x:/usr/bin:/bin\n");
  auto requests = all<RequestMsg>();
  ASSERT_EQ(requests.size(), 1u);
  EXPECT_EQ(requests[0].argv, (std::vector<std::string>{"clang++", "-c", "a.cpp"}));
  EXPECT_EQ(requests[0].tool, "clang++");
  // A relative PATH is relative to the working directory, as for execve.
  make_script(tmp_ + "/local-cc", "exit 7");
  pid_t local = spawn(MEMGATE_WRAP_BINARY, {"memgate-wrap", "exec", "./local-cc", "cc"}, env);
  EXPECT_EQ(WEXITSTATUS(wait_for(local)), 7) << err_of(local);
  pid_t usage = spawn(MEMGATE_WRAP_BINARY, {"memgate-wrap", "exec", real_ + "/clang++"}, env);
  EXPECT_EQ(WEXITSTATUS(wait_for(usage)), 2);
}

TEST_F(WrapperTest, UngatedRunsCarryAJobMarkerSayingWhy) {
  // The program must not be sent back to the wrapper by the preload
  // library's start-up check, and the ungated detector reads the reason.
  make_script(real_ + "/g++", "echo \"job=$MEMGATE_JOB\"");
  Env env = base_env();
  pid_t probe = spawn(MEMGATE_WRAP_BINARY, {"memgate-wrap", "exec", real_ + "/g++", "g++", "--version"}, env);
  EXPECT_EQ(WEXITSTATUS(wait_for(probe)), 0);
  EXPECT_EQ(out_of(probe), "job=probe\n");
  env["MEMGATE_SOCKET"] = tmp_ + "/dead.sock";
  pid_t failopen = spawn(MEMGATE_WRAP_BINARY, {"memgate-wrap", "exec", real_ + "/g++", "g++", "-c", "a.cpp"}, env);
  EXPECT_EQ(WEXITSTATUS(wait_for(failopen)), 0);
  EXPECT_EQ(out_of(failopen), "job=ungated\n");
}

TEST_F(WrapperTest, CargoProbesPassStraightThrough) {
  make_script(real_ + "/rustc", "echo probe");
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"-vV"}, {"-", "--crate-name", "___", "--print=file-names", "--crate-type", "bin"}, {"--print", "cfg"}}) {
    std::vector<std::string> argv = {"memgate-wrap", "exec", real_ + "/rustc", "rustc"};
    argv.insert(argv.end(), args.begin(), args.end());
    pid_t pid = spawn(MEMGATE_WRAP_BINARY, argv, base_env());
    EXPECT_EQ(WEXITSTATUS(wait_for(pid)), 0) << err_of(pid);
  }
  EXPECT_EQ(server_->counters().accepted, 0u);
}

// Which granted cgroups the wrapper joins. Only dirs
// below a memory, freezer or cgroup2 mount, absolute, without '.' or '..'.
TEST(GrantPath, OnlyBelowACgroupMountAndNoDotDot) {
  using platform::CgroupMount;
  using platform::CgroupVersion;
  std::vector<CgroupMount> v1 = {
      {CgroupVersion::v1, "/", "/sys/fs/cgroup/memory", {"memory"}},
      {CgroupVersion::v1, "/", "/sys/fs/cgroup/freezer", {"freezer"}},
      {CgroupVersion::v1, "/", "/sys/fs/cgroup/cpu,cpuacct", {"cpu", "cpuacct"}},
  };
  std::vector<CgroupMount> v2 = {{CgroupVersion::v2, "/", "/sys/fs/cgroup", {}}};
  EXPECT_EQ(grant_path_problem("/sys/fs/cgroup/memory/memgate-1/job-1-1", v1), "");
  EXPECT_EQ(grant_path_problem("/sys/fs/cgroup/freezer/memgate-1/job-1-1", v1), "");
  EXPECT_EQ(grant_path_problem("/sys/fs/cgroup/user.slice/memgate-1/job-1-1", v2), "");
  for (const char* bad : {
           "/tmp/evil",                                        // not a cgroup at all
           "relative/job",                                     // not absolute
           "",                                                 //
           "/sys/fs/cgroup/memory",                            // the mount itself
           "/sys/fs/cgroup/memoryx/job",                       // a prefix, not a parent
           "/sys/fs/cgroup/memory/../../../../tmp/evil",       // climbs out
           "/sys/fs/cgroup/memory/a/./b",                      //
           "/sys/fs/cgroup/cpu,cpuacct/memgate-1/job-1-1",     // neither memory nor freezer
       }) {
    EXPECT_NE(grant_path_problem(bad, v1), "") << bad;
  }
  EXPECT_NE(grant_path_problem("/sys/fs/cgroup/../../tmp/x", v2), "");
  EXPECT_NE(grant_path_problem("/sys/fs/cgroup/memory/job", {}), "");  // no mounts known: nothing
}
