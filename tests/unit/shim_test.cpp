#include "wrap/shims.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <string>

#include "elf_bytes.hpp"
#include "util/fs.hpp"
#include "wrap/find_program.hpp"
#include "support/temp_dir.hpp"

using namespace memgate;

namespace {

const std::string kShim = "/home/u/.cache/memgate/shims";
const std::string kExe = "/opt/memgate/bin/memgate";

const std::string kLib = "/opt/memgate/libexec/memgate/libmemgate-preload.so";

// A fake filesystem for injection_env: only these paths are executable.
// The fallback (shims) unless a preload library is given.
InjectionInput input(std::map<std::string, std::string> env, std::set<std::string> executables = {},
                     int slots = 8, std::string preload = "") {
  InjectionInput in;
  in.env = std::move(env);
  in.shim_dir = kShim;
  in.memgate_exe = kExe;
  in.socket_path = "/run/user/1000/memgate-abc/memgate.sock";
  in.slots = slots;
  in.is_executable = [executables](const std::string& p) { return executables.count(p) > 0; };
  in.preload_lib = preload;
  return in;
}

InjectionInput preload_input(std::map<std::string, std::string> env) { return input(std::move(env), {}, 8, kLib); }

std::string value(const std::map<std::string, std::string>& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() ? "<absent>" : it->second;
}

struct TempDir : test::TempDir {
  TempDir() : test::TempDir("shim") {}
};

void make_script(const std::string& path) {
  ASSERT_TRUE(write_file(path, "#!/bin/sh\nexit 0\n", true).ok());
  ASSERT_EQ(::chmod(path.c_str(), 0755), 0);
}

}  // namespace

TEST(FallbackInjection, PutsTheShimDirFirstInPathOnce) {
  auto out = injection_env(input({{"PATH", "/usr/bin:" + kShim + ":/bin:" + kShim}}));
  EXPECT_EQ(value(out, "PATH"), kShim + ":/usr/bin:/bin");
  auto again = injection_env(input({{"PATH", value(out, "PATH")}}));
  EXPECT_EQ(value(again, "PATH"), kShim + ":/usr/bin:/bin");
  auto unset = injection_env(input({}));
  EXPECT_EQ(value(unset, "PATH").rfind(kShim + ":", 0), 0u);
  EXPECT_NE(value(unset, "PATH").find("/usr/bin"), std::string::npos);
}

