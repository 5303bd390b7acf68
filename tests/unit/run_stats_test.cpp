#include "run/run_stats.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>

#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"

using namespace memgate;

TEST(RunStats, QuantilesAreNearestRank) {
  std::vector<double> v;
  for (int i = 100; i >= 1; --i) v.push_back(i);
  EXPECT_EQ(quantile(v, 0.5), 50);
  EXPECT_EQ(quantile(v, 0.99), 99);
  EXPECT_EQ(quantile(v, 1.0), 100);
  EXPECT_EQ(quantile(v, 0.0), 1);
  EXPECT_EQ(quantile({}, 0.5), 0);
}

TEST(RunStats, TheJsonCarriesTicksWaitsAndTheReaction) {
  RunStats s;
  s.tick(0.001, 0.0005);
  s.tick(0.003, 0.002);
  s.scan(0.004, 0.0025);
  s.loop_turn();
  // Requested at 1 s, a slot freed at 4 s, granted at 4.5 s.
  s.released(4.0);
  s.grant(1.0, 4.5);
  auto j = nlohmann::json::parse(s.json(2.0, 5120, 10.0, 1000));
  EXPECT_DOUBLE_EQ(j["cpu_ms_per_job"].get<double>(), 2.0);
  EXPECT_EQ(j["tick_n"].get<int>(), 2);
  EXPECT_DOUBLE_EQ(j["tick_max_ms"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(j["tick_cpu_max_ms"].get<double>(), 2.0);
  EXPECT_EQ(j["scan_n"].get<int>(), 1);
  EXPECT_DOUBLE_EQ(j["scan_p99_ms"].get<double>(), 4.0);
  EXPECT_DOUBLE_EQ(j["scan_cpu_max_ms"].get<double>(), 2.5);
  EXPECT_DOUBLE_EQ(j["wait_p50_ms"].get<double>(), 3500.0);
  EXPECT_DOUBLE_EQ(j["reaction_p50_ms"].get<double>(), 500.0);
  EXPECT_EQ(j["loop_turns"].get<int>(), 1);
  EXPECT_EQ(j["maxrss_kib"].get<int>(), 5120);
}

// memgate's own cost goes to a file only when MEMGATE_RUN_STATS names one.
TEST(RunStats, WrittenWhereMemgateRunStatsSays) {
  test::TempDir d("run-stats");
  const std::string path = d / "stats.json";
  RunStats s;
  s.tick(0.001, 0.001);
  {
    test::ScopedEnv unset("MEMGATE_RUN_STATS", nullptr);
    s.write(3, 7);
  }
  EXPECT_FALSE(std::ifstream(path).good());
  test::ScopedEnv set("MEMGATE_RUN_STATS", path.c_str());
  s.write(3, 7);
  auto j = nlohmann::json::parse(std::ifstream(path));
  EXPECT_EQ(j["jobs"].get<int>(), 7);
  EXPECT_DOUBLE_EQ(j["wall_s"].get<double>(), 3);
  EXPECT_GT(j["maxrss_kib"].get<int>(), 0) << "this process's own";
}
