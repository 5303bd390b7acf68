// libmemgate-preload.so against every exec form it catches, in a sandbox:
// a copy of the library next to a fake memgate-wrap (a script logging how
// it was called, then running the program as the real one would, with
// MEMGATE_JOB set), fake compilers and tools that log that they ran, and
// tests/tools/exec_probe to make each call.
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "util/fs.hpp"
#include "support/temp_dir.hpp"

namespace {

using Env = std::map<std::string, std::string>;

class PreloadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    t_ = tmp_.path();
    ASSERT_EQ(::mkdir((t_ + "/lib").c_str(), 0755), 0);
    ASSERT_EQ(::mkdir((t_ + "/bin").c_str(), 0755), 0);
    lib_ = t_ + "/lib/libmemgate-preload.so";
    ASSERT_EQ(std::system(("cp " + std::string(MEMGATE_PRELOAD_LIBRARY) + " " + lib_).c_str()), 0);
    log_ = t_ + "/log";
    script(t_ + "/lib/memgate-wrap",
           "echo \"WRAP $*|LD_PRELOAD=${LD_PRELOAD-unset}|SOCKET=${MEMGATE_SOCKET-unset}|JOB=${MEMGATE_JOB-unset}\" >> " +
               log_ +
               "\n[ \"$1\" = exec ] || exit 99\nshift\npath=$1\nshift 2\nMEMGATE_JOB=1\nexport MEMGATE_JOB\nexec \"$path\" \"$@\"");
    for (const char* name : {"g++", "cc", "clang++", "tool", "mywrap"}) fake(name);
    script(t_ + "/bin/ccache", "echo \"RAN ccache $*|JOB=${MEMGATE_JOB-unset}\" >> " + log_ + "\n[ \"$1\" = -s ] || exec \"$@\"");
    script(t_ + "/bin/nvcc", "echo \"RAN nvcc $*|JOB=${MEMGATE_JOB-unset}\" >> " + log_ + "\ncc -E inner.c");
  }

  void script(const std::string& path, const std::string& body) {
    ASSERT_TRUE(memgate::write_file(path, "#!/bin/sh\n" + body + "\n", true).ok());
    ASSERT_EQ(::chmod(path.c_str(), 0755), 0);
  }
  void fake(const std::string& name) {
    script(t_ + "/bin/" + name, "echo \"RAN " + name + " $*|LD_PRELOAD=${LD_PRELOAD-unset}|JOB=${MEMGATE_JOB-unset}\" >> " + log_);
  }

  Env env() const {
    return {{"PATH", t_ + "/bin:/usr/bin:/bin"}, {"LD_PRELOAD", lib_}, {"MEMGATE_SOCKET", t_ + "/no-governor.sock"}};
  }

  // Runs `argv` with `e`, from this (unpreloaded) process; the exit code.
  int run(const std::vector<std::string>& argv, const Env& e, const std::string& exe = EXEC_PROBE_BINARY) {
    pid_t pid = ::fork();
    if (pid == 0) {
      int err = ::open((t_ + "/stderr").c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
      ::dup2(err, 2);
      if (::chdir(t_.c_str()) != 0) ::_exit(120);
      std::vector<std::string> kv;
      for (const auto& [k, v] : e) kv.push_back(k + "=" + v);
      std::vector<char*> a, ev;
      for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
      for (const auto& s : kv) ev.push_back(const_cast<char*>(s.c_str()));
      a.push_back(nullptr);
      ev.push_back(nullptr);
      ::execve(exe.c_str(), a.data(), ev.data());
      ::_exit(121);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  }
  int probe(const std::string& form, const std::string& file, std::vector<std::string> args, const Env& e,
            const std::string& env_how = "inherit") {
    std::vector<std::string> argv = {"exec_probe", "--env", env_how, form, file};
    argv.insert(argv.end(), args.begin(), args.end());
    return run(argv, e);
  }
  std::string log() const { return memgate::read_file(log_).value_or(""); }
  void clear_log() { ::unlink(log_.c_str()); }
  std::string errors() const { return memgate::read_file(t_ + "/stderr").value_or(""); }

  memgate::test::TempDir tmp_{"preload"};
  std::string t_, lib_, log_;
};

const std::vector<std::string> kPathForms = {"execvp", "execvpe", "execlp", "posix_spawnp", "vfork-execvp"};
const std::vector<std::string> kFileForms = {"execve", "execv",        "execl",      "execle",
                                             "posix_spawn", "vfork-execve", "fork-execv", "execveat"};

}  // namespace