TEST(FallbackInjection, WithoutAShimDirLeavesPathAndCompilersAlone) {
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

TEST(FallbackInjection, PointsUnsetCcAndCxxAtTheShims) {
  auto out = injection_env(input({{"PATH", "/usr/bin"}}));
  EXPECT_EQ(value(out, "CC"), kShim + "/cc");
  EXPECT_EQ(value(out, "CXX"), kShim + "/c++");
  EXPECT_EQ(value(out, "CXX").find(' '), std::string::npos);  // torch's ABI check needs one path
  auto empty = injection_env(input({{"PATH", "/usr/bin"}, {"CC", ""}}));
  EXPECT_EQ(value(empty, "CC"), kShim + "/cc");
}

TEST(FallbackInjection, MapsBareShimNamesAndLeavesOtherCompilersAlone) {
  auto out = injection_env(input({{"PATH", "/usr/bin"}, {"CC", "clang"}, {"CXX", "clang++"}}));
  EXPECT_EQ(value(out, "CC"), kShim + "/clang");
  EXPECT_EQ(value(out, "CXX"), kShim + "/clang++");
  auto keep = injection_env(input({{"PATH", "/usr/bin"}, {"CC", "ccache gcc"}, {"CXX", "/usr/bin/g++-12"}}));
  EXPECT_EQ(value(keep, "CC"), "<absent>");
  EXPECT_EQ(value(keep, "CXX"), "<absent>");
  auto versioned = injection_env(input({{"PATH", "/usr/bin"}, {"CXX", "g++-12"}}));
  EXPECT_EQ(value(versioned, "CXX"), "<absent>");
}

TEST(FallbackInjection, WrapsTheNvccTorchWouldUseFromCudaHome) {
  auto out = injection_env(input({{"PATH", "/usr/bin"}, {"CUDA_HOME", "/opt/cuda-12"}},
                                 {"/opt/cuda-12/bin/nvcc", "/usr/local/cuda/bin/nvcc"}));
  EXPECT_EQ(value(out, "PYTORCH_NVCC"), kExe + " wrap /opt/cuda-12/bin/nvcc");
  EXPECT_EQ(value(out, "CUDA_HOME"), "<absent>");  // the user's stays
  auto cuda_path = injection_env(input({{"PATH", "/usr/bin"}, {"CUDA_PATH", "/opt/cuda-11"}},
                                       {"/opt/cuda-11/bin/nvcc"}));
  EXPECT_EQ(value(cuda_path, "PYTORCH_NVCC"), kExe + " wrap /opt/cuda-11/bin/nvcc");
}

TEST(FallbackInjection, FindsNvccInPathPastTheShimAndExportsItsHome) {
  auto out = injection_env(input({{"PATH", kShim + ":/usr/bin:/opt/cuda/bin"}},
                                 {kShim + "/nvcc", "/opt/cuda/bin/nvcc", "/usr/local/cuda/bin/nvcc"}));
  EXPECT_EQ(value(out, "PYTORCH_NVCC"), kExe + " wrap /opt/cuda/bin/nvcc");
  // torch would otherwise derive CUDA_HOME from `which nvcc`, now the shim.
  EXPECT_EQ(value(out, "CUDA_HOME"), "/opt/cuda");
}

TEST(FallbackInjection, FallsBackToUsrLocalCuda) {
  auto out = injection_env(input({{"PATH", "/usr/bin"}}, {"/usr/local/cuda/bin/nvcc"}));
  EXPECT_EQ(value(out, "PYTORCH_NVCC"), kExe + " wrap /usr/local/cuda/bin/nvcc");
  EXPECT_EQ(value(out, "CUDA_HOME"), "/usr/local/cuda");
}

TEST(FallbackInjection, PrefixesAUserPytorchNvccOnce) {
  auto out = injection_env(input({{"PATH", "/usr/bin"}, {"PYTORCH_NVCC", "ccache /opt/cuda/bin/nvcc"}},
                                 {"/usr/local/cuda/bin/nvcc"}));
  EXPECT_EQ(value(out, "PYTORCH_NVCC"), kExe + " wrap ccache /opt/cuda/bin/nvcc");
  auto nested = injection_env(input({{"PATH", "/usr/bin"}, {"PYTORCH_NVCC", value(out, "PYTORCH_NVCC")}}));
  EXPECT_EQ(value(nested, "PYTORCH_NVCC"), "<absent>");  // already ours: unchanged
}

TEST(FallbackInjection, UsesHipccForRocmAndNothingWhenAmbiguous) {
  auto rocm = injection_env(input({{"PATH", "/usr/bin:/opt/rocm/hip/bin"}}, {"/opt/rocm/hip/bin/hipcc"}));
  EXPECT_EQ(value(rocm, "PYTORCH_NVCC"), kExe + " wrap /opt/rocm/hip/bin/hipcc");
  EXPECT_EQ(value(rocm, "ROCM_HOME"), "/opt/rocm");
  auto both = injection_env(input({{"PATH", "/usr/bin"}}, {"/usr/local/cuda/bin/nvcc", "/opt/rocm/bin/hipcc"}));
  EXPECT_EQ(value(both, "PYTORCH_NVCC"), "<absent>");
  auto none = injection_env(input({{"PATH", "/usr/bin"}}));
  EXPECT_EQ(value(none, "PYTORCH_NVCC"), "<absent>");
  EXPECT_EQ(value(none, "CUDA_HOME"), "<absent>");
}

TEST(FallbackInjection, ComposesCmakeLaunchersInFront) {
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

TEST(Injection, PreloadingTouchesNoCompilerVariables) {
  auto out = injection_env(preload_input({{"PATH", "/usr/bin:/bin"}, {"CC", "gcc-12"}}));
  EXPECT_EQ(value(out, "LD_PRELOAD"), kLib);
  EXPECT_EQ(value(out, "MEMGATE_SOCKET"), "/run/user/1000/memgate-abc/memgate.sock");
  EXPECT_EQ(value(out, "MAX_JOBS"), "16");
  for (const char* var : {"PATH", "CC", "CXX", "PYTORCH_NVCC", "CUDA_HOME", "CMAKE_C_COMPILER_LAUNCHER",
                          "CMAKE_CXX_COMPILER_LAUNCHER", "CMAKE_CUDA_COMPILER_LAUNCHER", "MEMGATE_LAUNCHERS"})
    EXPECT_EQ(value(out, var), "<absent>") << var;
  EXPECT_EQ(out.size(), 3u);
  EXPECT_EQ(choose_interception(preload_input({})).mechanism, Mechanism::preload);
  EXPECT_EQ(interception_note(choose_interception(preload_input({})), true), "");
}

TEST(Injection, LdPreloadGoesInFrontOfTheUsersAndReplacesAnOuterCopy) {
  auto out = injection_env(preload_input({{"LD_PRELOAD", "/usr/lib/libfoo.so libbar.so"}}));
  EXPECT_EQ(value(out, "LD_PRELOAD"), kLib + ":/usr/lib/libfoo.so:libbar.so");
  auto nested = injection_env(
      preload_input({{"LD_PRELOAD", "/old/libexec/memgate/libmemgate-preload.so:/usr/lib/libfoo.so"}}));
  EXPECT_EQ(value(nested, "LD_PRELOAD"), kLib + ":/usr/lib/libfoo.so");
}

TEST(Injection, NamesTheUsersOwnLaunchersForTheLibrary) {
  auto out = injection_env(preload_input({{"CC", "/opt/bin/mywrap gcc"},
                                          {"CXX", "ccache g++"},
                                          {"CMAKE_CXX_COMPILER_LAUNCHER", "/usr/local/bin/buildwrap;--flag"},
                                          {"CMAKE_C_COMPILER_LAUNCHER", "ccache"},
                                          {"RUSTC_WRAPPER", "/opt/rw"},
                                          {"PYTORCH_NVCC", "env X=1 /usr/local/cuda/bin/nvcc"}}));
  EXPECT_EQ(value(out, "MEMGATE_LAUNCHERS"), "mywrap:env:buildwrap:rw");
  // The user's variables themselves are left as they are.
  EXPECT_EQ(value(out, "CC"), "<absent>");
  EXPECT_EQ(value(out, "CMAKE_CXX_COMPILER_LAUNCHER"), "<absent>");
  EXPECT_EQ(value(injection_env(preload_input({{"CC", "gcc"}, {"CXX", "ccache g++"}})), "MEMGATE_LAUNCHERS"), "<absent>");
}

TEST(Injection, NoPreloadFallsBackToShimsAndSaysWhy) {
  auto in = preload_input({{"PATH", "/usr/bin"}, {"MEMGATE_NO_PRELOAD", "1"},
                           {"LD_PRELOAD", "/x/libmemgate-preload.so /usr/lib/libfoo.so"}});
  auto how = choose_interception(in);
  EXPECT_EQ(how.mechanism, Mechanism::shims);
  EXPECT_EQ(interception_note(how, true), "compilers gated by PATH shims only (MEMGATE_NO_PRELOAD is set)");
  EXPECT_EQ(interception_note(how, false),
            "compilers not gated: MEMGATE_NO_PRELOAD is set, and there is no usable shim directory");
  auto out = injection_env(in);
  EXPECT_EQ(value(out, "PATH"), kShim + ":/usr/bin");
  EXPECT_EQ(value(out, "CC"), kShim + "/cc");
  EXPECT_EQ(value(out, "LD_PRELOAD"), "/usr/lib/libfoo.so");  // an outer run's library goes too
  EXPECT_EQ(value(injection_env(input({{"PATH", "/usr/bin"}})), "LD_PRELOAD"), "<absent>");
}

// memgate's parts are not safe to hand on (wrap/parts.hpp, trusted_parts):
// nothing of memgate's goes into the build, not even launcher variables
// naming its wrapper, and an outer run's library leaves LD_PRELOAD too.
TEST(Injection, UntrustedPartsMeanNothingIsInjected) {
  auto in = preload_input({{"PATH", "/usr/bin"}, {"LD_PRELOAD", "/x/libmemgate-preload.so"}});
  in.untrusted_parts = "/opt/mg/libexec/memgate: it is writable by group or others";
  auto how = choose_interception(in);
  EXPECT_EQ(how.mechanism, Mechanism::none);
  EXPECT_EQ(interception_note(how, false),
            "compilers not gated: memgate's parts are not safe to use (/opt/mg/libexec/memgate: it is writable by "
            "group or others)");
  auto out = injection_env(in);
  for (const char* var : {"PATH", "CC", "CXX", "PYTORCH_NVCC", "CMAKE_CXX_COMPILER_LAUNCHER", "MEMGATE_LAUNCHERS"})
    EXPECT_EQ(value(out, var), "<absent>") << var;
  EXPECT_EQ(value(out, "LD_PRELOAD"), "");
}

TEST(Injection, NoLibraryOrAPathLdPreloadCannotCarryMeansShims) {
  auto none = choose_interception(input({}));
  EXPECT_EQ(none.mechanism, Mechanism::shims);
  EXPECT_EQ(none.reason, "this memgate has no libmemgate-preload.so");
  auto spaced = choose_interception(input({}, {}, 8, "/opt/my tools/libmemgate-preload.so"));
  EXPECT_EQ(spaced.mechanism, Mechanism::shims);
  EXPECT_NE(spaced.reason.find("space or a colon"), std::string::npos);
}

TEST(Injection, AStaticBuildToolGetsShimsToo) {
  TempDir t;
  std::string tool = t / "static-make";
  ASSERT_TRUE(write_file(tool, test::tiny_elf(false), true).ok());
  ASSERT_EQ(::chmod(tool.c_str(), 0755), 0);
  auto in = preload_input({{"PATH", t.path() + ":/usr/bin"}});
  in.is_executable = {};
  in.command = {"static-make", "-j8"};
  auto how = choose_interception(in);
  EXPECT_EQ(how.mechanism, Mechanism::preload_and_shims);
  EXPECT_EQ(how.preload_lib, kLib);
  EXPECT_NE(interception_note(how, true).find("the build command " + tool + " is statically linked"),
            std::string::npos)
      << interception_note(how, true);
  auto out = injection_env(in);
  EXPECT_EQ(value(out, "LD_PRELOAD"), kLib);
  EXPECT_EQ(value(out, "PATH").rfind(kShim + ":", 0), 0u);
  // A script is judged by its interpreter.
  std::string script = t / "build.sh";
  ASSERT_TRUE(write_file(script, "#!" + tool + " -f\n", true).ok());
  ASSERT_EQ(::chmod(script.c_str(), 0755), 0);
  in.command = {script};
  EXPECT_EQ(choose_interception(in).mechanism, Mechanism::preload_and_shims);
  in.command = {"/bin/sh", "-c", "make"};
  EXPECT_EQ(choose_interception(in).mechanism, Mechanism::preload);
  in.command = {"no-such-build-tool"};
  EXPECT_EQ(choose_interception(in).mechanism, Mechanism::preload);
}

TEST(Injection, ASetuidBuildToolGetsShimsOnly) {
  TempDir t;
  std::string tool = t / "suid-make";
  ASSERT_TRUE(write_file(tool, test::tiny_elf(true), true).ok());
  ASSERT_EQ(::chown(tool.c_str(), 65534, 65534), 0);
  ASSERT_EQ(::chmod(tool.c_str(), 04755), 0);
  auto in = preload_input({{"PATH", "/usr/bin"}});
  in.is_executable = {};
  in.command = {tool};
  auto how = choose_interception(in);
  EXPECT_EQ(how.mechanism, Mechanism::shims);
  EXPECT_NE(how.reason.find("setuid"), std::string::npos) << how.reason;
  EXPECT_EQ(value(injection_env(in), "LD_PRELOAD"), "<absent>");
  // Our own setuid file changes no uid: the loader preloads as usual.
  ASSERT_EQ(::chown(tool.c_str(), ::geteuid(), ::getegid()), 0);
  ASSERT_EQ(::chmod(tool.c_str(), 04755), 0);
  EXPECT_EQ(choose_interception(in).mechanism, Mechanism::preload);
}

TEST(Injection, ApplyEnvironmentSetsAndUnsets) {
  ::setenv("MEMGATE_TEST_GONE", "x", 1);
  apply_environment({{"MEMGATE_TEST_SET", "v1"}, {"MEMGATE_TEST_GONE", ""}});
  EXPECT_STREQ(std::getenv("MEMGATE_TEST_SET"), "v1");
  EXPECT_EQ(std::getenv("MEMGATE_TEST_GONE"), nullptr);
  EXPECT_EQ(current_environment()["MEMGATE_TEST_SET"], "v1");
  ::unsetenv("MEMGATE_TEST_SET");
}

TEST(ShimDir, DefaultIsThisCopysOwnNextToItsWrapper) {
  // The test binary sits in the build tree beside memgate-wrap: its parts
  // are the build tree's, whatever XDG_CACHE_HOME says.
  const char* old = std::getenv("XDG_CACHE_HOME");
  std::string saved = old ? old : "";
  ::setenv("XDG_CACHE_HOME", "/x/cache", 1);
  std::string build = MEMGATE_WRAP_BINARY;
  build.resize(build.find_last_of('/'));
  EXPECT_EQ(default_shim_dir(), build + "/shims");
  if (old) ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  else ::unsetenv("XDG_CACHE_HOME");
}

TEST(ShimDir, CreatesMarkedDirOfSymlinksNobodyElseCanWrite) {
  TempDir t;
  std::string dir = t / "cache/memgate/shims";
  auto r = ensure_shim_dir(dir, MEMGATE_BINARY);
  ASSERT_TRUE(r.ok()) << r.error();
  struct stat st;
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 022, 0u);
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
  EXPECT_NE(r.error().find("writable by group or others"), std::string::npos) << r.error();
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

TEST(ShimDir, RefusesAWritableAncestor) {
  // Another user who can write any directory above the shims could swap
  // the whole subtree and choose what root runs as "cc".
  TempDir t;
  std::string open = t / "open";
  ASSERT_EQ(::mkdir(open.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(open.c_str(), 0777), 0);
  auto r = ensure_shim_dir(open + "/libexec/memgate/shims", MEMGATE_BINARY);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find(open + ": it is writable by group or others and not sticky"), std::string::npos)
      << r.error();
  EXPECT_FALSE(path_exists(open + "/libexec"));  // refused before creating anything
  // Sticky (like /tmp) is fine above: others cannot rename what is ours.
  ASSERT_EQ(::chmod(open.c_str(), 01777), 0);
  EXPECT_TRUE(ensure_shim_dir(open + "/libexec/memgate/shims", MEMGATE_BINARY).ok());
}

TEST(ShimDir, RefusesAnAncestorOwnedBySomeoneElse) {
  TempDir t;
  std::string theirs = t / "theirs";
  ASSERT_EQ(::mkdir(theirs.c_str(), 0755), 0);
  ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);  // nobody (the tests run as root)
  auto r = ensure_shim_dir(theirs + "/shims", MEMGATE_BINARY);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("owned by uid 65534"), std::string::npos) << r.error();
}

