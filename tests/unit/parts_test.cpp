// memgate finds its parts relative to its own binary (wrap/parts.hpp).
#include "wrap/parts.hpp"

#include <gtest/gtest.h>

#include <set>

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
