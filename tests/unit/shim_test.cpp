#include "wrap/shims.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <string>

#include "util/fs.hpp"
#include "wrap/find_program.hpp"

using namespace memgate;

namespace {

const std::string kShim = "/home/u/.cache/memgate/shims";
const std::string kExe = "/opt/memgate/bin/memgate";

// A fake filesystem for injection_env: only these paths are executable.
InjectionInput input(std::map<std::string, std::string> env, std::set<std::string> executables = {},
                     int slots = 8) {
  InjectionInput in;
  in.env = std::move(env);
  in.shim_dir = kShim;
  in.memgate_exe = kExe;
  in.socket_path = "/run/user/1000/memgate-abc/memgate.sock";
  in.slots = slots;
  in.is_executable = [executables](const std::string& p) { return executables.count(p) > 0; };
  return in;
}

std::string value(const std::map<std::string, std::string>& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() ? "<absent>" : it->second;
}

class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/memgate-shim-test.XXXXXX";
    path_ = ::mkdtemp(tmpl);
  }
  ~TempDir() { (void)std::system(("rm -rf " + path_).c_str()); }
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return join_path(path_, name); }

 private:
  std::string path_;
};

void make_script(const std::string& path) {
  ASSERT_TRUE(write_file(path, "#!/bin/sh\nexit 0\n", true).ok());
  ASSERT_EQ(::chmod(path.c_str(), 0755), 0);
}

}  // namespace

TEST(Injection, PutsTheShimDirFirstInPathOnce) {
  auto out = injection_env(input({{"PATH", "/usr/bin:" + kShim + ":/bin:" + kShim}}));
  EXPECT_EQ(value(out, "PATH"), kShim + ":/usr/bin:/bin");
  auto again = injection_env(input({{"PATH", value(out, "PATH")}}));
  EXPECT_EQ(value(again, "PATH"), kShim + ":/usr/bin:/bin");
  auto unset = injection_env(input({}));
  EXPECT_EQ(value(unset, "PATH").rfind(kShim + ":", 0), 0u);
  EXPECT_NE(value(unset, "PATH").find("/usr/bin"), std::string::npos);
}

TEST(Injection, WithoutAShimDirLeavesPathAndCompilersAlone) {
  InjectionInput in = input({{"PATH", "/usr/bin:/bin"}});
  in.shim_dir.clear();
  auto out = injection_env(in);
  EXPECT_EQ(value(out, "PATH"), "<absent>");  // never ":/usr/bin" (cwd first)
  EXPECT_EQ(value(out, "CC"), "<absent>");
  EXPECT_EQ(value(out, "CXX"), "<absent>");
  EXPECT_EQ(value(out, "CMAKE_CXX_COMPILER_LAUNCHER"), kExe + ";wrap;--");
  EXPECT_EQ(value(out, "MEMGATE_SOCKET"), in.socket_path);
}

TEST(Injection, SetsTheSocketAndClearsAnInheritedJobMarker) {
  auto out = injection_env(input({{"PATH", "/usr/bin"}, {"MEMGATE_JOB", "12"}}));
  EXPECT_EQ(value(out, "MEMGATE_SOCKET"), "/run/user/1000/memgate-abc/memgate.sock");
  EXPECT_EQ(value(out, "MEMGATE_JOB"), "");  // empty: unset it
  EXPECT_EQ(value(injection_env(input({{"PATH", "/usr/bin"}})), "MEMGATE_JOB"), "<absent>");
}

TEST(Injection, PointsUnsetCcAndCxxAtTheShims) {
  auto out = injection_env(input({{"PATH", "/usr/bin"}}));
  EXPECT_EQ(value(out, "CC"), kShim + "/cc");
  EXPECT_EQ(value(out, "CXX"), kShim + "/c++");
  EXPECT_EQ(value(out, "CXX").find(' '), std::string::npos);  // torch's ABI check needs one path
  auto empty = injection_env(input({{"PATH", "/usr/bin"}, {"CC", ""}}));
  EXPECT_EQ(value(empty, "CC"), kShim + "/cc");
}

