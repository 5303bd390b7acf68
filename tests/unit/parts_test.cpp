// memgate finds its parts relative to its own binary, and uses them only
// from a trusted chain (wrap/parts.hpp).
#include "wrap/parts.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <set>

#include "support/temp_dir.hpp"
#include "util/fs.hpp"

using namespace memgate;

namespace {

auto files(std::set<std::string> present) {
  return [present](const std::string& p) { return present.count(p) > 0; };
}

}  // namespace

TEST(Parts, BuildTreeKeepsEverythingNextToTheBinary) {
  auto p = find_parts_for("/src/memgate/build/memgate",
                          files({"/src/memgate/build/memgate-wrap", "/src/memgate/build/libmemgate-preload.so"}));
  EXPECT_EQ(p.dir, "/src/memgate/build");
  EXPECT_EQ(p.wrapper, "/src/memgate/build/memgate-wrap");
  EXPECT_EQ(p.preload, "/src/memgate/build/libmemgate-preload.so");
  EXPECT_EQ(p.shim_dir, "/src/memgate/build/shims");
}

TEST(Parts, InstallKeepsThemInLibexec) {
  auto p = find_parts_for("/opt/mg/bin/memgate",
                          files({"/opt/mg/libexec/memgate/memgate-wrap", "/opt/mg/libexec/memgate/libmemgate-preload.so"}));
  EXPECT_EQ(p.dir, "/opt/mg/libexec/memgate");
  EXPECT_EQ(p.wrapper, "/opt/mg/libexec/memgate/memgate-wrap");
  EXPECT_EQ(p.preload, "/opt/mg/libexec/memgate/libmemgate-preload.so");
  EXPECT_EQ(p.shim_dir, "/opt/mg/libexec/memgate/shims");
}

TEST(Parts, TwoCopiesNeverSeeEachOther) {
  auto present = files({"/a/bin/memgate-wrap", "/a/bin/libmemgate-preload.so", "/b/libexec/memgate/memgate-wrap",
                        "/b/libexec/memgate/libmemgate-preload.so"});
  EXPECT_EQ(find_parts_for("/a/bin/memgate", present).dir, "/a/bin");
  EXPECT_EQ(find_parts_for("/b/bin/memgate", present).dir, "/b/libexec/memgate");
}

TEST(Parts, ABareBinaryIsItsOwnWrapperAndHasNoLibrary) {
  auto p = find_parts_for("/usr/local/bin/memgate", files({}));
  EXPECT_EQ(p.wrapper, "/usr/local/bin/memgate");
  EXPECT_EQ(p.preload, "");
  EXPECT_EQ(p.shim_dir, "/usr/local/bin/shims");
}

TEST(Parts, TheRunningTestBinaryFindsTheBuildTree) {
  Parts p = find_parts();
  EXPECT_EQ(p.wrapper, MEMGATE_WRAP_BINARY);
  EXPECT_EQ(p.preload, MEMGATE_PRELOAD_LIBRARY);
}

// The parts are handed to the build (the library into every compiler,
// often as root) long after memgate starts: only from a chain nobody else
// can write, so nobody can swap them later either.
class TrustedParts : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = t_ / "libexec";
    ASSERT_EQ(::mkdir(dir_.c_str(), 0755), 0);
    for (const char* f : {"memgate-wrap", "libmemgate-preload.so"}) {
      ASSERT_TRUE(write_file(dir_ + "/" + f, "x", true).ok());
      ASSERT_EQ(::chmod((dir_ + "/" + f).c_str(), 0755), 0);
    }
    parts_ = find_parts_for(t_ / "bin/memgate", [this](const std::string& p) { return p.rfind(dir_, 0) == 0; });
    parts_.dir = dir_;
    parts_.wrapper = dir_ + "/memgate-wrap";
    parts_.preload = dir_ + "/libmemgate-preload.so";
  }
  std::string why() {
    auto r = trusted_parts(parts_, ::geteuid());
    return r ? "" : r.error();
  }
  test::TempDir t_{"parts"};
  std::string dir_;
  Parts parts_;
};

TEST_F(TrustedParts, AChainOfOursIsTrustedAndResolved) {
  ASSERT_EQ(::symlink(dir_.c_str(), (t_ / "link").c_str()), 0);
  parts_.preload = t_ / "link/libmemgate-preload.so";
  auto r = trusted_parts(parts_, ::geteuid());
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->preload, dir_ + "/libmemgate-preload.so") << "LD_PRELOAD gets the path that was checked";
  EXPECT_EQ(r->shim_dir, dir_ + "/shims");
}

TEST_F(TrustedParts, ADirectoryOthersCanWriteIsNot) {
  ASSERT_EQ(::chmod(dir_.c_str(), 0777), 0);
  EXPECT_EQ(why(), dir_ + ": it is writable by group or others");
  ASSERT_EQ(::chmod(dir_.c_str(), 01777), 0);
  EXPECT_EQ(why(), dir_ + ": it is writable by group or others") << "sticky is not enough for the parts' own";
  ASSERT_EQ(::chmod(dir_.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(t_.path().c_str(), 0777), 0);
  EXPECT_EQ(why(), t_.path() + ": it is writable by group or others and not sticky");
  ASSERT_EQ(::chmod(t_.path().c_str(), 0700), 0);
}

TEST_F(TrustedParts, AFileOthersCanWriteIsNot) {
  ASSERT_EQ(::chmod(parts_.preload.c_str(), 0775), 0);
  EXPECT_EQ(why(), parts_.preload + ": it is writable by group or others");
  ASSERT_EQ(::chmod(parts_.preload.c_str(), 0755), 0);
  ASSERT_EQ(::chmod(parts_.wrapper.c_str(), 0757), 0);
  EXPECT_EQ(why(), parts_.wrapper + ": it is writable by group or others");
}

TEST_F(TrustedParts, PartsOfAnotherUserAreNot) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to give files away";
  ASSERT_EQ(::chown(parts_.preload.c_str(), 65534, 65534), 0);
  EXPECT_EQ(why(), parts_.preload + ": it is owned by uid 65534, neither root nor uid 0");
  ASSERT_EQ(::chown(parts_.preload.c_str(), 0, 0), 0);
  ASSERT_EQ(::chown(dir_.c_str(), 65534, 65534), 0);
  EXPECT_EQ(why(), dir_ + ": it is owned by uid 65534, neither root nor uid 0");
}

TEST_F(TrustedParts, ALibraryLinkLeadingSomewhereUnsafeIsNot) {
  const std::string open_dir = t_ / "anyone";
  ASSERT_EQ(::mkdir(open_dir.c_str(), 0777), 0);
  ASSERT_EQ(::chmod(open_dir.c_str(), 0777), 0);
  ASSERT_TRUE(write_file(open_dir + "/lib.so", "x", true).ok());
  ASSERT_EQ(::unlink(parts_.preload.c_str()), 0);
  ASSERT_EQ(::symlink((open_dir + "/lib.so").c_str(), parts_.preload.c_str()), 0);
  EXPECT_EQ(why(), open_dir + ": it is writable by group or others");
}
