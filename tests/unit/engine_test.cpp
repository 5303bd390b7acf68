// Distributed engines (core/engine.hpp): which jobs they take and how
// many jobs distcc may have out.
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

// distcc's client log at info level (DISTCC_LOG), as distcc 3.4 writes it.
TEST(Engine, DistccLogSaysWhereTheCompileRan) {
  const char* remote =
      "distcc[4100] exec on 127.0.0.1:40123/4: x86_64-linux-gnu-gcc -O2 -c f1.c -o f1.o\n"
      "distcc[4101] exec on localhost: x86_64-linux-gnu-gcc -O2 -c f2.c -o f2.o\n"
      "distcc[4100] compile f1.c on 127.0.0.1:40123/4 completed ok\n"
      "distcc[4100] elapsed compilation time 0.052s\n";
  DistccRun r = read_distcc_log(remote, 4100, false);
  EXPECT_TRUE(r.seen);
  EXPECT_FALSE(r.ran_here);
  EXPECT_TRUE(r.stderr_lines.empty()) << "info lines never reached stderr";
  EXPECT_TRUE(read_distcc_log(remote, 4101, false).ran_here) << "another client's line";
  EXPECT_FALSE(read_distcc_log(remote, 999, false).seen);

  const char* fallback =
      "distcc[4200] exec on 127.0.0.1:1/4: x86_64-linux-gnu-gcc -O2 -c f.c -o f.o\n"
      "distcc[4200] (dcc_connect_by_addr) ERROR: failed to connect to 127.0.0.1 port 1: Connection refused\n"
      "distcc[4200] Warning: failed to distribute f.c to 127.0.0.1:1/4, running locally instead\n"
      "distcc[4200] exec on localhost: x86_64-linux-gnu-gcc -O2 -c f.c -o f.o\n"
      "distcc[4200] elapsed compilation time 0.3s\n";
  r = read_distcc_log(fallback, 4200, false);
  EXPECT_TRUE(r.ran_here);
  ASSERT_EQ(r.stderr_lines.size(), 2u);
  EXPECT_EQ(r.stderr_lines[0],
            "distcc[4200] (dcc_connect_by_addr) ERROR: failed to connect to 127.0.0.1 port 1: Connection refused");
  EXPECT_EQ(read_distcc_log(fallback, 4200, true).stderr_lines.size(), 5u) << "DISTCC_VERBOSE shows everything";
}

TEST(Engine, DistccLogReadFromTheMiddleSkipsThePartialLine) {
  DistccRun r = read_distcc_log("host: gcc -c a.c\ndistcc[7] exec on localhost: gcc -c a.c\n", 7, false, true);
  EXPECT_TRUE(r.ran_here);
  r = read_distcc_log("distcc[7] exec on localhost: gcc -c a.c", 7, false, true);
  EXPECT_FALSE(r.seen) << "a single cut line may be a fragment";
  for (const char* odd : {"distcc[] exec on localhost: x", "distcc[7]exec on localhost: x", "distcc[7", "",
                          "\n\n", "distcc[99999999999999] exec on localhost: x"})
    EXPECT_FALSE(read_distcc_log(odd, 7, false).seen) << odd;
}
