// Removing builds from history (`history --forget/--prune-older-than/
// --clear`), where a history may live, and the one JSON of a recorded
// build that `history --build ID --json` and `run --summary-json` share.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>

#include <nlohmann/json.hpp>

#include "history/history.hpp"
#include "history/record_json.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"
#include "util/fs.hpp"

using namespace memgate;
using memgate::test::TempDir;

namespace {

BuildRecord build_at(double start_unix, int jobs, const std::string& cwd = "/src/a") {
  BuildRecord b;
  b.cwd = cwd;
  b.command = "make -j";
  b.start_unix = start_unix;
  b.end_unix = start_unix + 10;
  b.capacity = 8 * GiB;
  b.budget = 7 * GiB;
  b.slots = 4;
  b.counters = {{Counter::admitted, jobs}};
  for (int i = 0; i < jobs; ++i) {
    JobRecord j;
    j.key = {"g++", "g++:compile:" + cwd + "/f" + std::to_string(i) + ".o", "g++:compile", "f", 1};
    j.start_s = 1;
    j.end_s = 2 + i;
    j.peak_bytes = (100 + i) * MiB;
    j.predicted.peak = 128 * MiB;
    b.jobs.push_back(j);
  }
  return b;
}

std::unique_ptr<History> open_at(const std::string& path) {
  auto h = History::open(path);
  EXPECT_TRUE(h.ok()) << (h.ok() ? "" : h.error());
  return h.ok() ? std::move(*h) : nullptr;
}

using test::ScopedEnv;

}  // namespace

TEST(HistoryForget, OneBuildGoesWithItsJobsAndWhatWasLearnedFromThem) {
  TempDir d("forget");
  auto h = open_at(d / "h.db");
  ASSERT_TRUE(h);
  auto a = *h->save_build(build_at(1000, 2, "/src/a"));
  auto b = *h->save_build(build_at(2000, 3, "/src/b"));
  auto c = *h->save_build(build_at(3000, 1, "/src/c"));
  auto gone = h->forget({b, std::nullopt});
  ASSERT_TRUE(gone.ok()) << gone.error();
  EXPECT_EQ(gone->builds, 1);
  EXPECT_EQ(gone->jobs, 3);
  EXPECT_EQ(gone->builds_left, 2);
  EXPECT_FALSE(h->load_build(b).has_value());
  ASSERT_TRUE(h->load_build(a).has_value());
  EXPECT_EQ(h->load_build(a)->jobs.size(), 2u);
  EXPECT_EQ(h->list_builds(0).size(), 2u);
  // The predictor reads jobs, so nothing of /src/b predicts anything now.
  for (const JobRecord& j : h->jobs_for_prediction(-1)) EXPECT_EQ(j.key.identity.find("/src/b"), std::string::npos);
  EXPECT_EQ(h->jobs_for_prediction(-1).size(), 3u);
  EXPECT_FALSE(h->last_build_id({std::string("/src/b"), std::nullopt, false}).has_value());
  // An id that is not there removes nothing; ids are never reused.
  auto none = h->forget({99, std::nullopt});
  ASSERT_TRUE(none.ok());
  EXPECT_EQ(none->builds, 0);
  ASSERT_TRUE(h->forget({c, std::nullopt}).ok());
  EXPECT_GT(*h->save_build(build_at(4000, 1)), c);
}

TEST(HistoryForget, PruneRemovesBuildsThatStartedBeforeTheCutoff) {
  TempDir d("forget");
  auto h = open_at(d / "h.db");
  ASSERT_TRUE(h);
  (void)*h->save_build(build_at(1000, 2));
  (void)*h->save_build(build_at(2000, 0));
  auto kept = *h->save_build(build_at(3000, 4));
  auto gone = h->forget({std::nullopt, 2500.0});
  ASSERT_TRUE(gone.ok()) << gone.error();
  EXPECT_EQ(gone->builds, 2);
  EXPECT_EQ(gone->jobs, 2);
  EXPECT_EQ(gone->builds_left, 1);
  auto left = h->list_builds(0);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(left[0].id, kept);
  EXPECT_EQ(h->jobs_for_prediction(-1).size(), 4u);
}

