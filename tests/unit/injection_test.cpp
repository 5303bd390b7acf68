// What `memgate run` puts in the build's environment (wrap/shims.hpp): the
// fallback's shims first in PATH and compiler variables pointed at them,
// the preload library and when it cannot be used (a static or setuid build
// tool, untrusted parts), the socket and the job marker.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <set>
#include <string>

#include "elf_bytes.hpp"
#include "support/temp_dir.hpp"
#include "util/fs.hpp"
#include "wrap/shims.hpp"

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
  TempDir() : test::TempDir("injection") {}
};

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
