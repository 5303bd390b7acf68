// Finding compilers that run in the build but outside every job
// (run/ungated.hpp), over a /proc tree written by the test.
#include "run/ungated.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "elf_bytes.hpp"
#include "util/fs.hpp"
#include "wrap/wrapper.hpp"
#include "support/temp_dir.hpp"

using namespace memgate;

namespace {

class UngatedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = tmp_.path();
    proc_ = root_ + "/proc";
    ASSERT_EQ(::mkdir(proc_.c_str(), 0755), 0);
    static_gcc_ = root_ + "/static-helper";  // not a compiler name itself
    ASSERT_TRUE(write_file(static_gcc_, test::tiny_elf(false), true).ok());
  }

  // One process: comm, state, parent, RSS in KiB, argv, environment, exe.
  void process(pid_t pid, const std::string& comm, char state, pid_t ppid, long rss_kib,
               const std::vector<std::string>& argv, const std::vector<std::string>& env, const std::string& exe) {
    std::string dir = proc_ + "/" + std::to_string(pid);
    ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
    std::string stat = std::to_string(pid) + " (" + comm + ") " + state + " " + std::to_string(ppid) +
                       " 1 1 0 -1 4194304 0 0 0 0 5 1 0 0 20 0 1 0 " + std::to_string(1000 + pid) + " 1000 " +
                       std::to_string(rss_kib / 4) + " 0 0\n";
    std::string status = "Name:\t" + comm + "\nState:\t" + state + " (x)\nPPid:\t" + std::to_string(ppid) +
                         "\nUid:\t0\t0\t0\t0\n" + (state == 'Z' ? "" : "VmRSS:\t" + std::to_string(rss_kib) + " kB\n");
    std::string cmdline, environ;
    for (const auto& a : argv) cmdline += a + '\0';
    for (const auto& e : env) environ += e + '\0';
    ASSERT_TRUE(write_file(dir + "/stat", stat, true).ok());
    ASSERT_TRUE(write_file(dir + "/status", status, true).ok());
    ASSERT_TRUE(write_file(dir + "/cmdline", cmdline, true).ok());
    ASSERT_TRUE(write_file(dir + "/environ", environ, true).ok());
    if (!exe.empty()) {
      ASSERT_EQ(::symlink(exe.c_str(), (dir + "/exe").c_str()), 0);
    }
  }

  const std::vector<std::string> kGated = {"LD_PRELOAD=/p/libexec/memgate/libmemgate-preload.so",
                                           "MEMGATE_SOCKET=/tmp/memgate-1/sock"};
  const std::vector<std::string> kNoPreload = {"MEMGATE_SOCKET=/tmp/memgate-1/sock", "PATH=/usr/bin"};
  test::TempDir tmp_{"ungated"};
  std::string root_, proc_, static_gcc_;
};

}  // namespace

TEST_F(UngatedTest, FindsTheTopmostCompilerOutsideJobsWithItsTreesMemory) {
  process(100, "make", 'S', 1, 2000, {"make", "-j4"}, kGated, "/usr/bin/make");
  process(101, "env", 'S', 100, 1000, {"env", "-u", "LD_PRELOAD", "g++", "-c", "a.cpp"}, kGated, "/usr/bin/env");
  process(102, "g++", 'S', 101, 4000, {"g++", "-c", "a.cpp", "-o", "a.o"}, kNoPreload, "/usr/bin/x86_64-linux-gnu-g++-12");
  process(103, "cc1plus", 'R', 102, 100000, {"/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus", "a.cpp"}, kNoPreload,
          "/usr/lib/gcc/x86_64-linux-gnu/12/cc1plus");
  process(104, "as", 'S', 102, 3000, {"as", "-o", "a.o"}, kNoPreload, "/usr/bin/x86_64-linux-gnu-as");
  auto found = find_ungated({100, 101, 102, 103, 104}, {}, proc_);
  ASSERT_EQ(found.size(), 1u);
  const auto& u = found[0];
  EXPECT_EQ(u.pid, 102);
  EXPECT_EQ(u.tool, "g++");
  EXPECT_EQ(u.exe, "/usr/bin/x86_64-linux-gnu-g++-12");
  EXPECT_EQ(u.parent, "/usr/bin/env");
  EXPECT_EQ(u.rss, (4000 + 100000 + 3000) * KiB);
  EXPECT_NE(u.how.find("/usr/bin/env started it with LD_PRELOAD removed"), std::string::npos) << u.how;
  EXPECT_EQ(u.argv, (std::vector<std::string>{"g++", "-c", "a.cpp", "-o", "a.o"}));
}

