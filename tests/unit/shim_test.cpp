// The shim directory (wrap/shims.hpp): this copy's own, a marked directory of
// links nobody else can write, every ancestor checked; and finding the real
// program past every shim directory and memgate itself (wrap/find_program.hpp).
#include "wrap/shims.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "util/fs.hpp"
#include "wrap/find_program.hpp"
#include "support/temp_dir.hpp"

using namespace memgate;

namespace {

const std::string kShim = "/home/u/.cache/memgate/shims";

struct TempDir : test::TempDir {
  TempDir() : test::TempDir("shim") {}
};

void make_script(const std::string& path) {
  ASSERT_TRUE(write_file(path, "#!/bin/sh\nexit 0\n", true).ok());
  ASSERT_EQ(::chmod(path.c_str(), 0755), 0);
}

}  // namespace

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