TEST(HistoryForget, ClearRemovesEveryBuildAndKeepsImportedProfiles) {
  TempDir d("forget");
  auto h = open_at(d / "h.db");
  ASSERT_TRUE(h);
  (void)*h->save_build(build_at(1000, 2));
  (void)*h->save_build(build_at(2000, 3));
  JobProfile p;
  p.key = {"nvcc", "nvcc:compile:k.cu->k.o[sm_80]", "nvcc:compile[sm_80]", "k", 1};
  p.peak = 4 * GiB;
  p.runs = 3;
  ASSERT_TRUE(h->import_profiles({p}).ok());
  auto gone = h->forget({});
  ASSERT_TRUE(gone.ok()) << gone.error();
  EXPECT_EQ(gone->builds, 2);
  EXPECT_EQ(gone->jobs, 5);
  EXPECT_EQ(gone->builds_left, 0);
  EXPECT_TRUE(h->list_builds(0).empty());
  EXPECT_TRUE(h->jobs_for_prediction(-1).empty());
  ASSERT_EQ(h->imported_profiles().size(), 1u);  // not a build: `history import` put it there
  EXPECT_EQ(h->imported_profiles()[0].peak, 4 * GiB);
}

TEST(HistoryLocation, ANamedPathInADirectoryThatDoesNotExistIsAnErrorAndCreatesNothing) {
  TempDir d("location");
  ScopedEnv xdg("XDG_CACHE_HOME", (d / "xdg").c_str());
  const std::string path = d / "no/such/dir/h.db";
  auto h = History::open(path);
  ASSERT_FALSE(h.ok());
  EXPECT_NE(h.error().find("cannot use history database " + path + ": its directory " + d / "no/such/dir" +
                           " does not exist"),
            std::string::npos)
      << h.error();
  EXPECT_FALSE(path_exists(d / "no"));
  EXPECT_FALSE(History::check_location(path).ok());
  // A file where the directory should be.
  ASSERT_TRUE(write_file(d / "plain", "x", true).ok());
  auto under_file = History::check_location(d / "plain/h.db");
  ASSERT_FALSE(under_file.ok());
  EXPECT_NE(under_file.error().find("is not a directory"), std::string::npos) << under_file.error();
  // An existing directory is fine, and so is a bare name (the working directory).
  EXPECT_TRUE(History::check_location(d / "h.db").ok());
  EXPECT_TRUE(History::check_location("h.db").ok());
}

TEST(HistoryLocation, TheDefaultLocationIsCreated) {
  TempDir d("location");
  ScopedEnv xdg("XDG_CACHE_HOME", (d / "xdg").c_str());
  ScopedEnv env("MEMGATE_HISTORY", nullptr);
  const std::string path = History::resolve_path("");
  ASSERT_EQ(path, d / "xdg/memgate/history.db");
  auto h = open_at(path);
  ASSERT_TRUE(h);
  EXPECT_TRUE(std::filesystem::is_directory(d / "xdg/memgate"));
  EXPECT_EQ(std::filesystem::status(d / "xdg/memgate").permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_all);
}

TEST(BuildRecordJson, AStoredBuildAndTheSameBuildUnsavedDifferOnlyInTheId) {
  TempDir d("recordjson");
  auto h = open_at(d / "h.db");
  ASSERT_TRUE(h);
  BuildRecord b = build_at(1786000000.25, 3);
  b.jobs[1].where = Placement::offloaded;
  b.jobs[1].engine = "distcc";
  auto unsaved = nlohmann::json::parse(build_record_json(b));
  EXPECT_TRUE(unsaved["build"]["id"].is_null());
  auto id = *h->save_build(b);
  auto stored = nlohmann::json::parse(build_record_json(*h->load_build(id)));
  EXPECT_EQ(stored["build"]["id"], id);
  unsaved["build"]["id"] = id;
  EXPECT_EQ(unsaved, stored);
  // The keys CI dashboards read.
  for (const char* key : {"id", "start_unix", "end_unix", "wall_s", "exit_status", "peak_bytes", "budget_bytes",
                          "capacity_bytes", "slots", "cores", "kind", "job_count", "wait_s", "cwd", "command", "counters"})
    EXPECT_TRUE(stored["build"].contains(key)) << key;
  ASSERT_EQ(stored["jobs"].size(), 3u);
  EXPECT_EQ(stored["jobs"][0]["peak_bytes"], 102 * MiB);  // heaviest first
  EXPECT_EQ(stored["jobs"][1]["where"], "offloaded");
}
