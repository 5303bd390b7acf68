// What a run sets up before its build starts: what it may use of the
// machine and the governor's configuration (run/machine.hpp), and what it
// predicts from (run/knowledge.hpp: history, priors, the progress total).
#include <gtest/gtest.h>

#include "core/job_class.hpp"
#include "history/profiles.hpp"
#include "run/knowledge.hpp"
#include "run/machine.hpp"
#include "support/scoped_env.hpp"
#include "support/temp_dir.hpp"

using namespace memgate;
using memgate::test::ScopedEnv;
using memgate::test::TempDir;

TEST(RunMachine, TheUsersMistakesAreErrors) {
  RunOptions opt;
  opt.jobs = 0;
  EXPECT_FALSE(RunMachine::detect(opt).ok());
  opt.jobs = 3;
  opt.memory = "lots";
  EXPECT_FALSE(RunMachine::detect(opt).ok());
  opt.memory.reset();
  auto m = RunMachine::detect(opt);
  ASSERT_TRUE(m.ok()) << m.error();
  EXPECT_EQ(m->slots, 3);
  EXPECT_LE(m->budget.budget, m->cap.capacity - m->budget.reserve);
}

TEST(RunMachine, TheGovernorGetsTheBudgetTheSlotsAndTheOffload) {
  ScopedEnv hosts("DISTCC_HOSTS", "10.0.0.1/6 localhost/2");
  RunMachine m;
  m.budget.capacity = 16 * GiB;
  m.budget.reserve = 1 * GiB;
  m.budget.budget = 12 * GiB;
  m.slots = 4;
  RunOptions opt;
  opt.admission = "packing";
  GovernorConfig gc = governor_config(m, opt);
  EXPECT_EQ(gc.budget, 12 * GiB);
  EXPECT_EQ(gc.hard_limit, 15 * GiB);
  EXPECT_EQ(gc.slots, 4);
  EXPECT_EQ(gc.admission, AdmissionPolicy::packing);
  EXPECT_EQ(gc.remote_slots["distcc"], 6) << "localhost is no remote slot";
  EXPECT_TRUE(gc.offload.engine.empty());
  opt.offload = "distcc";
  gc = governor_config(m, opt);
  EXPECT_EQ(gc.offload.slots, 6) << "what the engine's own configuration allows";
  opt.offload_jobs = 9;
  EXPECT_EQ(governor_config(m, opt).offload.slots, 9);
}

namespace {

JobRecord finished(const std::string& source) {
  JobIdentity id{JobClass{"", "g++", "compile", {}}, source, source + ".o", ""};
  JobRecord j;
  j.key = make_job_key(id, source);
  j.peak_bytes = 700 * MiB;
  j.start_s = 1;
  j.end_s = 5;
  j.cpu_s = 4;
  j.exit_status = 0;
  return j;
}

}  // namespace

TEST(Knowledge, AHistoryNamedWhereNoDirectoryIsStopsTheRun) {
  TempDir d("knowledge");
  RunOptions opt;
  opt.history = d / "missing/history.db";
  Knowledge k;
  std::vector<std::string> degraded;
  EXPECT_FALSE(k.open_history(opt, "/src", "make", degraded));
  EXPECT_EQ(k.history(), nullptr);
}

TEST(Knowledge, TheLastCompleteBuildOfTheCommandIsTheProgressTotalAndItsJobsArePredicted) {
  TempDir d("knowledge");
  RunOptions opt;
  opt.history = d / "history.db";
  {
    auto h = History::open(opt.history);
    ASSERT_TRUE(h.ok()) << h.error();
    BuildRecord b;
    b.cwd = "/src";
    b.command = "make";
    b.start_unix = 1000;
    b.end_unix = 1010;
    b.jobs = {finished("a.cpp"), finished("b.cpp"), finished("c.cpp")};
    b.kind = classify_build(b.jobs);
    ASSERT_TRUE((*h)->save_build(b).ok());
    b.command = "ninja";  // another command's build is no total for this one
    b.jobs.pop_back();
    ASSERT_TRUE((*h)->save_build(b).ok());
  }
  Knowledge k;
  std::vector<std::string> degraded;
  ASSERT_TRUE(k.open_history(opt, "/src", "make", degraded));
  ASSERT_NE(k.history(), nullptr);
  EXPECT_EQ(k.history_path(), opt.history);
  EXPECT_EQ(k.progress().jobs, 3);
  EXPECT_DOUBLE_EQ(k.progress().wall_s, 10);
  Prediction p = k.predictor().predict(finished("a.cpp").key);
  EXPECT_EQ(p.source, PredictionSource::history);
  EXPECT_GE(p.peak, 700 * MiB);
}

TEST(Knowledge, APriorTheUserNamedMustBeUsableAndSeedsThePredictor) {
  TempDir d("knowledge");
  ScopedEnv unset("MEMGATE_PRIOR", nullptr);
  RunOptions opt;
  Knowledge k;
  EXPECT_TRUE(k.load_prior(opt)) << "none named: nothing to do";
  opt.prior = d / "missing.json";
  EXPECT_FALSE(k.load_prior(opt));
  opt.prior = d / "prior.json";
  ASSERT_TRUE(write_profiles_file(opt.prior, summarize_profiles({finished("a.cpp")})).ok());
  EXPECT_TRUE(k.load_prior(opt));
  EXPECT_EQ(k.predictor().predict(finished("a.cpp").key).source, PredictionSource::prior);
}
