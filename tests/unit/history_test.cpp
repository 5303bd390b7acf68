#include "history/history.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <spawn.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "history/build_ref.hpp"
#include "history/pending.hpp"
#include "history/schema.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"

extern char** environ;

using namespace memgate;
namespace fs = std::filesystem;

namespace {

class HistoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (fs::temp_directory_path() / "memgate-history-test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/history.db";  // only the default location gets its directory made
  }
  void TearDown() override {
    log::reset_sink();
    fs::remove_all(dir_);
  }

  std::unique_ptr<History> open() {
    auto h = History::open(path_);
    EXPECT_TRUE(h.ok()) << (h.ok() ? "" : h.error());
    return h.ok() ? std::move(*h) : nullptr;
  }

  std::string dir_, path_;
};

JobRecord sample_job(int i) {
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

BuildRecord sample_build(const std::string& cwd = "/home/dev/flash-attention",
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

void expect_same_job(const JobRecord& a, const JobRecord& b) {
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

std::int64_t count_rows(const std::string& path, const char* table) {
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

}  // namespace

TEST_F(HistoryTest, RoundTripsEveryField) {
  auto h = open();
  ASSERT_TRUE(h);
  BuildRecord b = sample_build();
  auto id = h->save_build(b);
  ASSERT_TRUE(id.ok()) << id.error();
  EXPECT_GT(*id, 0);
  auto back = h->load_build(*id);
  ASSERT_TRUE(back);
  EXPECT_EQ(back->id, *id);
  EXPECT_EQ(back->cwd, b.cwd);
  EXPECT_EQ(back->command, b.command);
  EXPECT_DOUBLE_EQ(back->start_unix, b.start_unix);
  EXPECT_DOUBLE_EQ(back->end_unix, b.end_unix);
  EXPECT_EQ(back->exit_status, b.exit_status);
  EXPECT_EQ(back->capacity, b.capacity);
  EXPECT_EQ(back->budget, b.budget);
  EXPECT_EQ(back->slots, b.slots);
  EXPECT_EQ(back->peak_bytes, b.peak_bytes);
  EXPECT_EQ(back->counters, b.counters);
  ASSERT_EQ(back->memory.size(), b.memory.size());
  for (size_t i = 0; i < b.memory.size(); ++i) {
    EXPECT_DOUBLE_EQ(back->memory[i].t_s, b.memory[i].t_s);
    EXPECT_EQ(back->memory[i].bytes, b.memory[i].bytes);
  }
  ASSERT_EQ(back->events.size(), b.events.size());
  for (size_t i = 0; i < b.events.size(); ++i) {
    EXPECT_DOUBLE_EQ(back->events[i].t_s, b.events[i].t_s);
    EXPECT_EQ(back->events[i].kind, b.events[i].kind);
    EXPECT_EQ(back->events[i].job, b.events[i].job);
    EXPECT_EQ(back->events[i].reason, b.events[i].reason);
  }
  ASSERT_EQ(back->jobs.size(), b.jobs.size());
  for (size_t i = 0; i < b.jobs.size(); ++i) expect_same_job(back->jobs[i], b.jobs[i]);
  EXPECT_FALSE(h->load_build(*id + 100));
}

TEST_F(HistoryTest, ListsNewestFirstAndFiltersLastBuild) {
  auto h = open();
  ASSERT_TRUE(h);
  EXPECT_TRUE(h->list_builds(10).empty());
  EXPECT_FALSE(h->last_build_id({}));
  auto a1 = *h->save_build(sample_build("/src/a", "make -j", 2));
  auto b1 = *h->save_build(sample_build("/src/b", "make -j", 1));
  auto a2 = *h->save_build(sample_build("/src/a", "ninja", 0));
  auto a3 = *h->save_build(sample_build("/src/a", "make -j", 4));
  EXPECT_EQ(h->last_build_id({"/src/a", "make -j"}), a3);
  EXPECT_EQ(h->last_build_id({"/src/b", "make -j"}), b1);
  EXPECT_EQ(h->last_build_id({"/src/a", std::nullopt}), a3);
  EXPECT_EQ(h->last_build_id({std::nullopt, "ninja"}), a2);
  EXPECT_EQ(h->last_build_id({}), a3);
  EXPECT_FALSE(h->last_build_id({"/src/c", std::nullopt}));
  EXPECT_EQ(h->last_build_id({std::nullopt, "ninja", true}), std::nullopt) << "a2 gated no job";
  EXPECT_EQ(h->last_build_id({"/src/a", std::nullopt, true}), a3);
  EXPECT_LT(a1, b1);

  auto list = h->list_builds(3);
  ASSERT_EQ(list.size(), 3u);
  EXPECT_EQ(list[0].id, a3);
  EXPECT_EQ(list[1].id, a2);
  EXPECT_EQ(list[2].id, b1);
  EXPECT_EQ(list[0].job_count, 4);
  EXPECT_EQ(list[0].cwd, "/src/a");
  EXPECT_EQ(list[0].command, "make -j");
  EXPECT_DOUBLE_EQ(list[0].wall_s, 300.5);
  EXPECT_DOUBLE_EQ(list[0].wait_s, 61.5);  // the governor's wait_memory_ms counter
  EXPECT_EQ(list[0].budget, 28 * GiB);
  EXPECT_EQ(h->list_builds(0).size(), 4u);  // 0: no limit

  BuildRecord no_counter = sample_build("/src/d", "make", 2);
  no_counter.counters.clear();
  EXPECT_DOUBLE_EQ(summarize_build(no_counter).wait_s, 2 * 1.375);  // falls back to the jobs' waits
}

TEST_F(HistoryTest, JobsForPredictionComeFromTheNewestBuildsOldestFirst) {
  auto h = open();
  ASSERT_TRUE(h);
  for (int n : {1, 2, 3}) {
    BuildRecord b = sample_build("/src", "make", n);
    for (auto& j : b.jobs) j.key.stem = "build" + std::to_string(n);
    ASSERT_TRUE(h->save_build(b).ok());
  }
  auto jobs = h->jobs_for_prediction(2);
  ASSERT_EQ(jobs.size(), 5u);  // builds 2 and 3
  EXPECT_EQ(jobs.front().key.stem, "build2");
  EXPECT_EQ(jobs.back().key.stem, "build3");
  EXPECT_EQ(jobs.back().key.identity, sample_job(2).key.identity);
  EXPECT_EQ(jobs.back().peak_bytes, sample_job(2).peak_bytes);
  EXPECT_EQ(jobs.back().attempt_log.size(), 2u);
  EXPECT_EQ(jobs.back().profile.size(), sample_job(2).profile.size());  // the predictor learns its envelope
  EXPECT_EQ(h->jobs_for_prediction(100).size(), 6u);
}

TEST_F(HistoryTest, MigratesAnEmptyFile) {
  fs::create_directories(fs::path(path_).parent_path());
  ASSERT_TRUE(write_file(path_, "", true).ok());
  {
    auto h = open();
    ASSERT_TRUE(h);
    ASSERT_TRUE(h->save_build(sample_build()).ok());
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  sqlite3_stmt* st = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &st, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(st), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(st, 0), history_schema_version());
  EXPECT_EQ(history_schema_version(), static_cast<int>(history_migrations().size()));
  sqlite3_finalize(st);
  sqlite3_close(db);
  // Opening again does not migrate twice and keeps the data.
  auto again = open();
  ASSERT_TRUE(again);
  EXPECT_EQ(again->list_builds(10).size(), 1u);
}

// A v1 file (before jobs had a placement) is migrated in place,
// and its jobs read as local.
TEST_F(HistoryTest, JobsOfAVersion1FileReadAsLocal) {
  fs::create_directories(fs::path(path_).parent_path());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  std::string v1(history_migrations().front());
  ASSERT_EQ(sqlite3_exec(db, (v1 + "PRAGMA user_version = 1;").c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "INSERT INTO builds VALUES (1, '/src', 'make', 1, 2, 0, 1, 1, 1, 1, 1, 0, '{}', '[]', '[]');"
                         "INSERT INTO jobs (build_id, seq, identity, tool, klass, stem, cpu_weight, argv_digest, cwd) "
                         "VALUES (1, 0, 'gcc:compile:a.c->a.o', 'gcc', 'gcc:compile', 'a', 1, 'd', '/src');",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto h = open();
  ASSERT_TRUE(h);
  auto b = h->load_build(1);
  ASSERT_TRUE(b);
  ASSERT_EQ(b->jobs.size(), 1u);
  EXPECT_EQ(b->jobs[0].where, Placement::local);
  EXPECT_EQ(b->jobs[0].engine, "");
}

TEST_F(HistoryTest, FileFromANewerMemgateIsLeftAlone) {
  fs::create_directories(fs::path(path_).parent_path());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE future (x); PRAGMA user_version = 99;", nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto h = History::open(path_);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().find("newer"), std::string::npos) << h.error();
  EXPECT_TRUE(path_exists(path_));
}

// Found by fuzz_history: a negative user_version made the migration loop
// index its list at -2.
TEST_F(HistoryTest, FileWithANegativeSchemaVersionIsAnErrorNotACrash) {
  fs::create_directories(fs::path(path_).parent_path());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "CREATE TABLE t (x); PRAGMA user_version = -2;", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto h = History::open(path_);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().find("schema version -2"), std::string::npos) << h.error();
  EXPECT_TRUE(path_exists(path_));
}

// Found writing fuzz_history: stored JSON numbers beyond the integer they
// become (a counter of 1e300, a job index of 1e10) were cast anyway,
// which is undefined. They are now dropped, or read as the field's default.
TEST_F(HistoryTest, StoredNumbersOutOfRangeAreDroppedNotCast) {
  std::int64_t id = 0;
  {
    auto h = open();
    ASSERT_TRUE(h);
    auto saved = h->save_build(sample_build());
    ASSERT_TRUE(saved.ok()) << saved.error();
    id = *saved;
  }
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "UPDATE builds SET counters = '{\"admitted\":1e300,\"jobs\":-1e300,\"failed\":9223372036854775808,"
                         "\"frozen\":3.0}', memory = '[[1,1e300],[2,5],[3,1.5e19]]', "
                         "events = '[{\"t_s\":1,\"kind\":\"freeze\",\"job\":1e10}]';"
                         "UPDATE jobs SET attempt_log = '[{\"start_s\":0,\"end_s\":1,\"outcome\":\"ok\",\"peak_bytes\":1e300}]';",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  auto h = open();
  ASSERT_TRUE(h);
  auto b = h->load_build(id);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->counters, (Counters{{Counter::frozen, 3}}));
  ASSERT_EQ(b->memory.size(), 1u);
  EXPECT_EQ(b->memory[0].bytes, 5);
  ASSERT_EQ(b->events.size(), 1u);
  EXPECT_EQ(b->events[0].job, -1);
  ASSERT_FALSE(b->jobs.empty());
  ASSERT_EQ(b->jobs[0].attempt_log.size(), 1u);
  EXPECT_EQ(b->jobs[0].attempt_log[0].peak_bytes, 0);
}

TEST_F(HistoryTest, GarbageFileIsMovedAsideWithAWarning) {
  fs::create_directories(fs::path(path_).parent_path());
  const std::string garbage(5000, '\x5a');
  ASSERT_TRUE(write_file(path_, garbage, true).ok());
  std::string warnings;
  log::set_sink([&](log::Level, std::string_view line) { warnings += line; });
  auto h = open();
  ASSERT_TRUE(h);
  EXPECT_NE(warnings.find("memgate: warning: history database " + path_ + " is corrupt; moved it to " + path_ +
                          ".corrupt-"),
            std::string::npos)
      << warnings;
  EXPECT_NE(warnings.find("starting a new one"), std::string::npos);
  int moved = 0;
  for (const auto& e : fs::directory_iterator(fs::path(path_).parent_path())) {
    if (e.path().filename().string().rfind("history.db.corrupt-", 0) == 0) {
      ++moved;
      EXPECT_EQ(read_file(e.path().string()), garbage);
    }
  }
  EXPECT_EQ(moved, 1);
  auto id = h->save_build(sample_build());
  ASSERT_TRUE(id.ok());
  EXPECT_TRUE(h->load_build(*id));
}

TEST_F(HistoryTest, DamagedPagesAreMovedAside) {
  {
    auto h = open();
    ASSERT_TRUE(h);
    for (int i = 0; i < 5; ++i) ASSERT_TRUE(h->save_build(sample_build("/s", "make", 50)).ok());
  }  // the last connection checkpoints the WAL into the file
  {
    std::fstream f(path_, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f.good());
    f.seekp(4096);  // page 2 onwards: the tables' b-trees
    const std::string junk(16384, '\xff');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  std::string warnings;
  log::set_sink([&](log::Level, std::string_view line) { warnings += line; });
  auto h = open();
  ASSERT_TRUE(h);
  EXPECT_NE(warnings.find("is corrupt; moved it to"), std::string::npos) << warnings;
  EXPECT_TRUE(h->list_builds(10).empty());
}

TEST_F(HistoryTest, SavesALargeBuildInOneTransaction) {
  auto h = open();
  ASSERT_TRUE(h);
  auto id = h->save_build(sample_build("/big", "ninja", 10000));
  ASSERT_TRUE(id.ok()) << id.error();
  EXPECT_EQ(count_rows(path_, "jobs"), 10000);
  auto back = h->load_build(*id);
  ASSERT_TRUE(back);
  ASSERT_EQ(back->jobs.size(), 10000u);
  expect_same_job(back->jobs[9999], sample_job(9999));
}

// A lock held past the timeout is an error for the caller to bypass, not
// corruption: the file stays, and reading still works (WAL).
TEST_F(HistoryTest, LockedBeyondTheTimeoutIsAnError) {
  {
    auto h = open();
    ASSERT_TRUE(h);
    ASSERT_TRUE(h->save_build(sample_build()).ok());
  }
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  std::string warnings;
  log::set_sink([&](log::Level, std::string_view line) { warnings += line; });
  auto h = History::open(path_, 50);
  ASSERT_TRUE(h.ok()) << h.error();
  EXPECT_EQ((*h)->list_builds(10).size(), 1u);
  auto saved = (*h)->save_build(sample_build());
  EXPECT_FALSE(saved.ok());
  EXPECT_NE(saved.error().find(path_), std::string::npos) << saved.error();
  EXPECT_EQ(warnings.find("corrupt"), std::string::npos);
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);
  EXPECT_TRUE((*h)->save_build(sample_build()).ok());  // and works once the lock is gone
  EXPECT_EQ((*h)->list_builds(10).size(), 2u);
}

// A run whose save hits a held lock puts its record in
// a side file, and the next run merges it: the build is not lost.
TEST_F(HistoryTest, ARecordTheLockedDatabaseRefusedIsMergedLater) {
  {
    auto h = open();
    ASSERT_TRUE(h);
    ASSERT_TRUE(h->save_build(sample_build()).ok());
  }
  sqlite3* other = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &other), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr), SQLITE_OK);
  auto h = History::open(path_, 50);
  ASSERT_TRUE(h.ok()) << h.error();
  BuildRecord locked_out = sample_build();
  locked_out.command = "make locked-out";
  locked_out.start_unix += 10;
  ASSERT_FALSE((*h)->save_build(locked_out).ok());
  auto side = save_pending(path_, locked_out);
  ASSERT_TRUE(side.ok()) << side.error();
  EXPECT_EQ(side->rfind(path_ + ".pending-", 0), 0u) << *side;
  EXPECT_EQ(merge_pending(**h, path_), 0);  // still locked: kept for later
  EXPECT_TRUE(fs::exists(*side));
  sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(other);

  EXPECT_EQ(merge_pending(**h, path_), 1);
  EXPECT_FALSE(fs::exists(*side));
  auto builds = (*h)->list_builds(10);
  ASSERT_EQ(builds.size(), 2u);
  EXPECT_EQ(builds[0].command, "make locked-out");
  auto merged = (*h)->load_build(builds[0].id);
  ASSERT_TRUE(merged);
  EXPECT_EQ(merged->jobs.size(), locked_out.jobs.size());
  EXPECT_EQ(merge_pending(**h, path_), 0);  // nothing twice
  for (const auto& e : fs::directory_iterator(fs::path(path_).parent_path()))
    EXPECT_EQ(e.path().filename().string().find(".pending-"), std::string::npos) << e.path();
}

