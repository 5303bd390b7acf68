// The real `memgate` binary as a wrapper (launcher form and shims), driven
// by a fake governor: a JobServer in this process with a scripted policy.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "util/fs.hpp"
#include "run/job_server.hpp"
#include "wrap/client.hpp"
#include "wrap/shims.hpp"

using namespace memgate;

namespace {

using Env = std::map<std::string, std::string>;

int count_of(const std::string& text, const std::string& needle) {
  int n = 0;
  for (auto pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

class WrapperTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/memgate-wrapper-test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    tmp_ = tmpl;
    auto s = JobServer::listen(sock());
    ASSERT_TRUE(s.ok()) << s.error();
    server_.emplace(std::move(s.value()));
    server_->on_message = [this](ConnId id, const Message& m) { on_message(id, m); };
    server_->on_closed = [this](ConnId id) { closed_.insert(id); };
    shims_ = tmp_ + "/shims";
    ASSERT_TRUE(ensure_shim_dir(shims_, MEMGATE_BINARY).ok());
    real_ = tmp_ + "/real";
    ASSERT_EQ(::mkdir(real_.c_str(), 0755), 0);
  }
  void TearDown() override {
    server_.reset();
    EXPECT_EQ(std::system(("rm -rf " + tmp_).c_str()), 0);
  }

  // The fake governor's policy: grant every request, say "rerun" to the
  // first `reruns_` exits, optionally hang up at a chosen moment.
  void on_message(ConnId id, const Message& m) {
    messages_.emplace_back(id, m);
    if (std::holds_alternative<RequestMsg>(m)) {
      if (hang_up_on_request_) return server_->close(id);
      grant(id);
    } else if (std::holds_alternative<StartedMsg>(m)) {
      if (hang_up_on_started_) server_->close(id);
    } else if (std::holds_alternative<ExitMsg>(m)) {
      if (no_verdicts_) return;
      bool rerun = reruns_ > 0;
      if (rerun) --reruns_;
      server_->send(id, VerdictMsg{rerun});
      if (rerun) grant(id);
    }
  }
  void grant(ConnId id) { server_->send(id, GrantMsg{42, ++attempts_[id], cgroups_, {}, false}); }

  std::string sock() const { return tmp_ + "/memgate.sock"; }
  Env base_env() const {
    return {{"PATH", "/usr/bin:/bin"}, {"HOME", tmp_}, {"MEMGATE_SOCKET", sock()}};
  }

  // Starts `exe` with `argv` (argv[0] as given) and `env`; stderr and
  // stdout go to files named after the returned pid.
  pid_t spawn(const std::string& exe, const std::vector<std::string>& argv, const Env& env) {
    pid_t pid = ::fork();
    if (pid != 0) return pid;
    std::string out = tmp_ + "/out." + std::to_string(::getpid()), err = tmp_ + "/err." + std::to_string(::getpid());
    int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644), e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    if (::chdir(tmp_.c_str()) != 0) ::_exit(120);
    std::vector<std::string> envs;
    for (const auto& [k, v] : env) envs.push_back(k + "=" + v);
    std::vector<char*> a, ev;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    for (const auto& s : envs) ev.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    ev.push_back(nullptr);
    ::execve(exe.c_str(), a.data(), ev.data());
    ::_exit(121);
  }
  pid_t wrap(const std::vector<std::string>& args, const Env& env) {
    std::vector<std::string> argv = {"memgate", "wrap", "--"};
    argv.insert(argv.end(), args.begin(), args.end());
    return spawn(MEMGATE_BINARY, argv, env);
  }

  // Serves the socket until `pid` exits (its pidfd is polled alongside the
  // server's fds); returns the raw wait status.
  int wait_for(pid_t pid, int timeout_ms = 30000) {
    int pidfd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    EXPECT_GE(pidfd, 0);
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    for (;;) {
      std::vector<pollfd> fds = {{pidfd, POLLIN, 0}};
      server_->append_pollfds(fds);
      if (::poll(fds.data(), fds.size(), 200) > 0) server_->handle_ready(fds);
      if (fds[0].revents & POLLIN) break;
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid, SIGKILL);
        ADD_FAILURE() << "wrapper " << pid << " did not finish";
        break;
      }
    }
    ::close(pidfd);
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
    // Let the server see the hang-ups and any last frames.
    std::vector<pollfd> fds;
    server_->append_pollfds(fds);
    if (!fds.empty() && ::poll(fds.data(), fds.size(), 0) > 0) server_->handle_ready(fds);
    return status;
  }
  // Serves until `done` holds.
  template <class Pred>
  bool serve_until(Pred done, int timeout_ms = 30000) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline) return false;
      std::vector<pollfd> fds;
      server_->append_pollfds(fds);
      if (::poll(fds.data(), fds.size(), 200) > 0) server_->handle_ready(fds);
    }
    return true;
  }
  std::string err_of(pid_t pid) { return read_file(tmp_ + "/err." + std::to_string(pid)).value_or(""); }
  std::string out_of(pid_t pid) { return read_file(tmp_ + "/out." + std::to_string(pid)).value_or(""); }

  template <class T>
  std::vector<T> all() const {
    std::vector<T> out;
    for (const auto& [id, m] : messages_)
      if (auto* p = std::get_if<T>(&m)) out.push_back(*p);
    return out;
  }

  void make_script(const std::string& path, const std::string& body) {
    ASSERT_TRUE(write_file(path, "#!/bin/sh\n" + body + "\n", true).ok());
    ASSERT_EQ(::chmod(path.c_str(), 0755), 0);
  }

  std::string tmp_, shims_, real_;
  std::optional<JobServer> server_;
  std::vector<std::pair<ConnId, Message>> messages_;
  std::set<ConnId> closed_;
  std::map<ConnId, int> attempts_;
  std::vector<std::string> cgroups_;
  int reruns_ = 0;
  bool hang_up_on_request_ = false, hang_up_on_started_ = false, no_verdicts_ = false;
};

}  // namespace

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
