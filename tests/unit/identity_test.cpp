#include "predict/identity.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "predict/gpu_arch.hpp"
#include "predict/temp_paths.hpp"

using namespace memgate;

namespace {

struct Cmd {
  std::string cwd;
  std::vector<std::string> argv;
};

std::string substitute(std::string s, const std::map<std::string, std::string>& vars) {
  for (const auto& [k, v] : vars) {
    for (size_t pos = s.find(k); pos != std::string::npos; pos = s.find(k, pos + v.size())) s.replace(pos, k.size(), v);
  }
  return s;
}

// Loads tests/fixtures/cmdlines/NAME (see the README there).
Cmd load(const std::string& name, const std::map<std::string, std::string>& vars) {
  std::ifstream in(std::string(MEMGATE_FIXTURES) + "/cmdlines/" + name);
  EXPECT_TRUE(in.good()) << name;
  Cmd c;
  std::string line;
  while (std::getline(in, line)) {
    line = substitute(line, vars);
    if (line.rfind("cwd=", 0) == 0) c.cwd = line.substr(4);
    else if (!line.empty()) c.argv.push_back(line);
  }
  return c;
}

CommandInfo analyze(const Cmd& c) { return analyze_command(c.argv, c.cwd); }

const std::map<std::string, std::string> kPipA = {{"@REQ@", "/tmp/pip-req-build-r7e4x2ab"},
                                                  {"@ENV@", "/tmp/pip-build-env-q1w2e3r4"}};
const std::map<std::string, std::string> kPipB = {{"@REQ@", "/tmp/pip-req-build-k9_m3zq0"},
                                                  {"@ENV@", "/tmp/pip-build-env-8h2nvx7w"}};

std::vector<std::string> split(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

int weight_of(const std::string& cmdline) { return analyze_command(split(cmdline), "/b").key.cpu_weight; }

}  // namespace

TEST(Identity, TorchCppExtensionNvccLineIsReadable) {
  auto info = analyze(load("torch_nvcc_flash_bwd.txt", kPipA));
  EXPECT_EQ(info.key.tool, "nvcc");
  EXPECT_EQ(info.mode, "compile");
  EXPECT_EQ(info.archs, (std::vector<std::string>{"sm_80", "sm_90"}));
  EXPECT_EQ(info.gpu_pipelines, 2);
  EXPECT_EQ(info.key.cpu_weight, 2);  // --threads 4, but only two archs to run at once
  EXPECT_EQ(info.key.stem, "flash_bwd_hdim128_fp16_sm80");
  EXPECT_EQ(info.key.klass, "nvcc:compile[sm_80,sm_90]");
  EXPECT_EQ(info.key.identity,
            "nvcc:compile:src/flash_bwd_hdim128_fp16_sm80.cu->"
            "csrc/flash_attn/src/flash_bwd_hdim128_fp16_sm80.o[sm_80,sm_90]");
  EXPECT_EQ(info.output,
            "/tmp/pip-req-build-r7e4x2ab/build/temp.linux-x86_64-cpython-311/csrc/flash_attn/src/"
            "flash_bwd_hdim128_fp16_sm80.o");
}

TEST(Identity, SameJobFromTwoPipTempDirsIsTheSame) {
  for (const char* file : {"torch_nvcc_flash_bwd.txt", "torch_cxx_flash_api.txt"}) {
    auto a = load(file, kPipA);
    auto b = load(file, kPipB);
    ASSERT_NE(a.argv, b.argv);
    EXPECT_EQ(analyze(a).key.identity, analyze(b).key.identity) << file;
    EXPECT_EQ(analyze(a).key.klass, analyze(b).key.klass) << file;
    EXPECT_EQ(argv_digest(a.argv), argv_digest(b.argv)) << file;
  }
}

TEST(Identity, PipTempDirAndAPlainCheckoutAgree) {
  auto tmp = load("torch_nvcc_flash_bwd.txt", kPipA);
  auto home = load("torch_nvcc_flash_bwd.txt",
                   {{"@REQ@", "/home/dev/src/flash-attention"}, {"@ENV@", "/home/dev/venv"}});
  EXPECT_EQ(analyze(tmp).key.identity, analyze(home).key.identity);
}

TEST(Identity, TorchHostCompileIsACompileOfItsSource) {
  auto info = analyze(load("torch_cxx_flash_api.txt", kPipA));
  EXPECT_EQ(info.key.tool, "c++");
  EXPECT_EQ(info.key.identity, "c++:compile:flash_attn/flash_api.cpp->csrc/flash_attn/flash_api.o");
  EXPECT_EQ(info.key.klass, "c++:compile");
  EXPECT_EQ(info.key.stem, "flash_api");
  EXPECT_EQ(info.key.cpu_weight, 1);
  EXPECT_TRUE(info.archs.empty());
}

TEST(Identity, CMakeBuildDirectoryMovedKeepsIdentities) {
  auto here = load("cmake_cxx.txt", {{"@SRC@", "/home/dev/proj"}, {"@BUILD@", "/home/dev/proj/build"}});
  auto moved = load("cmake_cxx.txt", {{"@SRC@", "/home/dev/proj"}, {"@BUILD@", "/scratch/ci/build-release"}});
  auto other_checkout = load("cmake_cxx.txt", {{"@SRC@", "/srv/ci/work/proj-2"}, {"@BUILD@", "/srv/ci/out"}});
  const auto id = analyze(here).key.identity;
  EXPECT_EQ(id, "c++:compile:src/a.cpp->CMakeFiles/app.dir/src/a.cpp.o");
  EXPECT_EQ(analyze(moved).key.identity, id);
  EXPECT_EQ(analyze(other_checkout).key.identity, id);
  EXPECT_EQ(analyze(here).key.stem, "a");
}

TEST(Identity, MakeLineRelativeToItsDirectory) {
  auto info = analyze_command({"g++", "-O2", "-c", "foo.cpp", "-o", "foo.o"}, "/home/dev/proj");
  EXPECT_EQ(info.key.tool, "g++");
  EXPECT_EQ(info.key.identity, "g++:compile:proj/foo.cpp->foo.o");
  EXPECT_EQ(info.key.stem, "foo");
  // Recursive make: the same file name in two directories is two jobs.
  auto lib1 = analyze_command({"gcc", "-c", "util.c", "-o", "util.o"}, "/p/lib1");
  auto lib2 = analyze_command({"gcc", "-c", "util.c", "-o", "util.o"}, "/p/lib2");
  EXPECT_NE(lib1.key.identity, lib2.key.identity);
}

TEST(Identity, CompileAndLinkDiffer) {
  auto compile = analyze_command({"c++", "-c", "app.cpp", "-o", "app.o"}, "/b");
  auto link = analyze_command({"c++", "app.o", "util.o", "-o", "app"}, "/b");
  auto build_and_link = analyze_command({"c++", "app.cpp", "-o", "app"}, "/b");
  EXPECT_EQ(compile.mode, "compile");
  EXPECT_EQ(link.mode, "link");
  EXPECT_EQ(link.key.identity, "c++:link->app");
  EXPECT_EQ(link.key.klass, "c++:link");
  EXPECT_EQ(link.key.stem, "app");
  EXPECT_EQ(build_and_link.mode, "link");
  EXPECT_NE(compile.key.klass, link.key.klass);
  EXPECT_NE(build_and_link.key.identity, link.key.identity);
  auto pp = analyze_command({"gcc", "-E", "x.c", "-o", "x.i"}, "/b");
  EXPECT_EQ(pp.mode, "preprocess");
}

TEST(Identity, DifferentArchsAreDifferentJobs) {
  auto base = split("nvcc -c /s/k.cu -o k.o");
  auto with = [&](std::vector<std::string> extra) {
    auto argv = base;
    argv.insert(argv.end(), extra.begin(), extra.end());
    return analyze_command(argv, "/b");
  };
  auto sm80 = with({"-gencode", "arch=compute_80,code=sm_80"});
  auto sm90 = with({"-gencode", "arch=compute_90,code=sm_90"});
  auto both = with({"-gencode", "arch=compute_90,code=sm_90", "-gencode", "arch=compute_80,code=sm_80"});
  EXPECT_NE(sm80.key.identity, sm90.key.identity);
  EXPECT_NE(sm80.key.klass, sm90.key.klass);
  EXPECT_NE(sm80.key.identity, both.key.identity);
  EXPECT_EQ(both.key.klass, "nvcc:compile[sm_80,sm_90]");  // order of flags does not matter
  EXPECT_EQ(klass_family(both.key.klass), "nvcc:compile");
}

TEST(Identity, NvccArchSpellings) {
  auto archs = [](const std::string& flags) { return analyze_command(split("nvcc -c k.cu " + flags), "/b").archs; };
  using V = std::vector<std::string>;
  EXPECT_EQ(archs("-arch=sm_80"), V{"sm_80"});
  EXPECT_EQ(archs("-arch sm_86"), V{"sm_86"});
  EXPECT_EQ(archs("--gpu-architecture=compute_90"), V{"compute_90"});
  EXPECT_EQ(archs("-gencode=arch=compute_90a,code=[sm_90a,compute_90a]"), (V{"sm_90a", "compute_90a"}));
  EXPECT_EQ(archs("--generate-code=arch=compute_90a,code=\"sm_90a,compute_90a\""), (V{"sm_90a", "compute_90a"}));
  EXPECT_EQ(archs("-arch=compute_80 -code=sm_80,sm_86"), (V{"sm_80", "sm_86"}));
  EXPECT_EQ(archs("-gencode arch=compute_120,code=compute_120 -gencode arch=compute_100f,code=sm_100f"),
            (V{"sm_100f", "compute_120"}));
  EXPECT_TRUE(archs("-O3").empty());
  auto hip = analyze_command(split("hipcc -c k.hip -o k.o --offload-arch=gfx90a --offload-arch=gfx942"), "/b");
  EXPECT_EQ(hip.archs, (V{"gfx90a", "gfx942"}));
}

TEST(Identity, CpuWeightIsThreadsCappedByArchs) {
  const std::string all6 =
      " -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90"
      " -gencode arch=compute_100f,code=sm_100f -gencode arch=compute_110f,code=sm_110f"
      " -gencode arch=compute_120f,code=sm_120f -gencode arch=compute_120,code=compute_120";
  EXPECT_EQ(weight_of("g++ -c a.cpp -o a.o"), 1);
  EXPECT_EQ(weight_of("nvcc -c k.cu -o k.o"), 1);
  EXPECT_EQ(weight_of("nvcc -c k.cu -o k.o --threads 4 -arch=sm_80"), 1);
  EXPECT_EQ(weight_of("nvcc -c k.cu -o k.o --threads 4" + all6), 4);
  EXPECT_EQ(weight_of("nvcc -c k.cu -o k.o --threads=2" + all6), 2);
  EXPECT_EQ(weight_of("nvcc -c k.cu -o k.o -t 8" + all6), 6);
  EXPECT_EQ(weight_of("nvcc -c k.cu -o k.o --threads 0" + all6), 6);
  EXPECT_EQ(weight_of("nvcc -c k.cu -o k.o --threads 0"), 1);
  EXPECT_EQ(weight_of("nvcc -c k.cu -o k.o" + all6), 1);  // default: one thread
  EXPECT_EQ(weight_of("nvcc -c k.cu -o k.o --threads 4 -gencode=arch=compute_90a,code=[sm_90a,compute_90a]"), 1);
  EXPECT_EQ(weight_of("nvcc -c k.cu -o k.o --threads bogus -arch=sm_80"), 1);
}

TEST(Identity, NvccEnvironmentFlagsCount) {
  auto argv = with_nvcc_env_flags(split("ccache nvcc -c k.cu -o k.o"), "-gencode arch=compute_80,code=sm_80",
                                  " --threads 2  -gencode arch=compute_90,code=sm_90 ");
  EXPECT_EQ(argv.front(), "ccache");
  EXPECT_EQ(analyze_command(argv, "/b").key.cpu_weight, 2);
  auto gcc = split("g++ -c a.cpp");
  EXPECT_EQ(with_nvcc_env_flags(gcc, "-x", "-y"), gcc);
}

// hipcc's offload archs count as nvcc's -gencode list does: in identity
// and klass (one device compile each), and in CPU weight when clang runs
// the device compiles at once (-parallel-jobs, as nvcc --threads).
TEST(Identity, HipccOffloadArchSpellingsAreOneTargetList) {
  auto hip = [](const std::string& flags) { return analyze_command(split("hipcc -c k.hip -o k.o " + flags), "/b"); };
  auto listed = hip("--offload-arch=gfx942,gfx90a");
  auto repeated = hip("--offload-arch=gfx90a --offload-arch=gfx942");
  auto legacy = hip("--amdgpu-target=gfx90a --amdgpu-target=gfx942");
  auto mixed = hip("--amdgpu-target=gfx942 --offload-arch=gfx90a --offload-arch=gfx90a");
  for (const auto* info : {&listed, &repeated, &legacy, &mixed}) {
    EXPECT_EQ(info->archs, (std::vector<std::string>{"gfx90a", "gfx942"}));
    EXPECT_EQ(info->gpu_pipelines, 2);
    EXPECT_EQ(info->key.klass, "hipcc:compile[gfx90a,gfx942]");
    EXPECT_EQ(info->key.identity, "hipcc:compile:b/k.hip->k.o[gfx90a,gfx942]");
    EXPECT_EQ(info->key.cpu_weight, 1);  // clang compiles the archs one after another
  }
  auto one = hip("--offload-arch=gfx90a");
  EXPECT_EQ(one.key.klass, "hipcc:compile[gfx90a]");
  EXPECT_EQ(one.gpu_pipelines, 1);
  EXPECT_NE(one.key.identity, listed.key.identity);
  EXPECT_EQ(klass_family(one.key.klass), klass_family(listed.key.klass));
  // Target features make a code object of their own.
  EXPECT_EQ(hip("--offload-arch=gfx90a:xnack+ --offload-arch=gfx90a:xnack-").gpu_pipelines, 2);
  EXPECT_EQ(hip("--offload-arch=gfx90a,gfx942 --no-offload-arch=gfx942").archs, std::vector<std::string>{"gfx90a"});
  EXPECT_TRUE(hip("--offload-arch=gfx90a --no-offload-arch=all").archs.empty());
}

TEST(Identity, HipccParallelJobsWeighLikeNvccThreads) {
  EXPECT_EQ(weight_of("hipcc -c k.hip -o k.o -parallel-jobs=4 --offload-arch=gfx90a,gfx942,gfx1100"), 3);
  EXPECT_EQ(weight_of("hipcc -c k.hip -o k.o -parallel-jobs=2 --offload-arch=gfx90a,gfx942,gfx1100"), 2);
  EXPECT_EQ(weight_of("hipcc -c k.hip -o k.o -parallel-jobs=4 --offload-arch=gfx90a"), 1);
  EXPECT_EQ(weight_of("clang++ -x hip -c k.cpp -o k.o -parallel-jobs=2 --offload-arch=gfx90a --offload-arch=gfx942"), 2);
}

TEST(Identity, HipccTargetsFromTheEnvironmentCount) {
  auto argv = with_hip_env_targets(split("ccache hipcc -c k.hip -o k.o"), "gfx90a,gfx942");
  EXPECT_EQ(argv.back(), "--offload-arch=gfx90a,gfx942");
  EXPECT_EQ(analyze_command(argv, "/b").key.klass, "hipcc:compile[gfx90a,gfx942]");
  // The command line wins over HCC_AMDGPU_TARGET, as in hipcc itself.
  auto given = split("hipcc -c k.hip --offload-arch=gfx90a");
  EXPECT_EQ(with_hip_env_targets(given, "gfx942"), given);
  auto legacy = split("hipcc -c k.hip --amdgpu-target=gfx90a");
  EXPECT_EQ(with_hip_env_targets(legacy, "gfx942"), legacy);
  auto gcc = split("g++ -c a.cpp");
  EXPECT_EQ(with_hip_env_targets(gcc, "gfx942"), gcc);
  auto bare = split("hipcc -c k.hip");
  EXPECT_EQ(with_hip_env_targets(bare, " "), bare);
}

TEST(Identity, ToolNamesAreNormalised) {
  EXPECT_EQ(normalize_tool_name("g++-12"), "g++");
  EXPECT_EQ(normalize_tool_name("/usr/bin/clang++-14"), "clang++");
  EXPECT_EQ(normalize_tool_name("x86_64-linux-gnu-g++"), "g++");
  EXPECT_EQ(normalize_tool_name("/usr/bin/x86_64-linux-gnu-gcc-12"), "gcc");
  EXPECT_EQ(normalize_tool_name("aarch64-linux-gnu-ld.gold"), "ld.gold");
  EXPECT_EQ(normalize_tool_name("/usr/local/cuda-12.4/bin/nvcc"), "nvcc");
  EXPECT_EQ(normalize_tool_name("clang-cl"), "clang-cl");
  EXPECT_EQ(normalize_tool_name("gcc-12.2"), "gcc");
  EXPECT_EQ(normalize_tool_name("mytool"), "mytool");
}

TEST(Identity, LaunchersAreSkipped) {
  auto plain = analyze_command(split("g++ -c a.cpp -o a.o"), "/p/b");
  for (const char* launcher : {"ccache", "/usr/bin/sccache", "distcc", "icecc", "buildcache", "memgate wrap --",
                               "/opt/memgate wrap", "ccache distcc"}) {
    auto argv = split(std::string(launcher) + " /usr/bin/g++-12 -c a.cpp -o a.o");
    auto info = analyze_command(argv, "/p/b");
    EXPECT_EQ(info.key.tool, "g++") << launcher;
    EXPECT_EQ(info.key.identity, plain.key.identity) << launcher;
    EXPECT_EQ(argv_digest(argv), argv_digest(split("g++ -c a.cpp -o a.o"))) << launcher;
  }
}

TEST(Identity, DigestIgnoresTempNamesButNotFlags) {
  auto a = split("nvcc -c /tmp/tmpa1b2c3d4/k.cu -o /tmp/tmpa1b2c3d4/k.o -I/tmp/pip-build-env-abc123de/inc");
  auto b = split("nvcc -c /tmp/tmpzz9y8x7w/k.cu -o /tmp/tmpzz9y8x7w/k.o -I/tmp/pip-build-env-0q9w8e7r/inc");
  auto c = split("nvcc -c /tmp/tmpzz9y8x7w/k.cu -o /tmp/tmpzz9y8x7w/k.o -I/tmp/pip-build-env-0q9w8e7r/inc -O3");
  EXPECT_EQ(argv_digest(a), argv_digest(b));
  EXPECT_NE(argv_digest(b), argv_digest(c));
  EXPECT_EQ(argv_digest(a).size(), 16u);
  EXPECT_EQ(analyze_command(a, "/home/u").key.identity, analyze_command(b, "/home/u").key.identity);
  EXPECT_EQ(analyze_command(a, "/home/u").key.identity, "nvcc:compile:k.cu->k.o");
}

TEST(Identity, TempNamesAreMasked) {
  EXPECT_EQ(mask_temp_names("-I/tmp/pip-build-env-x1y2z3w4/overlay"), "-I/tmp/pip-build-env-*/overlay");
  EXPECT_EQ(mask_temp_names("/tmp/tmpxft_00002a1b_00000000-6_k.cudafe1.cpp"), "/tmp/tmpxft_*-6_k.cudafe1.cpp");
  EXPECT_EQ(mask_temp_names("/home/u/.ccache/tmp/k.stdout.host.4242.Xy1.tmp"), "/home/u/.ccache/tmp/*");
  EXPECT_EQ(mask_temp_names("/tmp/ccA1b2C3.s"), "/tmp/cc*.s");
  EXPECT_EQ(mask_temp_names("/root/.cache/uv/builds-v0/.tmpAbC123/src/x.c"), "/root/.cache/uv/builds-v0/.tmp*/src/x.c");
  EXPECT_EQ(mask_temp_names("/usr/lib/pip-tools/tmpfiles/x"), "/usr/lib/pip-tools/tmpfiles/x");
  EXPECT_FALSE(is_random_temp_name("tmpfiles"));
  EXPECT_TRUE(is_random_temp_name("tmp.Qw3rTy6789"));
  EXPECT_TRUE(is_random_temp_name("pip-install-a_b3c4d5"));
  EXPECT_EQ(last_components(strip_temp_dirs("/tmp/pip-req-build-abcdef12/csrc/a.cu"), 9), "csrc/a.cu");
  EXPECT_EQ(last_components(strip_temp_dirs("/var/tmp/build/x.o"), 9), "build/x.o");
}

TEST(Identity, OutputOutsideTheBuildDirectory) {
  auto in_tmp = analyze_command(split("c++ -c /s/a.cpp -o /tmp/tmp3k4j5h6g/obj/a.o"), "/home/u/b");
  EXPECT_EQ(in_tmp.key.identity, "c++:compile:s/a.cpp->obj/a.o");
  auto up = analyze_command(split("c++ -c ../src/a.cpp -o ../obj/a.o"), "/home/u/proj/build");
  EXPECT_EQ(up.key.identity, "c++:compile:src/a.cpp->../obj/a.o");
  auto abs_inside = analyze_command(split("c++ -c a.cpp -o /home/u/b/./sub/a.o"), "/home/u/b/");
  EXPECT_EQ(abs_inside.key.identity, "c++:compile:b/a.cpp->sub/a.o");
}

TEST(Identity, UnusualShapesStillGetIdentities) {
  auto version = analyze_command({"nvcc", "--version"}, "/b");
  EXPECT_EQ(version.key.tool, "nvcc");
  EXPECT_NE(version.key.identity.find('#'), std::string::npos);
  EXPECT_EQ(version.key.identity, analyze_command({"/usr/local/cuda/bin/nvcc", "--version"}, "/c").key.identity);
  auto empty = analyze_command({}, "/b");
  EXPECT_FALSE(empty.key.identity.empty());
  EXPECT_EQ(empty.key.cpu_weight, 1);
  auto lone = analyze_command({"ccache"}, "/b");
  EXPECT_EQ(lone.key.tool, "ccache");
  auto many = analyze_command(split("gcc -c a.c b.c c.c"), "/p/x");
  EXPECT_EQ(many.key.identity, "gcc:compile:x/a.c+2");
  auto rust = analyze_command(split("rustc --crate-name serde --edition=2021 src/lib.rs --crate-type lib "
                                    "--out-dir /w/target/release/deps -C opt-level=3"),
                              "/home/u/.cargo/registry/src/index.crates.io-6f17d22bba15001f/serde-1.0.200");
  EXPECT_EQ(rust.key.tool, "rustc");
  EXPECT_EQ(rust.key.stem, "serde");
  EXPECT_EQ(rust.key.identity, "rustc:compile:src/lib.rs->crate serde");
  auto ld = analyze_command(split("ld.lld -o libx.so.1.2 a.o b.o -shared"), "/b");
  EXPECT_EQ(ld.key.identity, "ld.lld:link->libx.so.1.2");
  EXPECT_EQ(ld.key.stem, "libx");
}

TEST(GpuArch, VirtualArchAndOrder) {
  EXPECT_EQ(virtual_arch_of("sm_90a"), "compute_90a");
  EXPECT_EQ(virtual_arch_of("compute_80"), "compute_80");
  EXPECT_TRUE(arch_less("sm_90", "sm_100f"));
  EXPECT_TRUE(arch_less("sm_90a", "compute_90a"));
  GpuArchs g;
  g.add_gencode("arch=compute_80,code=sm_80");
  g.add_gencode("arch=compute_80,code=sm_86");
  EXPECT_EQ(g.pipelines(), 1);  // one cicc for compute_80, two ptxas
  EXPECT_EQ(g.targets(), (std::vector<std::string>{"sm_80", "sm_86"}));
}

// Configure-time checks and version queries are probes (identity.hpp).
// The CMake lines were captured from cmake 3.25.1 configuring a C/C++
// project with check_include_file and check_cxx_source_compiles (a logging
// compiler recorded cwd and argv); the Meson lines are what
// mesonbuild/compilers run in meson-private/tmpXXXXXXXX with that
// directory as cwd; the autoconf lines are ac_compile, ac_link and ac_cpp
// from a generated configure script, run in the build directory.
TEST(Identity, BuildSystemProbesAreProbes) {
  const std::string scratch = "/home/dev/proj/build/CMakeFiles/CMakeScratch/TryCompile-51k24Q";
  const std::vector<Cmd> probes = {
      // CMake compiler identification and ABI detection.
      {"/home/dev/proj/build/CMakeFiles/3.25.1/CompilerIdC", {"/usr/bin/cc", "CMakeCCompilerId.c"}},
      {"/home/dev/proj/build/CMakeFiles/3.25.1/CompilerIdCXX", {"/usr/bin/c++", "CMakeCXXCompilerId.cpp"}},
      {scratch, split("/usr/bin/cc -v -o CMakeFiles/cmTC_5c471.dir/CMakeCCompilerABI.c.o -c "
                      "/usr/share/cmake-3.25/Modules/CMakeCCompilerABI.c")},
      {scratch, split("/usr/bin/cc -v CMakeFiles/cmTC_5c471.dir/CMakeCCompilerABI.c.o -o cmTC_5c471")},
      // check_include_file and check_cxx_source_compiles.
      {"/home/dev/proj/build/CMakeFiles/CMakeScratch/TryCompile-i2UTSU",
       split("/usr/bin/cc -o CMakeFiles/cmTC_9beb9.dir/CheckIncludeFile.c.o -c "
             "/home/dev/proj/build/CMakeFiles/CMakeScratch/TryCompile-i2UTSU/CheckIncludeFile.c")},
      {"/home/dev/proj/build/CMakeFiles/CMakeScratch/TryCompile-u3yy5f",
       split("/usr/bin/c++ -DHAVE_MAIN -o CMakeFiles/cmTC_58a55.dir/src.cxx.o -c "
             "/home/dev/proj/build/CMakeFiles/CMakeScratch/TryCompile-u3yy5f/src.cxx")},
      // CMake before 3.24: CMakeFiles/CMakeTmp.
      {"/home/dev/proj/build/CMakeFiles/CMakeTmp",
       split("/usr/bin/c++ -o CMakeFiles/cmTC_0a1b2.dir/src.cxx.o -c /home/dev/proj/build/CMakeFiles/CMakeTmp/src.cxx")},
      // Meson: compiles, links and preprocesses in meson-private/tmp*.
      {"/home/dev/proj/builddir/meson-private/tmpk3j_x9q1",
       split("cc /home/dev/proj/builddir/meson-private/tmpk3j_x9q1/testfile.c -o "
             "/home/dev/proj/builddir/meson-private/tmpk3j_x9q1/output.obj -c -D_FILE_OFFSET_BITS=64 -O0")},
      {"/home/dev/proj/builddir/meson-private/tmpz0ab12cd",
       split("c++ /home/dev/proj/builddir/meson-private/tmpz0ab12cd/testfile.cpp -o "
             "/home/dev/proj/builddir/meson-private/tmpz0ab12cd/output.exe -D_FILE_OFFSET_BITS=64 -O0 -Wl,--start-group "
             "-lm -Wl,--end-group")},
      {"/home/dev/proj/builddir/meson-private/tmp8wq2r1z0",
       split("cc /home/dev/proj/builddir/meson-private/tmp8wq2r1z0/testfile.c -E -P -D_FILE_OFFSET_BITS=64 -P -O0")},
      // autoconf: ac_compile, ac_link (C and C++), ac_cpp.
      {"/home/dev/proj", split("gcc -c -g -O2 conftest.c")},
      {"/home/dev/proj", split("gcc -o conftest -g -O2 conftest.c -lm")},
      {"/home/dev/proj", split("g++ -c -g -O2 conftest.cpp")},
      {"/home/dev/proj", split("g++ -o conftest -g -O2 conftest.cpp")},
      {"/home/dev/proj", split("gcc -E conftest.c")},
  };
  for (const Cmd& c : probes) {
    CommandInfo info = analyze(c);
    EXPECT_EQ(info.mode, "probe") << c.cwd << ": " << c.argv.back();
    EXPECT_TRUE(is_probe_klass(info.key.klass)) << info.key.klass;
  }
}

TEST(Identity, VersionQueriesAreProbes) {
  for (const char* line : {"gcc --version", "g++ -v", "nvcc --version", "cc -dumpversion", "c++ -dumpfullversion",
                           "gcc -print-sysroot", "gcc -print-file-name=libstdc++.so", "rustc -vV",
                           "ccache g++ --version"}) {
    EXPECT_TRUE(is_version_query(split(line))) << line;
    EXPECT_EQ(analyze_command(split(line), "/b").mode, "probe") << line;
  }
  // -v beside real work is a verbose compile, not a query.
  EXPECT_FALSE(is_version_query(split("g++ -v -c a.cpp -o a.o")));
  EXPECT_EQ(analyze_command(split("g++ -v -c a.cpp -o a.o"), "/b").mode, "compile");
  EXPECT_FALSE(is_version_query(split("ccache -s")));
}

// Real compiles beside the probes keep their modes: a tree with a file
// named like a probe directory's parent, -MD dependency output, -E and -M.
TEST(Identity, RealCompilesAreNotProbes) {
  EXPECT_EQ(analyze_command(split("c++ -MD -MT a.o -MF a.o.d -o CMakeFiles/app.dir/src/a.cpp.o -c /src/a.cpp"),
                            "/home/dev/proj/build")
                .mode,
            "compile");
  EXPECT_EQ(analyze_command(split("gcc -c src/CMakeFiles.c -o CMakeFiles.o"), "/b").mode, "compile");
  EXPECT_EQ(analyze_command(split("gcc -E a.c -o a.i"), "/b").mode, "preprocess");
  EXPECT_EQ(analyze_command(split("gcc -M a.c"), "/b").mode, "preprocess");
  EXPECT_EQ(analyze_command(split("gcc -MM a.c"), "/b").mode, "preprocess");
  EXPECT_FALSE(is_probe_klass(analyze_command(split("gcc -E a.c -o a.i"), "/b").key.klass));
}