TEST(Injection, MapsBareShimNamesAndLeavesOtherCompilersAlone) {
  auto out = injection_env(input({{"PATH", "/usr/bin"}, {"CC", "clang"}, {"CXX", "clang++"}}));
  EXPECT_EQ(value(out, "CC"), kShim + "/clang");
  EXPECT_EQ(value(out, "CXX"), kShim + "/clang++");
  auto keep = injection_env(input({{"PATH", "/usr/bin"}, {"CC", "ccache gcc"}, {"CXX", "/usr/bin/g++-12"}}));
  EXPECT_EQ(value(keep, "CC"), "<absent>");
  EXPECT_EQ(value(keep, "CXX"), "<absent>");
  auto versioned = injection_env(input({{"PATH", "/usr/bin"}, {"CXX", "g++-12"}}));
  EXPECT_EQ(value(versioned, "CXX"), "<absent>");
}

TEST(Injection, WrapsTheNvccTorchWouldUseFromCudaHome) {
  auto out = injection_env(input({{"PATH", "/usr/bin"}, {"CUDA_HOME", "/opt/cuda-12"}},
                                 {"/opt/cuda-12/bin/nvcc", "/usr/local/cuda/bin/nvcc"}));
  EXPECT_EQ(value(out, "PYTORCH_NVCC"), kExe + " wrap /opt/cuda-12/bin/nvcc");
  EXPECT_EQ(value(out, "CUDA_HOME"), "<absent>");  // the user's stays
  auto cuda_path = injection_env(input({{"PATH", "/usr/bin"}, {"CUDA_PATH", "/opt/cuda-11"}},
                                       {"/opt/cuda-11/bin/nvcc"}));
  EXPECT_EQ(value(cuda_path, "PYTORCH_NVCC"), kExe + " wrap /opt/cuda-11/bin/nvcc");
}

TEST(Injection, FindsNvccInPathPastTheShimAndExportsItsHome) {
  auto out = injection_env(input({{"PATH", kShim + ":/usr/bin:/opt/cuda/bin"}},
                                 {kShim + "/nvcc", "/opt/cuda/bin/nvcc", "/usr/local/cuda/bin/nvcc"}));
  EXPECT_EQ(value(out, "PYTORCH_NVCC"), kExe + " wrap /opt/cuda/bin/nvcc");
  // torch would otherwise derive CUDA_HOME from `which nvcc`, now the shim.
  EXPECT_EQ(value(out, "CUDA_HOME"), "/opt/cuda");
}

TEST(Injection, FallsBackToUsrLocalCuda) {
  auto out = injection_env(input({{"PATH", "/usr/bin"}}, {"/usr/local/cuda/bin/nvcc"}));
  EXPECT_EQ(value(out, "PYTORCH_NVCC"), kExe + " wrap /usr/local/cuda/bin/nvcc");
  EXPECT_EQ(value(out, "CUDA_HOME"), "/usr/local/cuda");
}

TEST(Injection, PrefixesAUserPytorchNvccOnce) {
  auto out = injection_env(input({{"PATH", "/usr/bin"}, {"PYTORCH_NVCC", "ccache /opt/cuda/bin/nvcc"}},
                                 {"/usr/local/cuda/bin/nvcc"}));
  EXPECT_EQ(value(out, "PYTORCH_NVCC"), kExe + " wrap ccache /opt/cuda/bin/nvcc");
  auto nested = injection_env(input({{"PATH", "/usr/bin"}, {"PYTORCH_NVCC", value(out, "PYTORCH_NVCC")}}));
  EXPECT_EQ(value(nested, "PYTORCH_NVCC"), "<absent>");  // already ours: unchanged
}

TEST(Injection, UsesHipccForRocmAndNothingWhenAmbiguous) {
  auto rocm = injection_env(input({{"PATH", "/usr/bin:/opt/rocm/hip/bin"}}, {"/opt/rocm/hip/bin/hipcc"}));
  EXPECT_EQ(value(rocm, "PYTORCH_NVCC"), kExe + " wrap /opt/rocm/hip/bin/hipcc");
  EXPECT_EQ(value(rocm, "ROCM_HOME"), "/opt/rocm");
  auto both = injection_env(input({{"PATH", "/usr/bin"}}, {"/usr/local/cuda/bin/nvcc", "/opt/rocm/bin/hipcc"}));
  EXPECT_EQ(value(both, "PYTORCH_NVCC"), "<absent>");
  auto none = injection_env(input({{"PATH", "/usr/bin"}}));
  EXPECT_EQ(value(none, "PYTORCH_NVCC"), "<absent>");
  EXPECT_EQ(value(none, "CUDA_HOME"), "<absent>");
}

