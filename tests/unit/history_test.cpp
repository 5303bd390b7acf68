// The history database: storage, schema migration, damage, locking and
// concurrency; the `memgate history` command: history_command_test.cpp.
#include "history/history.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <fmt/core.h>

#include "history/pending.hpp"
#include "history/schema.hpp"
#include "history_fixture.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"

using namespace memgate;
namespace fs = std::filesystem;
using namespace memgate::history_test;

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