TEST(ShimDir, ChecksThePathASymlinkLeadsTo) {
  TempDir t;
  std::string real = t / "real", alias = t / "alias", open = t / "open", trap = t / "trap";
  ASSERT_EQ(::mkdir(real.c_str(), 0755), 0);
  ASSERT_EQ(::symlink(real.c_str(), alias.c_str()), 0);
  EXPECT_TRUE(ensure_shim_dir(alias + "/shims", MEMGATE_BINARY).ok());
  EXPECT_TRUE(is_shim_dir(real + "/shims"));
  // A tidy-looking path that leads into a directory anyone can write.
  ASSERT_EQ(::mkdir(open.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(open.c_str(), 0777), 0);
  ASSERT_EQ(::symlink(open.c_str(), trap.c_str()), 0);
  auto r = ensure_shim_dir(trap + "/shims", MEMGATE_BINARY);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find(open + ": it is writable by group or others"), std::string::npos) << r.error();
}

TEST(ShimDir, AnExtraFileThatWouldShadowACommandIsRefused) {
  TempDir t;
  std::string dir = t / "shims";
  ASSERT_TRUE(ensure_shim_dir(dir, MEMGATE_BINARY).ok());
  make_script(dir + "/make");  // would run instead of the build's own make
  auto r = ensure_shim_dir(dir, MEMGATE_BINARY);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find("it holds 'make', which is not a compiler shim"), std::string::npos) << r.error();
  EXPECT_TRUE(path_exists(dir + "/make"));  // refused, never deleted
  ASSERT_EQ(::unlink((dir + "/make").c_str()), 0);
  ASSERT_TRUE(ensure_shim_dir(dir, MEMGATE_BINARY).ok());
  // A shim that is a file instead of our link is replaced by the link.
  ASSERT_EQ(::unlink((dir + "/cc").c_str()), 0);
  make_script(dir + "/cc");
  ASSERT_TRUE(ensure_shim_dir(dir, MEMGATE_BINARY).ok());
  struct stat st;
  ASSERT_EQ(::lstat((dir + "/cc").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
}

TEST(ShimDir, AcceptsAnInstallsRelativeLinksToItsWrapper) {
  // cmake --install makes shims/cc -> ../memgate-wrap.
  TempDir t;
  std::string parts = t / "libexec/memgate";
  ASSERT_EQ(std::system(("mkdir -p " + parts + "/shims && cp " + std::string(MEMGATE_WRAP_BINARY) + " " + parts +
                         "/memgate-wrap && touch " + parts + "/shims/.memgate-shims")
                            .c_str()),
            0);
  for (auto name : kShimNames)
    ASSERT_EQ(::symlink("../memgate-wrap", (parts + "/shims/" + std::string(name)).c_str()), 0);
  ASSERT_TRUE(ensure_shim_dir(parts + "/shims", parts + "/memgate-wrap").ok());
  char buf[256];
  ssize_t n = ::readlink((parts + "/shims/g++").c_str(), buf, sizeof buf);
  EXPECT_EQ(std::string(buf, static_cast<std::size_t>(std::max<ssize_t>(n, 0))), "../memgate-wrap");
  // Even when an older runner names memgate itself as the target.
  ASSERT_TRUE(ensure_shim_dir(parts + "/shims", MEMGATE_BINARY).ok());
  n = ::readlink((parts + "/shims/g++").c_str(), buf, sizeof buf);
  EXPECT_EQ(std::string(buf, static_cast<std::size_t>(std::max<ssize_t>(n, 0))), "../memgate-wrap");
}

TEST(ShimNames, AreTheCompilerDrivers) {
  for (auto n : {"cc", "c++", "gcc", "g++", "clang", "clang++", "nvcc", "hipcc"}) EXPECT_TRUE(is_shim_name(n)) << n;
  for (auto n : {"ld", "memgate", "g++-12", "ccache", ""}) EXPECT_FALSE(is_shim_name(n)) << n;
}