// The side file is created exclusively: a link planted at the name the
// first attempt would use is skipped, never written through.
TEST_F(HistoryTest, PendingFileNeverFollowsAPlantedLink) {
  ASSERT_TRUE(open());
  std::string victim = dir_ + "/victim";
  { std::ofstream(victim) << "keep"; }
  std::string planted = fmt::format("{}.pending-{}-0", path_, ::getpid());
  ASSERT_EQ(::symlink(victim.c_str(), planted.c_str()), 0);
  auto side = save_pending(path_, sample_build());
  ASSERT_TRUE(side.ok()) << side.error();
  EXPECT_NE(*side, planted);
  std::ifstream in(victim);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(text, "keep");
}

TEST_F(HistoryTest, UnusablePathIsAnError) {
  fs::create_directories(path_);  // a directory where the file should be
  auto h = History::open(path_);
  EXPECT_FALSE(h.ok());
  EXPECT_TRUE(fs::is_directory(path_));
}

// Everything done to the history is done by path, often as root: a
// directory another user can write (and swap the database, its WAL or a
// moved-aside copy in) is refused before anything is opened there.
TEST_F(HistoryTest, ADirectoryOthersCanWriteIsRefused) {
  ASSERT_EQ(::chmod(dir_.c_str(), 01777), 0);
  auto h = History::open(path_);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.error(), "cannot use history database " + path_ + ": " + dir_ +
                           ": it is writable by group or others (memgate keeps a history only where nobody but root "
                           "or you can write)");
  EXPECT_FALSE(fs::exists(path_)) << "nothing was created there";
  ASSERT_EQ(::chmod(dir_.c_str(), 0700), 0);
  EXPECT_TRUE(open());
}