TEST(Injection, ComposesCmakeLaunchersInFront) {
  auto out = injection_env(input({{"PATH", "/usr/bin"}, {"CMAKE_CXX_COMPILER_LAUNCHER", "ccache"}}));
  EXPECT_EQ(value(out, "CMAKE_C_COMPILER_LAUNCHER"), kExe + ";wrap;--");
  EXPECT_EQ(value(out, "CMAKE_CXX_COMPILER_LAUNCHER"), kExe + ";wrap;--;ccache");
  EXPECT_EQ(value(out, "CMAKE_CUDA_COMPILER_LAUNCHER"), kExe + ";wrap;--");
  EXPECT_EQ(value(out, "CMAKE_HIP_COMPILER_LAUNCHER"), kExe + ";wrap;--");
  auto nested = injection_env(input({{"PATH", "/usr/bin"}, {"CMAKE_C_COMPILER_LAUNCHER", kExe + ";wrap;--;sccache"}}));
  EXPECT_EQ(value(nested, "CMAKE_C_COMPILER_LAUNCHER"), kExe + ";wrap;--;sccache");
}

TEST(Injection, MaxJobsIsTwiceTheSlotsBoundedAndTheUsersWins) {
  EXPECT_EQ(value(injection_env(input({{"PATH", "/usr/bin"}}, {}, 1)), "MAX_JOBS"), "8");
  EXPECT_EQ(value(injection_env(input({{"PATH", "/usr/bin"}}, {}, 16)), "MAX_JOBS"), "32");
  EXPECT_EQ(value(injection_env(input({{"PATH", "/usr/bin"}}, {}, 128)), "MAX_JOBS"), "256");
  EXPECT_EQ(value(injection_env(input({{"PATH", "/usr/bin"}}, {}, 1000)), "MAX_JOBS"), "256");
  EXPECT_EQ(value(injection_env(input({{"PATH", "/usr/bin"}, {"MAX_JOBS", "4"}}, {}, 16)), "MAX_JOBS"), "<absent>");
}

TEST(Injection, ApplyEnvironmentSetsAndUnsets) {
  ::setenv("MEMGATE_TEST_GONE", "x", 1);
  apply_environment({{"MEMGATE_TEST_SET", "v1"}, {"MEMGATE_TEST_GONE", ""}});
  EXPECT_STREQ(std::getenv("MEMGATE_TEST_SET"), "v1");
  EXPECT_EQ(std::getenv("MEMGATE_TEST_GONE"), nullptr);
  EXPECT_EQ(current_environment()["MEMGATE_TEST_SET"], "v1");
  ::unsetenv("MEMGATE_TEST_SET");
}

TEST(ShimDir, DefaultIsPerUserCache) {
  const char* old = std::getenv("XDG_CACHE_HOME");
  std::string saved = old ? old : "";
  ::setenv("XDG_CACHE_HOME", "/x/cache", 1);
  EXPECT_EQ(default_shim_dir(), "/x/cache/memgate/shims");
  ::unsetenv("XDG_CACHE_HOME");
  EXPECT_NE(default_shim_dir().find("/.cache/memgate/shims"), std::string::npos);
  if (old) ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
}

TEST(ShimDir, CreatesMarkedPrivateDirOfSymlinks) {
  TempDir t;
  std::string dir = t / "cache/memgate/shims";
  auto r = ensure_shim_dir(dir, MEMGATE_BINARY);
  ASSERT_TRUE(r.ok()) << r.error();
  struct stat st;
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0700u);
  EXPECT_TRUE(is_shim_dir(dir));
  for (auto name : kShimNames) {
    char buf[4096];
    ssize_t n = ::readlink(join_path(dir, name).c_str(), buf, sizeof buf);
    ASSERT_GT(n, 0) << name;
    EXPECT_EQ(std::string(buf, static_cast<std::size_t>(n)), MEMGATE_BINARY);
  }
  // A stale link (an older memgate) is replaced; a second call is a no-op.
  ASSERT_EQ(::unlink(join_path(dir, "g++").c_str()), 0);
  ASSERT_EQ(::symlink("/old/memgate", join_path(dir, "g++").c_str()), 0);
  ASSERT_TRUE(ensure_shim_dir(dir, MEMGATE_BINARY).ok());
  EXPECT_EQ(file_id(join_path(dir, "g++")), file_id(MEMGATE_BINARY));
  EXPECT_FALSE(ensure_shim_dir("relative/dir", MEMGATE_BINARY).ok());
}

