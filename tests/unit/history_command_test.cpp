// `memgate history` run as users and tests call it, on a fresh history.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "history/build_ref.hpp"
#include "history_fixture.hpp"
#include "util/fs.hpp"

extern char** environ;

using namespace memgate;
using namespace memgate::history_test;

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