TEST_F(UngatedTest, JobsProbesZombiesExitingNestedCallsAndShimsAreNotReported) {
  process(100, "make", 'S', 1, 2000, {"make"}, kGated, "/usr/bin/make");
  process(110, "g++", 'S', 100, 5000, {"g++", "-c", "b.cpp"}, {"MEMGATE_JOB=4"}, "/usr/bin/g++-12");  // in a job
  process(111, "g++", 'S', 100, 3000, {"g++", "--version"}, {"MEMGATE_JOB=probe"}, "/usr/bin/g++-12");
  process(112, "g++", 'Z', 100, 0, {}, {}, "");
  process(113, "ld", 'S', 100, 9000, {"ld", "-o", "big"}, {"MEMGATE_JOB=ungated"}, "/usr/bin/ld.bfd");
  process(114, "collect2", 'S', 113, 1000, {"collect2"}, {}, "/usr/lib/gcc/collect2");
  process(115, "ld", 'S', 113, 500, {"ld", "-r"}, {}, "/usr/bin/ld.bfd");  // below 113: nested
  // A fallback PATH shim waiting for its grant: memgate-wrap named cc.
  process(116, "cc", 'S', 100, 2000, {"cc", "-c", "c.c"}, {}, "/opt/mg/libexec/memgate/memgate-wrap");
  // Exiting, not yet a zombie: no arguments, no environment (e2e run_sccache
  // once counted one as an escape of unknown cause).
  process(117, "gcc-12", 'R', 100, 4, {}, {}, "/usr/bin/x86_64-linux-gnu-gcc-12");
  auto found = find_ungated({100, 110, 111, 112, 113, 114, 115, 116, 117}, {110}, proc_);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].pid, 113);
  EXPECT_EQ(found[0].tool, "ld");
  EXPECT_EQ(found[0].rss, (9000 + 1000 + 500) * KiB);
  EXPECT_EQ(found[0].how, "its wrapper could not reach the governor and ran it ungated");
}

// The runner leaves the jobs' cgroups out of the build's processes, so a
// granted job's program is seen here only on its way in: a child of its
// connected wrapper (in `job_pids`), gated, not an escape.
TEST_F(UngatedTest, AConnectedWrappersChildIsGated) {
  process(100, "make", 'S', 1, 2000, {"make"}, kGated, "/usr/bin/make");
  process(130, "g++", 'S', 100, 2000, {"g++", "-c", "d.cpp"}, kGated, "/opt/mg/libexec/memgate/memgate-wrap");
  process(131, "g++", 'R', 130, 3000, {"g++", "-c", "d.cpp"}, {"MEMGATE_JOB=9"}, "/usr/bin/g++-12");
  process(140, "g++", 'R', 100, 3000, {"g++", "-c", "e.cpp"}, kNoPreload, "/usr/bin/g++-12");
  auto found = find_ungated({100, 130, 131, 140}, {130}, proc_);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].pid, 140) << "a compiler make started itself is still found";
}