// Two processes save many builds into one file at the same time.
TEST_F(HistoryTest, ConcurrentWritersLoseNoRows) {
  { ASSERT_TRUE(open()); }  // create it, so both children start on the same file
  constexpr int kBuilds = 40, kJobs = 25;
  int gate[2];
  ASSERT_EQ(::pipe(gate), 0);
  pid_t kids[2];
  for (pid_t& kid : kids) {
    kid = ::fork();
    ASSERT_GE(kid, 0);
    if (kid == 0) {
      ::close(gate[1]);
      char c;
      (void)!::read(gate[0], &c, 1);  // returns when the parent closes its end
      auto h = History::open(path_);
      if (!h.ok()) ::_exit(2);
      for (int i = 0; i < kBuilds; ++i)
        if (!(*h)->save_build(sample_build("/src", "make -j", kJobs)).ok()) ::_exit(3);
      ::_exit(0);
    }
  }
  ::close(gate[0]);
  ::close(gate[1]);  // both start now
  for (pid_t kid : kids) {
    int status = 0;
    ASSERT_EQ(::waitpid(kid, &status, 0), kid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), 0);
  }
  EXPECT_EQ(count_rows(path_, "builds"), 2 * kBuilds);
  EXPECT_EQ(count_rows(path_, "jobs"), 2 * kBuilds * kJobs);
}

