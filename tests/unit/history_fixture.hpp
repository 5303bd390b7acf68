// A fresh history in a temporary directory for each test, and sample
// jobs to store in it (history_test.cpp, history_command_test.cpp).
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>

#include "history/history.hpp"
#include "util/log.hpp"

namespace memgate::history_test {

class HistoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "memgate-history-test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/history.db";  // only the default location gets its directory made
  }
  void TearDown() override {
    log::reset_sink();
    std::filesystem::remove_all(dir_);
  }

  std::unique_ptr<History> open() {
    auto h = History::open(path_);
    EXPECT_TRUE(h.ok()) << (h.ok() ? "" : h.error());
    return h.ok() ? std::move(*h) : nullptr;
  }

  std::string dir_, path_;
};

inline JobRecord sample_job(int i) {
  JobRecord j;
  j.key = {"nvcc", "nvcc:compile:src/k" + std::to_string(i) + ".cu->k.o[sm_80]", "nvcc:compile[sm_80]",
           "k" + std::to_string(i), 2};
  j.argv_digest = "0123456789abcdef";
  j.cwd = "/tmp/pip-req-build-x/build";
  j.predicted = {Bytes(4) * GiB + i, 100.5, 95.25, 0.3, 1 * GiB, 0.75, PredictionSource::similar, {}};
  j.submit_s = 1.125 + i;
  j.start_s = 2.5 + i;
  j.end_s = 130.0625 + i;
  j.wait_s = 1.375;
  j.frozen_s = 0.5;
  j.cpu_s = 141.09;
  j.peak_bytes = 4263821312 + i;
  j.t_peak_s = 19.89;
  j.peak_over_frac = 0.187;
  j.after_peak_bytes = 1646000000;
  j.exit_status = i == 2 ? 1 : 0;
  j.attempts = 2;
  j.attempt_log = {{2.5, 20.0, Outcome::oom, 3 * GiB, 16.5}, {21.0, 130.0625 + i, Outcome::ok, 4263821312 + i, 108.25}};
  // A point without its CPU clock ({t, bytes}) among points with one.
  j.profile = {{0, 104316928, 0}, {1.5, 519000000}, {19, 4264636416, 17.25}, {107.03, 438000000, 108.25}};
  if (i == 1) {
    j.where = Placement::offloaded;
    j.engine = "distcc";
  }
  return j;
}

inline BuildRecord sample_build(const std::string& cwd = "/home/dev/flash-attention",
                         const std::string& command = "pip install . --no-build-isolation", int jobs = 3) {
  BuildRecord b;
  b.cwd = cwd;
  b.command = command;
  b.start_unix = 1786000000.25;
  b.end_unix = 1786000300.75;
  b.exit_status = 0;
  b.capacity = 30 * GiB;
  b.budget = 28 * GiB;
  b.slots = 8;
  b.peak_bytes = 25 * GiB + 12345;
  b.counters = {{Counter::admitted, 5}, {Counter::oom_killed, 1}, {Counter::wait_memory_ms, 61500}};
  b.memory = {{0, 100}, {0.5, 2 * GiB}, {300.5, 1 * GiB}};
  b.events = {{12.5, EventKind::freeze, 1, "PSI some avg10 31%"}, {14, EventKind::thaw, 1, "memory back"},
              {99, EventKind::pressure, -1, ""}};
  for (int i = 0; i < jobs; ++i) b.jobs.push_back(sample_job(i));
  return b;
}

inline void expect_same_job(const JobRecord& a, const JobRecord& b) {
  EXPECT_EQ(a.key.tool, b.key.tool);
  EXPECT_EQ(a.key.identity, b.key.identity);
  EXPECT_EQ(a.key.klass, b.key.klass);
  EXPECT_EQ(a.key.stem, b.key.stem);
  EXPECT_EQ(a.key.cpu_weight, b.key.cpu_weight);
  EXPECT_EQ(a.argv_digest, b.argv_digest);
  EXPECT_EQ(a.cwd, b.cwd);
  EXPECT_EQ(a.predicted.peak, b.predicted.peak);
  EXPECT_DOUBLE_EQ(a.predicted.wall_s, b.predicted.wall_s);
  EXPECT_DOUBLE_EQ(a.predicted.cpu_s, b.predicted.cpu_s);
  EXPECT_DOUBLE_EQ(a.predicted.peak_over_frac, b.predicted.peak_over_frac);
  EXPECT_EQ(a.predicted.after_peak, b.predicted.after_peak);
  EXPECT_DOUBLE_EQ(a.predicted.confidence, b.predicted.confidence);
  EXPECT_EQ(a.predicted.source, b.predicted.source);
  EXPECT_DOUBLE_EQ(a.submit_s, b.submit_s);
  EXPECT_DOUBLE_EQ(a.start_s, b.start_s);
  EXPECT_DOUBLE_EQ(a.end_s, b.end_s);
  EXPECT_DOUBLE_EQ(a.wait_s, b.wait_s);
  EXPECT_DOUBLE_EQ(a.frozen_s, b.frozen_s);
  EXPECT_DOUBLE_EQ(a.cpu_s, b.cpu_s);
  EXPECT_EQ(a.peak_bytes, b.peak_bytes);
  EXPECT_DOUBLE_EQ(a.t_peak_s, b.t_peak_s);
  EXPECT_DOUBLE_EQ(a.peak_over_frac, b.peak_over_frac);
  EXPECT_EQ(a.after_peak_bytes, b.after_peak_bytes);
  EXPECT_EQ(a.exit_status, b.exit_status);
  EXPECT_EQ(a.attempts, b.attempts);
  EXPECT_EQ(a.where, b.where);
  EXPECT_EQ(a.engine, b.engine);
  ASSERT_EQ(a.attempt_log.size(), b.attempt_log.size());
  for (size_t i = 0; i < a.attempt_log.size(); ++i) {
    EXPECT_DOUBLE_EQ(a.attempt_log[i].start_s, b.attempt_log[i].start_s);
    EXPECT_DOUBLE_EQ(a.attempt_log[i].end_s, b.attempt_log[i].end_s);
    EXPECT_EQ(a.attempt_log[i].outcome, b.attempt_log[i].outcome);
    EXPECT_EQ(a.attempt_log[i].peak_bytes, b.attempt_log[i].peak_bytes);
    EXPECT_DOUBLE_EQ(a.attempt_log[i].cpu_s, b.attempt_log[i].cpu_s);
  }
  ASSERT_EQ(a.profile.size(), b.profile.size());
  for (size_t i = 0; i < a.profile.size(); ++i) {
    EXPECT_DOUBLE_EQ(a.profile[i].t_s, b.profile[i].t_s);
    EXPECT_EQ(a.profile[i].bytes, b.profile[i].bytes);
    EXPECT_DOUBLE_EQ(a.profile[i].cpu_s, b.profile[i].cpu_s);
  }
}

inline std::int64_t count_rows(const std::string& path, const char* table) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  std::string sql = std::string("SELECT count(*) FROM ") + table;
  EXPECT_EQ(sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr), SQLITE_OK);
  std::int64_t n = -1;
  if (sqlite3_step(st) == SQLITE_ROW) n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_close(db);
  return n;
}

}  // namespace memgate::history_test