// Past the open-file limit, thousands of wrappers wait to connect: each is
// known by its executable alone and listed, so the runner reads it again
// only now and then; one that gave up and ran its compiler is found.
TEST_F(UngatedTest, AWaitingWrapperIsListedAndOneThatRanItsCompilerIsFound) {
  process(100, "make", 'S', 1, 2000, {"make"}, kGated, "/usr/bin/make");
  process(150, "g++", 'S', 100, 2000, {"g++", "-c", "f.cpp"}, kGated, "/opt/mg/libexec/memgate/memgate-wrap");
  process(151, "g++", 'R', 100, 3000, {"g++", "-c", "g.cpp"}, {std::string("MEMGATE_JOB=") + kJobFailOpen},
          "/usr/bin/g++-12");
  std::vector<pid_t> wrappers;
  auto found = find_ungated({100, 150, 151}, {}, proc_, &wrappers);
  EXPECT_EQ(wrappers, std::vector<pid_t>{150});
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].pid, 151);
  EXPECT_EQ(found[0].how, "its wrapper could not reach the governor and ran it ungated");
}

// The runner's scan (UngatedScan): a waiting wrapper is read again only
// every kWrapperRecheck scans, so one that gave up and ran its compiler
// under the same pid is found within that many.
TEST_F(UngatedTest, TheScanRereadsAWaitingWrapperOnlyNowAndThen) {
  process(100, "make", 'S', 1, 2000, {"make"}, kGated, "/usr/bin/make");
  process(150, "g++", 'S', 100, 2000, {"g++", "-c", "f.cpp"}, kGated, "/opt/mg/libexec/memgate/memgate-wrap");
  UngatedScan scan(proc_);
  EXPECT_TRUE(scan.due(0));
  EXPECT_FALSE(scan.due(0.4));
  EXPECT_TRUE(scan.due(0.5));
  scan.scan({100, 150}, {}, 0);
  EXPECT_EQ(scan.found().count(), 0u);
  std::filesystem::remove_all(proc_ + "/150");
  process(150, "g++", 'R', 100, 3000, {"g++", "-c", "f.cpp"}, {std::string("MEMGATE_JOB=") + kJobFailOpen},
          "/usr/bin/g++-12");
  for (std::uint64_t i = 1; i < UngatedScan::kWrapperRecheck; ++i) {
    scan.scan({100, 150}, {}, static_cast<double>(i));
    EXPECT_EQ(scan.found().count(), 0u) << "scan " << i << " read the waiting wrapper again";
  }
  scan.scan({100, 150}, {}, 9);
  ASSERT_EQ(scan.found().count(), 1u);
  EXPECT_EQ(scan.found().entries()[0].process.pid, 150);
}

TEST_F(UngatedTest, WhenMemgateGatedNothingTheScanSaysSo) {
  process(100, "make", 'S', 1, 2000, {"make"}, kGated, "/usr/bin/make");
  process(140, "g++", 'R', 100, 3000, {"g++", "-c", "e.cpp"}, kNoPreload, "/usr/bin/g++-12");
  UngatedScan scan(proc_);
  scan.gated_nothing();
  scan.scan({100, 140}, {}, 0);
  ASSERT_EQ(scan.found().count(), 1u);
  EXPECT_EQ(scan.found().entries()[0].process.how, "memgate gated no compiler in this run (see degraded:)");
}

TEST_F(UngatedTest, AStaticCompilerIsNamedByItsExecutable) {
  process(100, "static-make", 'S', 1, 2000, {"make"}, kGated, "/opt/static-make");
  process(120, "cc", 'R', 100, 7000, {"/opt/tc/cc-wrapper", "-c", "x.c"}, kGated, static_gcc_);
  auto found = find_ungated({100, 120}, {}, proc_);
  ASSERT_EQ(found.size(), 0u);  // static-gcc is not a compiler name; cc-wrapper neither
  process(121, "gcc", 'R', 100, 7000, {"/opt/tc/gcc", "-c", "y.c"}, kGated, static_gcc_);
  found = find_ungated({100, 120, 121}, {}, proc_);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].tool, "gcc");
  EXPECT_NE(found[0].how.find("it is statically linked and /opt/static-make started it"), std::string::npos)
      << found[0].how;
}

