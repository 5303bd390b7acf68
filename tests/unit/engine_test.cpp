// Distributed engines (engine/engine.hpp): which programs are engines,
// which jobs they take, how many jobs distcc may have out, and what its
// log says.
#include "engine/engine.hpp"

#include <gtest/gtest.h>

#include <map>

#include "engine/distcc.hpp"

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

TEST(Engine, DistccAndIceccSendJobsAwaySccacheIsALauncherHere) {
  EXPECT_NE(sending_engine("distcc"), nullptr);
  EXPECT_EQ(sending_engine("/usr/bin/distcc"), find_engine("distcc"));
  EXPECT_EQ(sending_engine("pump"), find_engine("distcc"));
  EXPECT_NE(sending_engine("icecc"), nullptr);
  EXPECT_EQ(sending_engine("sccache"), nullptr);
  EXPECT_NE(find_engine("sccache"), nullptr) << "--offload sccache";
  EXPECT_EQ(find_engine("ccache"), nullptr);
  EXPECT_EQ(find_engine("gcc"), nullptr);
  EXPECT_EQ(engine_names(), (std::vector<std::string>{"distcc", "icecc", "sccache"}));
}

TEST(Engine, RemoteSlotsComeFromTheEnginesOwnConfiguration) {
  std::map<std::string, std::string> env{{"DISTCC_HOSTS", "127.0.0.1:3632/8 localhost/2"}};
  EnvLookup lookup = [&](const char* name) -> const char* {
    auto it = env.find(name);
    return it == env.end() ? nullptr : it->second.c_str();
  };
  EXPECT_EQ(find_engine("distcc")->remote_slots(lookup), 8);
  EXPECT_EQ(find_engine("icecc")->remote_slots(lookup), 0) << "its scheduler knows";
  env.clear();
  EXPECT_EQ(find_engine("distcc")->remote_slots(lookup), 0);
}

TEST(Engine, AnOffloadedCommandRunsBehindTheEngine) {
  EXPECT_EQ(find_engine("distcc")->command("/usr/bin/distcc", {"gcc", "-c", "a.c"}),
            (std::vector<std::string>{"/usr/bin/distcc", "gcc", "-c", "a.c"}));
  JobKey local = key("gcc", "gcc:compile");
  EXPECT_EQ(find_engine("icecc")->key(local).klass, "icecc>gcc:compile");
  EXPECT_NE(find_engine("distcc")->watch(), nullptr) << "distcc's log is its fallback signal";
  EXPECT_EQ(find_engine("icecc")->watch(), nullptr);
}

TEST(Engine, OnlyCFamilyCompilesAreTaken) {
  const Engine& e = *find_engine("distcc");
  EXPECT_TRUE(e.takes(key("gcc", "gcc:compile")));
  EXPECT_TRUE(e.takes(key("clang++", "clang++:compile")));
  EXPECT_FALSE(e.takes(key("g++", "g++:link")));
  EXPECT_FALSE(e.takes(key("nvcc", "nvcc:compile[sm_80]")));
  EXPECT_FALSE(e.takes(key("rustc", "rustc:compile")));
  EXPECT_FALSE(e.takes(key("ld", "ld:link")));
  EXPECT_FALSE(e.takes(key("gcc", "distcc>gcc:compile"))) << "already an engine's";
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