namespace {

// Sets environment variables for one test and puts them back after.
class EnvGuard {
 public:
  void set(const char* name, const char* value) {
    const char* old = std::getenv(name);
    saved_.emplace_back(name, old ? std::optional<std::string>(old) : std::nullopt);
    if (value) ::setenv(name, value, 1);
    else ::unsetenv(name);
  }
  ~EnvGuard() {
    for (auto it = saved_.rbegin(); it != saved_.rend(); ++it) {
      if (it->second) ::setenv(it->first.c_str(), it->second->c_str(), 1);
      else ::unsetenv(it->first.c_str());
    }
  }

 private:
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace

TEST(HistoryPath, FlagThenEnvironmentThenCache) {
  EnvGuard env;
  env.set("MEMGATE_HISTORY", nullptr);
  env.set("XDG_CACHE_HOME", "/xdg/cache");
  env.set("HOME", "/home/someone");
  EXPECT_EQ(History::default_path(), "/xdg/cache/memgate/history.db");
  EXPECT_EQ(History::resolve_path(""), "/xdg/cache/memgate/history.db");
  env.set("MEMGATE_HISTORY", "/env/h.db");
  EXPECT_EQ(History::resolve_path(""), "/env/h.db");
  EXPECT_EQ(History::resolve_path("/flag/h.db"), "/flag/h.db");
  env.set("MEMGATE_HISTORY", "");
  env.set("XDG_CACHE_HOME", "");
  EXPECT_EQ(History::resolve_path(""), "/home/someone/.cache/memgate/history.db");
  env.set("XDG_CACHE_HOME", "relative/cache");  // the XDG spec says to ignore relative paths
  EXPECT_EQ(History::default_path(), "/home/someone/.cache/memgate/history.db");
}

// --- `memgate history` as users and tests call it ---

namespace {

struct Output {
  int status = -1;
  std::string out, err;
};

Output run_memgate(const std::vector<std::string>& args, const std::string& dir) {
  std::vector<std::string> full = {MEMGATE_BINARY};
  full.insert(full.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : full) argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string out_path = dir + "/stdout", err_path = dir + "/stderr";
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = 0;
  Output o;
  int rc = posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    ADD_FAILURE() << "cannot run " << full[0] << ": " << std::strerror(rc);
    return o;
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  o.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  o.out = read_file(out_path).value_or("");
  o.err = read_file(err_path).value_or("");
  return o;
}

}  // namespace

TEST_F(HistoryTest, CommandWithoutHistorySaysSo) {
  auto text = run_memgate({"history", "--history", path_}, dir_);
  EXPECT_EQ(text.status, 0);
  EXPECT_NE(text.out.find("No builds recorded yet"), std::string::npos) << text.out;
  auto json = run_memgate({"history", "--json", "--history", path_}, dir_);
  EXPECT_EQ(json.status, 0);
  EXPECT_EQ(nlohmann::json::parse(json.out), nlohmann::json::parse(R"({"builds": []})"));
  EXPECT_FALSE(path_exists(path_));  // listing nothing creates nothing
}

TEST_F(HistoryTest, CommandListsBuildsAsJson) {
  std::int64_t id = 0;
  {
    auto h = open();
    ASSERT_TRUE(h);
    ASSERT_TRUE(h->save_build(sample_build("/src/a", "make -j", 2)).ok());
    id = *h->save_build(sample_build());
  }
  auto r = run_memgate({"history", "--json", "--history", path_}, dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_EQ(j["builds"].size(), 2u);
  const auto& b = j["builds"][0];
  EXPECT_EQ(b["id"], id);
  EXPECT_DOUBLE_EQ(b["wall_s"].get<double>(), 300.5);
  EXPECT_EQ(b["peak_bytes"], 25 * GiB + 12345);
  EXPECT_EQ(b["job_count"], 3);
  EXPECT_EQ(b["cwd"], "/home/dev/flash-attention");
  EXPECT_EQ(b["command"], "pip install . --no-build-isolation");
  EXPECT_DOUBLE_EQ(b["start_unix"].get<double>(), 1786000000.25);
  EXPECT_EQ(b["exit_status"], 0);
  EXPECT_EQ(b["budget_bytes"], 28 * GiB);
  EXPECT_DOUBLE_EQ(b["wait_s"].get<double>(), 61.5);
  auto limited = run_memgate({"history", "--json", "--limit", "1", "--history", path_}, dir_);
  EXPECT_EQ(nlohmann::json::parse(limited.out)["builds"].size(), 1u);
  auto text = run_memgate({"history", "--history", path_}, dir_);
  EXPECT_EQ(text.status, 0);
  EXPECT_NE(text.out.find("pip install . --no-build-isolation"), std::string::npos) << text.out;
  EXPECT_NE(text.out.find("25.0 GiB"), std::string::npos) << text.out;
}

TEST_F(HistoryTest, CommandShowsOneBuildsJobsHeaviestFirst) {
  {
    auto h = open();
    ASSERT_TRUE(h);
    ASSERT_TRUE(h->save_build(sample_build("/src/a", "make -j", 4)).ok());
  }
  auto r = run_memgate({"history", "--json", "--build", "last", "--history", path_}, dir_);
  ASSERT_EQ(r.status, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["build"]["command"], "make -j");
  EXPECT_EQ(j["build"]["job_count"], 4);
  ASSERT_EQ(j["jobs"].size(), 4u);
  const auto& job = j["jobs"][0];
  EXPECT_EQ(job["identity"], sample_job(3).key.identity);  // the heaviest
  EXPECT_EQ(job["tool"], "nvcc");
  EXPECT_EQ(job["predicted_peak_bytes"], 4 * GiB + 3);
  EXPECT_EQ(job["peak_bytes"], 4263821312 + 3);
  EXPECT_DOUBLE_EQ(job["cpu_s"].get<double>(), 141.09);
  EXPECT_DOUBLE_EQ(job["wall_s"].get<double>(), 127.5625);
  EXPECT_EQ(job["attempts"], 2);
  EXPECT_EQ(job["exit_status"], 0);
  EXPECT_DOUBLE_EQ(job["wait_s"].get<double>(), 1.375);
  EXPECT_EQ(j["jobs"][1]["identity"], sample_job(2).key.identity);
  auto text = run_memgate({"history", "--build", "1", "--history", path_}, dir_);
  EXPECT_EQ(text.status, 0);
  EXPECT_NE(text.out.find(sample_job(3).key.identity), std::string::npos) << text.out;
  EXPECT_LT(text.out.find(sample_job(3).key.identity), text.out.find(sample_job(0).key.identity));
}

TEST_F(HistoryTest, CommandRejectsUnknownBuild) {
  { ASSERT_TRUE(open()); }
  auto r = run_memgate({"history", "--build", "42", "--history", path_}, dir_);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("memgate: error: no build #42 in " + path_), std::string::npos) << r.err;
  auto last = run_memgate({"history", "--build", "last", "--history", path_}, dir_);
  EXPECT_EQ(last.status, 1);
  auto bad = run_memgate({"history", "--build", "yesterday", "--history", path_}, dir_);
  EXPECT_EQ(bad.status, 2) << "a malformed --build is a usage error";
}

TEST_F(HistoryTest, LastSkipsBuildsWithoutJobsAndPrefersThisDirectory) {
  auto h = open();
  ASSERT_TRUE(h);
  auto here = *h->save_build(sample_build("/src/a", "make -j", 2));
  auto elsewhere = *h->save_build(sample_build("/src/b", "make -j", 3));
  (void)*h->save_build(sample_build("/src/a", "true", 0));  // memgate run -- true
  auto a = load_build_ref(*h, "last", "/src/a", path_);
  ASSERT_TRUE(a.ok()) << a.error();
  EXPECT_EQ(a->build.id, here);
  EXPECT_EQ(a->description, fmt::format("build #{}, the last in this directory that compiled", here));
  auto c = load_build_ref(*h, "last", "/src/c", path_);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->build.id, elsewhere);
  EXPECT_NE(c->description.find("the last anywhere"), std::string::npos);
  EXPECT_EQ(load_build_ref(*h, std::to_string(here), "/x", path_)->build.id, here);
  EXPECT_FALSE(load_build_ref(*h, "99", "/x", path_).ok());
  EXPECT_FALSE(load_build_ref(*h, "yesterday", "/x", path_).ok());
  EXPECT_TRUE(is_build_ref("last"));
  EXPECT_TRUE(is_build_ref("12"));
  EXPECT_FALSE(is_build_ref("-1"));
  EXPECT_FALSE(is_build_ref("0x10"));
}

// A configure step, a relink and a no-op are recorded as such, and "last"
// (plan, report, the progress total) passes over them, saying so.
TEST_F(HistoryTest, BuildKindsAreRecordedAndLastTakesTheBuildThatCompiled) {
  auto h = open();
  ASSERT_TRUE(h);
  const auto full = *h->save_build(sample_build("/src/a", "make -j", 3));
  BuildRecord configure = sample_build("/src/a", "cmake -S . -B build", 2);
  for (auto& j : configure.jobs) j.key.klass = "cc:probe";
  const auto conf_id = *h->save_build(configure);
  BuildRecord relink = sample_build("/src/a", "make -j", 2);
  for (auto& j : relink.jobs) j.key.klass = "c++:link";
  relink.cores = 2;
  const auto relink_id = *h->save_build(relink);
  EXPECT_EQ(h->load_build(full)->kind, "build");
  EXPECT_EQ(h->load_build(conf_id)->kind, "configure");
  EXPECT_EQ(h->load_build(relink_id)->kind, "relink");
  EXPECT_EQ(h->load_build(relink_id)->cores, 2);
  EXPECT_EQ(h->last_build_id({"/src/a", std::nullopt, true}), relink_id);
  EXPECT_EQ(h->last_build_id({"/src/a", std::nullopt, true, false, true}), full);
  auto last = load_build_ref(*h, "last", "/src/a", path_);
  ASSERT_TRUE(last.ok()) << last.error();
  EXPECT_EQ(last->build.id, full);
  EXPECT_EQ(last->description,
            fmt::format("build #{}, the last in this directory that compiled (#{} after it was a relink step, not "
                        "taken by default; --build {} takes it)",
                        full, relink_id, relink_id));
  EXPECT_EQ(load_build_ref(*h, std::to_string(conf_id), "/src/a", path_)->build.kind, "configure");
}

// A failed or interrupted build is no progress reference.
TEST_F(HistoryTest, SucceededSkipsFailedAndInterruptedBuilds) {
  auto h = open();
  ASSERT_TRUE(h);
  const auto ok = *h->save_build(sample_build("/src/a", "make -j", 4));
  BuildRecord failed = sample_build("/src/a", "make -j", 3);
  failed.exit_status = 130;
  const auto interrupted = *h->save_build(failed);
  EXPECT_EQ(h->last_build_id({"/src/a", "make -j", true}), interrupted);
  EXPECT_EQ(h->last_build_id({"/src/a", "make -j", true, true}), ok) << "the Ctrl-C'd build is skipped";
}