TEST(UngatedReason, SaysHowEachKindEscaped) {
  using std::string;
  auto env = [](std::vector<string> v) {
    string s;
    for (auto& e : v) s += e + '\0';
    return s;
  };
  EXPECT_EQ(ungated_reason("", false, "make"), "its environment could not be read, so how it escaped is unknown");
  EXPECT_EQ(ungated_reason(env({"MEMGATE_DISABLE=1"}), false, "make"), "MEMGATE_DISABLE is set in its environment");
  EXPECT_NE(ungated_reason(env({"MEMGATE_JOB=12"}), false, "sccache").find("MEMGATE_JOB=12 but runs outside that job"),
            string::npos);
  EXPECT_EQ(ungated_reason(env({"PATH=/bin"}), false, "python3"),
            "python3 started it with none of memgate's variables in its environment");
  EXPECT_NE(ungated_reason(env({"LD_PRELOAD=/x/libmemgate-preload.so", "MEMGATE_SOCKET=/s"}), false, "go")
                .find("go started it in a way the preload library does not intercept"),
            string::npos);
}

TEST(UngatedTracker, KeepsEachProcessOnceWithItsPeak) {
  UngatedProcess a;
  a.pid = 10;
  a.starttime = 5;
  a.exe = "/usr/bin/x86_64-linux-gnu-g++-12";
  a.argv = {"g++", "-c", "a.cpp"};
  a.tool = "g++";
  a.how = "/usr/bin/env started it with LD_PRELOAD removed";
  a.rss = 100 * MiB;
  UngatedProcess b = a;
  b.pid = 11;
  b.rss = 50 * MiB;
  UngatedTracker t;
  t.observe({a}, 0.1);
  a.rss = 300 * MiB;
  t.observe({a, b}, 0.2);
  a.rss = 10 * MiB;
  t.observe({a}, 0.3);
  UngatedProcess reused = a;  // the same pid, another process
  reused.starttime = 99;
  t.observe({reused}, 0.4);
  ASSERT_EQ(t.count(), 3u);
  EXPECT_EQ(t.entries()[0].peak, 300 * MiB);
  EXPECT_EQ(t.entries()[0].last_seen_s, 0.3);
  EXPECT_EQ(t.peak_together(), 350 * MiB);
  auto lines = t.summary_lines(2);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0], "ungated: 3 compiler processes ran outside memgate's gate (peak 350 MiB together)");
  EXPECT_EQ(lines[1],
            "  /usr/bin/x86_64-linux-gnu-g++-12 (g++ -c a.cpp): peak 300 MiB; /usr/bin/env started it with LD_PRELOAD "
            "removed");
  EXPECT_EQ(lines[3], "  ... and 1 more");
  EXPECT_TRUE(UngatedTracker().summary_lines().empty());
}

TEST(UngatedLive, FindsARealCompilerProcessAndMeasuresIt) {
  // memjob started as "g++" without the preload library, holding 64 MiB.
  char tmpl[] = "/tmp/memgate-ungated-live.XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string dir = tmpl, ready = dir + "/ready";
  pid_t pid = ::fork();
  if (pid == 0) {
    const char* argv[] = {"g++", "--peak", "64M", "--forever", "--ready", ready.c_str(), nullptr};
    const char* envp[] = {"MEMGATE_SOCKET=/nowhere/sock", "PATH=/usr/bin:/bin", nullptr};
    ::execve(MEMJOB_BINARY, const_cast<char**>(argv), const_cast<char**>(envp));
    ::_exit(127);
  }
  for (int i = 0; i < 300 && !path_exists(ready); ++i) ::usleep(20000);
  auto found = find_ungated({pid}, {});
  auto in_job = find_ungated({pid}, {pid});
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  EXPECT_EQ(std::system(("rm -rf " + dir).c_str()), 0);
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].pid, pid);
  EXPECT_EQ(found[0].tool, "g++");
  EXPECT_EQ(found[0].exe, MEMJOB_BINARY);
  EXPECT_GE(found[0].rss, 60 * MiB);
  EXPECT_NE(found[0].how.find("started it with LD_PRELOAD removed"), std::string::npos) << found[0].how;
  EXPECT_TRUE(in_job.empty());  // inside a job: not reported
}
