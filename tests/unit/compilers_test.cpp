// The one table of what memgate gates (src/preload/compilers.h): a test per
// name form, through the same C functions the preload library runs.
#include "wrap/compilers.hpp"

#include <gtest/gtest.h>


using namespace memgate;

namespace {

bool gated(std::vector<std::string> argv, std::string_view extra = {}) { return is_gated_command(argv, extra); }

}  // namespace

TEST(Compilers, PlainDriverNames) {
  for (auto n : {"cc", "c++", "gcc", "g++", "clang", "clang++", "nvcc", "hipcc"})
    EXPECT_EQ(classify_program(n), ToolKind::compiler) << n;
}

TEST(Compilers, AbsolutePathsCountByBasename) {
  EXPECT_EQ(classify_program("/usr/bin/g++"), ToolKind::compiler);
  EXPECT_EQ(classify_program("/usr/local/cuda/bin/nvcc"), ToolKind::compiler);
  EXPECT_EQ(classify_program("/usr/lib/ccache/g++"), ToolKind::compiler);  // ccache's masquerade directory
  EXPECT_EQ(classify_program("./cc"), ToolKind::compiler);
  EXPECT_EQ(classify_program("/usr/bin/"), ToolKind::none);
}

TEST(Compilers, VersionedForms) {
  for (auto n : {"gcc-12", "g++-12", "clang-14", "clang++-15", "cc-9", "gcc-12.2", "gcc-12.2.0", "nvcc-12.4"})
    EXPECT_EQ(classify_program(n), ToolKind::compiler) << n;
  EXPECT_EQ(classify_program("ld.lld-14"), ToolKind::linker);
}

TEST(Compilers, TargetPrefixedForms) {
  for (auto n : {"x86_64-linux-gnu-g++-12", "x86_64-linux-gnu-gcc-12", "x86_64-linux-gnu-gcc", "aarch64-linux-gnu-g++",
                 "arm-none-eabi-gcc", "riscv64-unknown-elf-gcc", "avr-gcc", "musl-gcc", "x86_64-w64-mingw32-g++",
                 "x86_64-pc-linux-gnu-clang++"})
    EXPECT_EQ(classify_program(n), ToolKind::compiler) << n;
  EXPECT_EQ(classify_program("x86_64-linux-gnu-ld.gold"), ToolKind::linker);
  EXPECT_EQ(classify_program("x86_64-linux-gnu-ld"), ToolKind::linker);
}

TEST(Compilers, RustAndOtherCompilers) {
  for (auto n : {"rustc", "/usr/bin/rustc", "/root/.cargo/bin/rustc", "gfortran", "gfortran-12", "icx", "icpx", "nvc",
                 "nvc++"})
    EXPECT_EQ(classify_program(n), ToolKind::compiler) << n;
}

TEST(Compilers, DirectLinkerCallsAreGatedJobs) {
  for (auto n : {"ld", "ld.bfd", "ld.gold", "ld.lld", "ld.mold", "lld", "mold", "/usr/bin/ld", "rust-lld"})
    EXPECT_EQ(classify_program(n), ToolKind::linker) << n;
  EXPECT_TRUE(gated({"ld", "-o", "a.out", "a.o"}));
}

TEST(Compilers, HelpersAndLookalikesAreNot) {
  for (auto n : {"cc1", "cc1plus", "collect2", "as", "ar", "ranlib", "gcc-ar", "gcc-ar-12", "x86_64-linux-gnu-gcc-nm-12",
                 "clang-format", "clang-format-14", "clang-tidy", "git-clang-format", "c++filt", "cpp", "ptxas", "cicc",
                 "make", "ninja", "sh", "python3", "distcc-pump", "ld-linux-x86-64.so.2", "ld-2.31.so", "rustdoc",
                 "cargo", "memgate-wrap", "g++-mp", "-gcc", "gcc-", ""})
    EXPECT_EQ(classify_program(n), ToolKind::none) << n;
}

TEST(Compilers, LaunchersCountOnlyInFrontOfACompiler) {
  for (auto n : {"ccache", "sccache", "distcc", "icecc", "buildcache", "/usr/bin/ccache"})
    EXPECT_EQ(classify_program(n), ToolKind::launcher) << n;
  EXPECT_TRUE(gated({"ccache", "g++", "-c", "a.cpp"}));
  EXPECT_TRUE(gated({"/usr/bin/ccache", "/usr/bin/c++", "-c", "a.cpp"}));  // CMAKE_CXX_COMPILER_LAUNCHER=ccache
  EXPECT_TRUE(gated({"sccache", "rustc", "--crate-name", "x"}));             // RUSTC_WRAPPER=sccache
  EXPECT_TRUE(gated({"distcc", "x86_64-linux-gnu-gcc-12", "-c", "a.c"}));
  EXPECT_FALSE(gated({"ccache", "-s"}));
  EXPECT_FALSE(gated({"ccache", "--zero-stats"}));
  EXPECT_FALSE(gated({"sccache", "--show-stats"}));
  EXPECT_FALSE(gated({"ccache"}));
  EXPECT_FALSE(gated({"ccache", "make"}));
  // Launchers take neither versions nor prefixes: "x-ccache" is not ccache.
  EXPECT_EQ(classify_program("ccache-4"), ToolKind::none);
  EXPECT_EQ(classify_program("x86_64-ccache"), ToolKind::none);
}

TEST(Compilers, TheUsersOwnLaunchersFromCcAndCxx) {
  // CC="/opt/bin/mywrap gcc": memgate run passes MEMGATE_LAUNCHERS=mywrap.
  EXPECT_FALSE(gated({"/opt/bin/mywrap", "gcc", "-c", "a.c"}));
  EXPECT_TRUE(gated({"/opt/bin/mywrap", "gcc", "-c", "a.c"}, "mywrap"));
  EXPECT_TRUE(gated({"mywrap", "g++-12", "-c", "a.c"}, "other:mywrap"));
  EXPECT_FALSE(gated({"mywrap", "--stats"}, "mywrap"));
  EXPECT_FALSE(gated({"mywrap2", "gcc"}, "mywrap"));
  EXPECT_EQ(classify_program("/opt/bin/mywrap", "mywrap"), ToolKind::launcher);
}

TEST(Compilers, CompilersAreGatedWhateverTheyAreAskedToDo) {
  // Probes are the wrapper's business (it runs them at once, ungated).
  EXPECT_TRUE(gated({"g++", "--version"}));
  EXPECT_TRUE(gated({"/usr/bin/x86_64-linux-gnu-g++-12", "-c", "a.cpp"}));
  EXPECT_FALSE(gated({}));
}

TEST(Compilers, ShimNamesComeFromTheTable) {
  std::vector<std::string_view> names(kShimNames.begin(), kShimNames.end());
  EXPECT_EQ(names, (std::vector<std::string_view>{"cc", "c++", "gcc", "g++", "clang", "clang++", "nvcc", "hipcc"}));
  for (auto n : kShimNames) EXPECT_EQ(classify_program(n), ToolKind::compiler) << n;
}
