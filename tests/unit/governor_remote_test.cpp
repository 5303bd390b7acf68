// Build engines: offloading to distcc and the like, remote slots, and a
// server declining jobs, driven with fakes (governor_fixture.hpp).
#include <gtest/gtest.h>

#include "engine/engine.hpp"
#include "governor_fixture.hpp"

using namespace memgate;
using namespace memgate::governor_test;

namespace {

GovernorConfig::Offload distcc_offload(int slots) {
  const Engine* distcc = find_engine("distcc");
  return {"distcc", slots, [distcc](const JobKey& k) { return distcc->takes(k); }};
}

JobKey compile_key(const std::string& id) {
  JobKey k;
  k.tool = "gcc";
  k.klass = "gcc:compile";
  k.identity = id;
  k.stem = id;
  return k;
}

}  // namespace

TEST(GovernorOffload, AJobWaitingForLocalMemoryGoesToTheEngine) {
  Fixture f(1 * GiB);
  f.cfg.offload = distcc_offload(2);
  Prediction heavy;
  heavy.peak = 700 * MiB;
  Prediction light;
  light.peak = 50 * MiB;
  for (const char* id : {"a", "b", "c", "d"}) {
    f.preds[id] = heavy;
    f.preds[std::string("distcc>") + id] = light;
  }
  std::vector<JobId> ids;
  for (const char* id : {"a", "b", "c", "d"}) ids.push_back(f.g().submit(compile_key(id), 0));
  Decisions d = f.g().step(used(0), 0);
  // One runs here, two go out (the engine's slots), one waits.
  ASSERT_EQ(d.admit.size(), 3u);
  EXPECT_EQ(f.g().job(ids[0]).where.placement, Placement::local);
  int offloaded = 0;
  for (JobId id : d.admit) {
    const GovJob& j = f.g().job(id);
    if (j.where.placement != Placement::offloaded) continue;
    ++offloaded;
    EXPECT_EQ(j.where.engine, "distcc");
    EXPECT_EQ(j.key.identity.rfind("distcc>", 0), 0u);
    EXPECT_EQ(j.pred.peak, 50 * MiB);
    EXPECT_EQ(j.weight(16), 0);
  }
  EXPECT_EQ(offloaded, 2);
  EXPECT_EQ(get(f.g().counters(), Counter::offloaded), 2);
}

TEST(GovernorOffload, LinksAndNvccWaitAsBefore) {
  Fixture f(1 * GiB);
  f.cfg.offload = distcc_offload(4);
  Prediction heavy;
  heavy.peak = 700 * MiB;
  f.preds["x"] = heavy;
  f.preds["link"] = heavy;
  f.preds["cu"] = heavy;
  f.g().submit(compile_key("x"), 0);
  JobKey link = compile_key("link");
  link.tool = "g++";
  link.klass = "g++:link";
  JobKey cu = compile_key("cu");
  cu.tool = "nvcc";
  cu.klass = "nvcc:compile[sm_80]";
  JobId l = f.g().submit(link, 0);
  JobId c = f.g().submit(cu, 0);
  Decisions d = f.g().step(used(0), 0);
  EXPECT_EQ(d.admit.size(), 1u);
  EXPECT_EQ(f.g().job(l).state, JobState::waiting);
  EXPECT_EQ(f.g().job(c).state, JobState::waiting);
}

TEST(GovernorOffload, AJobTheBuildSendsToAnEngineIsRemoteAndPredictedAsTheEngines) {
  Fixture f(1 * GiB);
  Prediction light;
  light.peak = 30 * MiB;
  f.preds["distcc>a"] = light;
  JobId id = f.g().submit(compile_key("a"), 0, "distcc");
  const GovJob& j = f.g().job(id);
  EXPECT_EQ(j.where.placement, Placement::remote);
  EXPECT_EQ(j.key.identity, "distcc>a");
  EXPECT_EQ(j.pred.peak, 30 * MiB);
  EXPECT_EQ(get(f.g().counters(), Counter::remote), 1);
}

// Remote jobs cost the local machine a launcher and a preprocessor: while
// their engine has remote slots they take none of the local CPU slots, and
// beyond those they weigh like local compiles again.
TEST(GovernorRemote, RemoteJobsTakeTheEnginesSlotsNotLocalOnes) {
  Fixture f(8 * GiB, /*slots=*/2);
  f.cfg.remote_slots["distcc"] = 4;
  Prediction light;
  light.peak = 20 * MiB;
  std::vector<JobId> ids;
  for (int i = 0; i < 8; ++i) {
    std::string id = "r" + std::to_string(i);
    f.preds["distcc>" + id] = light;
    ids.push_back(f.g().submit(compile_key(id), 0, "distcc"));
  }
  Decisions d = f.g().step(used(0), 0);
  // Four on the engine's slots, two more on the two local slots.
  ASSERT_EQ(d.admit.size(), 6u);
  int on_remote_slots = 0;
  for (JobId id : d.admit) {
    const GovJob& j = f.g().job(id);
    if (j.where.remote_slot) {
      ++on_remote_slots;
      EXPECT_EQ(j.weight(2), 0);
    } else {
      EXPECT_EQ(j.weight(2), 1);
    }
  }
  EXPECT_EQ(on_remote_slots, 4);
  EXPECT_EQ(f.g().counts().waiting_cpu, 2);
  // A remote slot given back goes to the next remote job.
  JobId done = -1;
  for (JobId id : d.admit)
    if (f.g().job(id).where.remote_slot) done = id;
  f.g().exited(done, ExitKind::finished, 0, 1);
  d = f.g().step(used(0), 1);
  ASSERT_EQ(d.admit.size(), 1u);
  EXPECT_TRUE(f.g().job(d.admit[0]).where.remote_slot);
}