TEST_F(PreloadTest, EveryFormRoutesACompilerThroughTheWrapperOnce) {
  for (const auto& form : kPathForms) {
    clear_log();
    EXPECT_EQ(probe(form, "g++", {"g++", "-c", "a.cpp"}, env()), 0) << form << errors();
    EXPECT_EQ(log(), "WRAP exec " + t_ + "/bin/g++ g++ -c a.cpp|LD_PRELOAD=" + lib_ + "|SOCKET=" + t_ +
                         "/no-governor.sock|JOB=unset\nRAN g++ -c a.cpp|LD_PRELOAD=" + lib_ + "|JOB=1\n")
        << form;
  }
  for (const auto& form : kFileForms) {
    clear_log();
    EXPECT_EQ(probe(form, t_ + "/bin/g++", {"g++", "-c", "a.cpp"}, env()), 0) << form << errors();
    EXPECT_EQ(log(), "WRAP exec " + t_ + "/bin/g++ g++ -c a.cpp|LD_PRELOAD=" + lib_ + "|SOCKET=" + t_ +
                         "/no-governor.sock|JOB=unset\nRAN g++ -c a.cpp|LD_PRELOAD=" + lib_ + "|JOB=1\n")
        << form;
  }
}

TEST_F(PreloadTest, OtherProgramsRunUntouched) {
  for (const auto& form : kPathForms) {
    clear_log();
    EXPECT_EQ(probe(form, "tool", {"tool", "x"}, env()), 0) << form << errors();
    EXPECT_EQ(log(), "RAN tool x|LD_PRELOAD=" + lib_ + "|JOB=unset\n") << form;
  }
  for (const auto& form : kFileForms) {
    clear_log();
    EXPECT_EQ(probe(form, t_ + "/bin/tool", {"tool", "x"}, env()), 0) << form << errors();
    EXPECT_EQ(log(), "RAN tool x|LD_PRELOAD=" + lib_ + "|JOB=unset\n") << form;
  }
}

TEST_F(PreloadTest, ArgvZeroIsKeptAndAPathSearchUsesTheCallersPath) {
  // The program is named by the file, not argv[0]; argv[0] goes through as it was.
  EXPECT_EQ(probe("execvp", "clang++", {"my-clang", "-c", "b.cpp"}, env()), 0) << errors();
  EXPECT_EQ(log().substr(0, log().find('|')), "WRAP exec " + t_ + "/bin/clang++ my-clang -c b.cpp");
  // execvpe searches the caller's PATH, not the one it hands on.
  clear_log();
  EXPECT_EQ(probe("execvpe", "g++", {"g++"}, env(), "scratch"), 0) << errors();
  EXPECT_EQ(log().substr(0, log().find('|')), "WRAP exec " + t_ + "/bin/g++ g++");
}

TEST_F(PreloadTest, NestedDisabledAndOutsideCallsPassThrough) {
  Env nested = env();
  nested["MEMGATE_JOB"] = "7";
  Env disabled = env();
  disabled["MEMGATE_DISABLE"] = "1";
  Env outside = env();
  outside.erase("MEMGATE_SOCKET");
  for (const Env& e : {nested, disabled, outside}) {
    clear_log();
    EXPECT_EQ(probe("execvp", "g++", {"g++", "-c", "a.cpp"}, e), 0) << errors();
    EXPECT_EQ(log().rfind("RAN g++ -c a.cpp", 0), 0u) << log();
    EXPECT_EQ(log().find("WRAP"), std::string::npos) << log();
  }
}

TEST_F(PreloadTest, OnlyTheOutermostCallOfAJobIsGated) {
  EXPECT_EQ(probe("execvp", "nvcc", {"nvcc", "-c", "k.cu"}, env()), 0) << errors();
  EXPECT_EQ(log(), "WRAP exec " + t_ + "/bin/nvcc nvcc -c k.cu|LD_PRELOAD=" + lib_ + "|SOCKET=" + t_ +
                       "/no-governor.sock|JOB=unset\nRAN nvcc -c k.cu|JOB=1\nRAN cc -E inner.c|LD_PRELOAD=" + lib_ +
                       "|JOB=1\n");
}

TEST_F(PreloadTest, AScratchEnvironmentGetsMemgatesVariablesBack) {
  // env -i, python's env={...}: both variables gone, so both come back,
  // for compilers (gated) and for other programs (still intercepted below).
  EXPECT_EQ(probe("posix_spawnp", "g++", {"g++", "-c", "a.cpp"}, env(), "scratch"), 0) << errors();
  EXPECT_EQ(log(), "WRAP exec " + t_ + "/bin/g++ g++ -c a.cpp|LD_PRELOAD=" + lib_ + "|SOCKET=" + t_ +
                       "/no-governor.sock|JOB=unset\nRAN g++ -c a.cpp|LD_PRELOAD=" + lib_ + "|JOB=1\n");
  clear_log();
  EXPECT_EQ(probe("execve", t_ + "/bin/tool", {"tool"}, env(), "scratch"), 0) << errors();
  EXPECT_EQ(log(), "RAN tool |LD_PRELOAD=" + lib_ + "|JOB=unset\n");
  // Inside a job, the job marker comes back too: nested stays nested.
  Env in_job = env();
  in_job["MEMGATE_JOB"] = "3";
  clear_log();
  EXPECT_EQ(probe("execvp", "g++", {"g++"}, in_job, "scratch"), 0) << errors();
  EXPECT_EQ(log(), "RAN g++ |LD_PRELOAD=" + lib_ + "|JOB=3\n");
}