TEST(ShimDir, RefusesADirectoryOthersCanWrite) {
  TempDir t;
  std::string dir = t / "shims";
  ASSERT_EQ(::mkdir(dir.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(dir.c_str(), 0777), 0);
  auto r = ensure_shim_dir(dir, MEMGATE_BINARY);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("writable by others"), std::string::npos);
}

TEST(ShimDir, ConcurrentRunsLeaveEveryLinkValid) {
  TempDir t;
  std::string dir = t / "shims";
  std::string exe_a = t / "memgate-a", exe_b = t / "memgate-b";
  std::vector<pid_t> kids;
  for (int k = 0; k < 4; ++k) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      for (int i = 0; i < 40; ++i)
        if (!ensure_shim_dir(dir, (i + k) % 2 ? exe_a : exe_b).ok()) ::_exit(1);
      ::_exit(0);
    }
    kids.push_back(pid);
  }
  for (pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  for (auto name : kShimNames) {
    char buf[4096];
    ssize_t n = ::readlink(join_path(dir, name).c_str(), buf, sizeof buf);
    ASSERT_GT(n, 0) << name;
    std::string target(buf, static_cast<std::size_t>(n));
    EXPECT_TRUE(target == exe_a || target == exe_b) << target;
  }
  std::string listing;
  auto out = ::popen(("ls -A " + dir).c_str(), "r");
  char line[256];
  while (std::fgets(line, sizeof line, out)) listing += line;
  ::pclose(out);
  EXPECT_EQ(listing.find(".tmp"), std::string::npos) << listing;
}

TEST(FindProgram, SkipsShimDirsHoweverTheyAreSpelled) {
  TempDir t;
  std::string shims = t / "shims", real = t / "real", link = t / "link-to-shims";
  ASSERT_TRUE(ensure_shim_dir(shims, MEMGATE_BINARY).ok());
  ASSERT_EQ(::mkdir(real.c_str(), 0755), 0);
  make_script(real + "/g++");
  ASSERT_EQ(::symlink(shims.c_str(), link.c_str()), 0);
  std::string path = shims + ":" + link + ":" + shims + "/:" + real;
  auto found = find_program("g++", path, std::nullopt);
  ASSERT_TRUE(found);
  EXPECT_EQ(*found, real + "/g++");
  EXPECT_FALSE(find_program("clang++", path, std::nullopt));
  EXPECT_FALSE(find_program("", path, std::nullopt));
  EXPECT_FALSE(find_program("a/g++", path, std::nullopt));
}

TEST(FindProgram, SkipsMemgateItselfInAnUnmarkedDir) {
  TempDir t;
  std::string own = t / "own", real = t / "real";
  ASSERT_EQ(::mkdir(own.c_str(), 0755), 0);
  ASSERT_EQ(::mkdir(real.c_str(), 0755), 0);
  ASSERT_EQ(::symlink(MEMGATE_BINARY, (own + "/gcc").c_str()), 0);  // a hand-made shim, no marker
  ASSERT_TRUE(write_file(real + "/gcc", "not executable", true).ok());
  auto self = file_id(MEMGATE_BINARY);
  EXPECT_FALSE(find_program("gcc", own + ":" + real, self));  // only itself and a non-executable
  make_script(real + "/gcc");
  EXPECT_EQ(find_program("gcc", own + ":" + real, self), real + "/gcc");
  EXPECT_EQ(find_program("gcc", own + ":" + real, std::nullopt), own + "/gcc");
}

TEST(FindProgram, PathWithoutShimsKeepsEverythingElse) {
  TempDir t;
  std::string shims = t / "shims", link = t / "alias";
  ASSERT_TRUE(ensure_shim_dir(shims, MEMGATE_BINARY).ok());
  ASSERT_EQ(::symlink(shims.c_str(), link.c_str()), 0);
  EXPECT_EQ(path_without_shims(shims + ":/usr/bin::" + link + ":/bin:" + shims), "/usr/bin::/bin");
  EXPECT_EQ(path_without_shims("/usr/bin:/bin"), "/usr/bin:/bin");
}

TEST(ShimNames, AreTheCompilerDrivers) {
  for (auto n : {"cc", "c++", "gcc", "g++", "clang", "clang++", "nvcc", "hipcc"}) EXPECT_TRUE(is_shim_name(n)) << n;
  for (auto n : {"ld", "memgate", "g++-12", "ccache", ""}) EXPECT_FALSE(is_shim_name(n)) << n;
}