TEST(GovernorRemote, AnEngineOfUnknownCapacityTakesLocalSlots) {
  Fixture f(8 * GiB, /*slots=*/2);
  f.cfg.remote_slots["distcc"] = 4;  // icecc's is not known
  Prediction light;
  light.peak = 20 * MiB;
  for (int i = 0; i < 4; ++i) {
    std::string id = "i" + std::to_string(i);
    f.preds["icecc>" + id] = light;
    f.g().submit(compile_key(id), 0, "icecc");
  }
  Decisions d = f.g().step(used(0), 0);
  ASSERT_EQ(d.admit.size(), 2u);
  for (JobId id : d.admit) EXPECT_FALSE(f.g().job(id).where.remote_slot);
}

TEST(GovernorRemote, OffloadSharesTheEnginesSlotsWithRemoteJobs) {
  Fixture f(1 * GiB, /*slots=*/2);
  f.cfg.remote_slots["distcc"] = 2;
  f.cfg.offload = distcc_offload(2);
  Prediction light;
  light.peak = 20 * MiB;
  Prediction heavy;
  heavy.peak = 700 * MiB;
  f.preds["distcc>r"] = light;
  JobId r = f.g().submit(compile_key("r"), 0, "distcc");
  for (const char* id : {"a", "b", "c"}) {
    f.preds[id] = heavy;
    f.preds[std::string("distcc>") + id] = light;
    f.g().submit(compile_key(id), 0);
  }
  Decisions d = f.g().step(used(0), 0);
  EXPECT_TRUE(f.g().job(r).where.remote_slot);
  int offloaded = 0;
  for (JobId id : d.admit) offloaded += f.g().job(id).where.placement == Placement::offloaded;
  // r holds one of distcc's two slots: one compile here, one offloaded,
  // and one waits for memory.
  EXPECT_EQ(offloaded, 1);
  EXPECT_EQ(d.admit.size(), 3u);
}

// distcc compiles a job here when its server refuses or fails: the job is
// then what it was, a local compile, learned under its own key.
TEST(GovernorRemote, AJobTheEngineRanHereIsRecordedLocal) {
  Fixture f(8 * GiB);
  f.cfg.remote_slots["distcc"] = 4;
  Prediction light;
  light.peak = 20 * MiB;
  f.preds["distcc>a"] = light;
  JobId id = f.g().submit(compile_key("a"), 0, "distcc");
  f.g().step(used(0), 0);
  ASSERT_TRUE(f.g().job(id).where.remote_slot);
  f.g().ran_here(id, 2);
  f.g().exited(id, ExitKind::finished, 0, 2);
  const GovJob& j = f.g().job(id);
  EXPECT_EQ(j.where.placement, Placement::local);
  EXPECT_EQ(j.key.identity, "a");
  EXPECT_EQ(j.where.engine, "distcc");
  EXPECT_EQ(get(f.g().counters(), Counter::fell_back), 1);
  EXPECT_EQ(get(f.g().counters(), Counter::remote), 1);
  bool said = false;
  for (const GovEvent& e : f.g().events()) said |= e.kind == EventKind::fallback && e.job == id;
  EXPECT_TRUE(said);
  // A local job has nothing to fall back from.
  JobId l = f.submit("l", 10 * MiB);
  f.g().step(used(0), 3);
  f.g().ran_here(l, 4);
  EXPECT_EQ(get(f.g().counters(), Counter::fell_back), 1);
}

TEST(GovernorDecline, AServerDeclinesAJobThatWaitedTooLong) {
  Fixture f(1 * GiB);
  f.cfg.decline_after_s = 5;
  JobId a = f.submit("a", 800 * MiB);
  JobId b = f.submit("b", 800 * MiB);
  Decisions d = f.g().step(used(0), 0);
  EXPECT_TRUE(contains(d.admit, a));
  EXPECT_TRUE(d.decline.empty());
  d = f.g().step(used(800 * MiB), 4.9);
  EXPECT_TRUE(d.decline.empty());
  d = f.g().step(used(800 * MiB), 5.0);
  EXPECT_TRUE(contains(d.decline, b));
  EXPECT_EQ(f.g().job(b).state, JobState::done);
  EXPECT_EQ(get(f.g().counters(), Counter::declined), 1);
  // A running job is never declined.
  d = f.g().step(used(800 * MiB), 60);
  EXPECT_TRUE(d.decline.empty());
  EXPECT_EQ(f.g().job(a).state, JobState::running);
}

// Cold admission: a job with nothing better than a default may
// start on what running jobs of its klass show; a few at a time.