TEST_F(PreloadTest, DroppingLdPreloadOnPurposeIsRespected) {
  // env -u LD_PRELOAD g++: MEMGATE_SOCKET stays, so this was a decision;
  // the compiler runs ungated (the runner's ungated detector names it).
  EXPECT_EQ(probe("execvpe", "g++", {"g++", "-c", "a.cpp"}, env(), "drop-preload"), 0) << errors();
  EXPECT_EQ(log(), "RAN g++ -c a.cpp|LD_PRELOAD=unset|JOB=unset\n");
}

TEST_F(PreloadTest, LaunchersInFrontOfACompilerAreOneJob) {
  EXPECT_EQ(probe("execvp", "ccache", {"ccache", "g++", "-c", "a.cpp"}, env()), 0) << errors();
  EXPECT_EQ(log(), "WRAP exec " + t_ + "/bin/ccache ccache g++ -c a.cpp|LD_PRELOAD=" + lib_ + "|SOCKET=" + t_ +
                       "/no-governor.sock|JOB=unset\nRAN ccache g++ -c a.cpp|JOB=1\nRAN g++ -c a.cpp|LD_PRELOAD=" +
                       lib_ + "|JOB=1\n");
  clear_log();
  EXPECT_EQ(probe("execvp", "ccache", {"ccache", "-s"}, env()), 0) << errors();
  EXPECT_EQ(log(), "RAN ccache -s|JOB=unset\n");
  // The user's own launcher, named by memgate run in MEMGATE_LAUNCHERS.
  clear_log();
  EXPECT_EQ(probe("execvp", "mywrap", {"mywrap", "cc", "-c", "a.c"}, env()), 0) << errors();
  EXPECT_EQ(log(), "RAN mywrap cc -c a.c|LD_PRELOAD=" + lib_ + "|JOB=unset\n");
  Env launchers = env();
  launchers["MEMGATE_LAUNCHERS"] = "other:mywrap";
  clear_log();
  EXPECT_EQ(probe("execvp", "mywrap", {"mywrap", "cc", "-c", "a.c"}, launchers), 0) << errors();
  EXPECT_EQ(log().rfind("WRAP exec " + t_ + "/bin/mywrap mywrap cc -c a.c|", 0), 0u) << log();
}

TEST_F(PreloadTest, ACallThatWouldFailStillFailsInTheCaller) {
  EXPECT_EQ(probe("execvp", "icpx", {"icpx", "-c", "a.c"}, env()), 127);
  EXPECT_NE(errors().find("exec_probe: execvp: No such file or directory"), std::string::npos) << errors();
  EXPECT_EQ(probe("execve", t_ + "/bin/no-such-gcc", {"gcc"}, env()), 127);
  EXPECT_EQ(probe("execve", "g++", {"g++"}, env()), 127);  // execve does not search PATH
  EXPECT_EQ(log(), "");
}

TEST_F(PreloadTest, WithoutItsWrapperTheCompilerRunsUngated) {
  ASSERT_EQ(::unlink((t_ + "/lib/memgate-wrap").c_str()), 0);
  for (const auto& form : {"execvp", "posix_spawnp", "vfork-execvp"}) {
    clear_log();
    EXPECT_EQ(probe(form, "g++", {"g++", "-c", "a.cpp"}, env()), 0) << form << errors();
    EXPECT_EQ(log(), "RAN g++ -c a.cpp|LD_PRELOAD=" + lib_ + "|JOB=unset\n") << form;
  }
}

TEST_F(PreloadTest, StartUpCheckCatchesCallsTheHooksCannotSee) {
  // The build command itself, started by memgate (which is not preloaded),
  // and fexecve (no file name to look at): a dynamically linked program
  // named like a compiler re-execs itself through the wrapper.
  char real[PATH_MAX];
  ASSERT_NE(::realpath("/bin/true", real), nullptr);
  EXPECT_EQ(run({"gcc", "--version"}, env(), "/bin/true"), 0) << errors();
  EXPECT_EQ(log().substr(0, log().find('|')), "WRAP exec " + std::string(real) + " gcc --version");
  clear_log();
  EXPECT_EQ(probe("fexecve", "/bin/true", {"g++", "-c", "x.cpp"}, env()), 0) << errors();
  EXPECT_EQ(log().substr(0, log().find('|')), "WRAP exec " + std::string(real) + " g++ -c x.cpp");
  // In a job it does nothing.
  clear_log();
  Env nested = env();
  nested["MEMGATE_JOB"] = "2";
  EXPECT_EQ(run({"gcc", "--version"}, nested, "/bin/true"), 0);
  EXPECT_EQ(log(), "");
}
