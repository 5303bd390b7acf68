// Distributed engines (core/engine.hpp): which jobs they take, how their
// keys differ, and how many jobs distcc may have out.
#include "core/engine.hpp"

#include <gtest/gtest.h>

using namespace memgate;

namespace {

JobKey key(const std::string& tool, const std::string& klass) {
  JobKey k;
  k.tool = tool;
  k.klass = klass;
  k.identity = klass + "#out.o";
  return k;
}

}  // namespace

TEST(Engine, DistccAndIceccAreRemoteEnginesSccacheIsNot) {
  EXPECT_TRUE(is_remote_engine("distcc"));
  EXPECT_TRUE(is_remote_engine("/usr/bin/distcc"));
  EXPECT_TRUE(is_remote_engine("icecc"));
  EXPECT_FALSE(is_remote_engine("sccache"));
  EXPECT_FALSE(is_remote_engine("ccache"));
  EXPECT_FALSE(is_remote_engine("gcc"));
}

TEST(Engine, RemoteKeyIsLearnedApartFromTheLocalCompile) {
  JobKey local = key("g++", "g++:compile");
  JobKey remote = remote_key(local, "distcc");
  EXPECT_EQ(remote.identity, "distcc>g++:compile#out.o");
  EXPECT_EQ(remote.klass, "distcc>g++:compile");
  EXPECT_TRUE(is_remote_klass(remote.klass));
  EXPECT_FALSE(is_remote_klass(local.klass));
  EXPECT_EQ(remote_key(remote, "distcc").identity, remote.identity);  // never twice
  EXPECT_EQ(remote_key(local, "").identity, local.identity);
}

TEST(Engine, OnlyCFamilyCompilesAreDistributable) {
  EXPECT_TRUE(distributable(key("gcc", "gcc:compile")));
  EXPECT_TRUE(distributable(key("clang++", "clang++:compile")));
  EXPECT_FALSE(distributable(key("g++", "g++:link")));
  EXPECT_FALSE(distributable(key("nvcc", "nvcc:compile[sm_80]")));
  EXPECT_FALSE(distributable(key("rustc", "rustc:compile")));
  EXPECT_FALSE(distributable(key("ld", "ld:link")));
}

TEST(Engine, DistccRemoteSlotsSumTheLimitsOfEveryHostButLocalhost) {
  EXPECT_EQ(distcc_remote_slots("127.0.0.1:3632/8"), 8);
  EXPECT_EQ(distcc_remote_slots("  buildbox/4 other:3633/2,lzo localhost/2 --randomize"), 6);
  EXPECT_EQ(distcc_remote_slots("buildbox"), 4);  // distcc's default limit
  EXPECT_EQ(distcc_remote_slots("localhost/4"), 0);
  EXPECT_EQ(distcc_remote_slots(""), 0);
}
