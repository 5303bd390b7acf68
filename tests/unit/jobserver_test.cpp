// The jobserver: its policy with fakes (governor/jobserver.hpp, and the
// governor counting tokens as slots), when memgate serves one, and the
// token pool on a real fifo in a private directory (run/jobserver.hpp).
#include "governor/jobserver.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include "governor/governor.hpp"
#include "run/jobserver.hpp"
#include "support/temp_dir.hpp"
#include "util/private_dir.hpp"

using namespace memgate;
using memgate::test::TempDir;

TEST(JobserverPolicy, OffersSlotsLessTheImplicitTokenAndWhatIsHeld) {
  TokenInputs in;
  in.slots = 3;
  EXPECT_EQ(tokens_to_offer(in), 2);  // the top client's own job is the third
  in.held = 2;
  EXPECT_EQ(tokens_to_offer(in), 0);
  in.held = 1;
  in.busy = 2;  // gated jobs its clients run: inside held + 1
  EXPECT_EQ(tokens_to_offer(in), 1);
}

TEST(JobserverPolicy, GatedJobsBeyondTheClientsShrinkTheOffer) {
  TokenInputs in;
  in.slots = 4;
  in.busy = 3;  // a ninja beside a client that holds nothing
  EXPECT_EQ(tokens_to_offer(in), 1);
  in.busy = 4;
  EXPECT_EQ(tokens_to_offer(in), 0);
}

TEST(JobserverPolicy, WithheldUnderPressureAndWhenMemoryIsShort) {
  TokenInputs in;
  in.slots = 8;
  in.hold_back = true;
  EXPECT_EQ(tokens_to_offer(in), 0);
  in.hold_back = false;
  in.per_token = 1 * GiB;
  in.headroom = 3 * GiB + 10;
  EXPECT_EQ(tokens_to_offer(in), 3);  // memory allows three more jobs, CPU seven
  in.headroom = -5;
  EXPECT_EQ(tokens_to_offer(in), 0);
}

TEST(JobserverPolicy, AJobUnderATokenFitsWithoutAFreeSlot) {
  EXPECT_EQ(jobserver_running(0, false), 0);
  EXPECT_EQ(jobserver_running(2, true), 3);
  // 3 slots, the clients run 3 jobs (2 tokens + implicit), 2 gated so far:
  // the third gated job is one of theirs.
  EXPECT_TRUE(fits_cpu_with_tokens(1, 2, 3, 3));
  EXPECT_FALSE(fits_cpu_with_tokens(1, 3, 3, 3));
  // No client: the slots as before.
  EXPECT_TRUE(fits_cpu_with_tokens(1, 2, 0, 3));
  EXPECT_FALSE(fits_cpu_with_tokens(1, 3, 0, 3));
}

namespace {

struct Gov {
  GovernorConfig cfg;
  std::unique_ptr<Governor> g;
  explicit Gov(int slots, Bytes budget = 64 * GiB) {
    cfg.budget = cfg.hard_limit = budget;
    cfg.slots = slots;
    g = std::make_unique<Governor>(cfg, [](const JobKey&) {
      Prediction p;
      p.peak = 1 * GiB;
      p.wall_s = 10;
      p.source = PredictionSource::history;
      p.confidence = 1;
      return p;
    });
  }
  JobId submit(const std::string& id) {
    JobKey k;
    k.identity = id;
    return g->submit(k, 0);
  }
};

}  // namespace

TEST(JobserverGovernor, AJobThatHasATokenDoesNotWaitForASlotAgain) {
  Gov gov(3);
  gov.g->set_jobserver(2, true);  // make runs three recipes: two on tokens
  for (const char* id : {"a", "b", "c"}) gov.submit(id);
  MemoryView view;
  Decisions d = gov.g->step(view, 0);
  EXPECT_EQ(d.admit.size(), 3u);  // all three are make's, none waits for a slot
  gov.submit("d");
  EXPECT_TRUE(gov.g->step(view, 1).admit.empty());  // a fourth is beyond the slots
  EXPECT_EQ(gov.g->tokens_to_offer(view, 1), 0);
}

TEST(JobserverGovernor, GatedJobsBeyondTheClientsTakeTheFreeSlots) {
  Gov gov(4);
  gov.g->set_jobserver(1, true);  // the clients run two jobs
  for (const char* id : {"a", "b", "c", "d", "e"}) gov.submit(id);
  MemoryView view;
  // Two are the clients' own, two take the slots left; the fifth waits.
  EXPECT_EQ(gov.g->step(view, 0).admit.size(), 4u);
  EXPECT_EQ(gov.g->tokens_to_offer(view, 0), 0);
  EXPECT_EQ(gov.g->counts().waiting, 1);
}

TEST(JobserverGovernor, WithholdsTokensWhileAJobWaitsForMemory) {
  Gov gov(8, 2 * GiB + 512 * MiB);
  MemoryView view;
  // Nothing known yet: a token is taken to need token_need (512 MiB).
  EXPECT_EQ(gov.g->tokens_to_offer(view, 0), 5);
  gov.submit("a");
  gov.submit("b");
  gov.submit("c");  // 3 GiB predicted, 2.5 GiB budget: "c" waits for memory
  Decisions d = gov.g->step(view, 0);
  EXPECT_EQ(d.admit.size(), 2u);
  EXPECT_EQ(gov.g->tokens_to_offer(view, 0), 0);
}

TEST(JobserverServe, OnlyWhenTheUserChoseNoParallelism) {
  EXPECT_FALSE(user_chose_parallelism({"make"}, "", ""));
  EXPECT_FALSE(user_chose_parallelism({"make", "-k", "all"}, "s", ""));
  EXPECT_FALSE(user_chose_parallelism({"make", "--", "-j4"}, "", ""));
  EXPECT_FALSE(user_chose_parallelism({"make", "--just-print"}, "", ""));
  for (const char* a : {"-j", "-j8", "-kj8", "--jobs", "--jobs=3"})
    EXPECT_TRUE(user_chose_parallelism({"make", a}, "", "")) << a;
  EXPECT_TRUE(user_chose_parallelism({"cargo", "build", "-j", "2"}, "", ""));
  EXPECT_TRUE(user_chose_parallelism({"cmake", "--build", "b", "--parallel", "4"}, "", ""));
  EXPECT_TRUE(user_chose_parallelism({"make"}, " -j4 --jobserver-auth=3,4", ""));
  EXPECT_TRUE(user_chose_parallelism({"make"}, "", "--jobserver-fds=3,4"));
}

TEST(TokenPool, FifoIsPrivateAndOffersWhatItIsTold) {
  TempDir t("js");
  auto dir = PrivateDir::create({t.path()}, 4096);
  ASSERT_TRUE(dir.ok()) << dir.error();
  auto pool = TokenPool::create(dir->fd(), dir->path());
  ASSERT_TRUE(pool.ok()) << pool.error();
  struct stat st;
  ASSERT_EQ(::lstat(pool->fifo_path().c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(pool->offer(3), 3);
  EXPECT_EQ(pool->held(), 0);
  EXPECT_FALSE(pool->client_seen());
  // A client takes two through the build's descriptor.
  char buf[2];
  ASSERT_EQ(::read(pool->build_read_fd(), buf, 2), 2);
  EXPECT_EQ(pool->held(), 2);
  EXPECT_TRUE(pool->client_seen());
  EXPECT_EQ(pool->offer(0), 0);  // withheld: the one waiting is taken back
  EXPECT_EQ(pool->held(), 2);
  ASSERT_EQ(::write(pool->build_write_fd(), buf, 1), 1);  // one returned
  EXPECT_EQ(pool->held(), 1);
  pool->reclaim(1);  // the other's holder died
  EXPECT_EQ(pool->held(), 0);
  EXPECT_EQ(pool->offer(2), 2);
  EXPECT_NE(pool->makeflags(JobserverForm::fifo, 3, "k").find("k -j3 --jobserver-auth=fifo:" + dir->path()),
            std::string::npos);
}

TEST(TokenPool, TokensTakenSinceTheTargetWasWorkedOutCountAgainstIt) {
  TempDir t("js");
  auto dir = PrivateDir::create({t.path()}, 4096);
  ASSERT_TRUE(dir.ok()) << dir.error();
  auto pool = TokenPool::create(dir->fd(), dir->path());
  ASSERT_TRUE(pool.ok()) << pool.error();
  ASSERT_EQ(pool->offer(2), 2);
  char buf[2];
  ASSERT_EQ(::read(pool->build_read_fd(), buf, 1), 1);
  const int seen = pool->held();  // 1: the governor is told so, and offers 1 more
  ASSERT_EQ(seen, 1);
  ASSERT_EQ(::read(pool->build_read_fd(), buf, 1), 1);  // meanwhile a client takes the other
  EXPECT_EQ(pool->offer(1, seen), 0) << "the target was for 1 held; 2 are";
  EXPECT_EQ(pool->held(), 2);
  ASSERT_EQ(::write(pool->build_write_fd(), buf, 2), 2);  // both returned
  EXPECT_EQ(pool->offer(1, 2), 1) << "returned tokens do not raise it";
  EXPECT_EQ(pool->held(), 0);
}

TEST(TokenPool, RefusesANameThatExists) {
  TempDir t("js");
  auto dir = PrivateDir::create({t.path()}, 4096);
  ASSERT_TRUE(dir.ok()) << dir.error();
  ASSERT_EQ(::symlinkat("/etc/passwd", dir->fd(), "jobserver"), 0);
  EXPECT_FALSE(TokenPool::create(dir->fd(), dir->path()).ok());
}

TEST(TokenLeaks, HoldableIsChildrenAndThreadsBeyondTheImplicitToken) {
  // make running three recipes holds two tokens; the shell running a
  // recursive make holds none; rustc with four codegen threads, three.
  EXPECT_EQ(tokens_holdable({{3, 1}, {1, 1}, {0, 4}}), 5);
  EXPECT_EQ(tokens_holdable({{0, 1}}), 0);
  EXPECT_EQ(tokens_holdable({{2, 8}}), 8);  // cargo: two rustc, threads of its own
}

TEST(TokenLeaks, ReclaimedOnlyAfterTheExcessLasted) {
  LeakWatch w;
  EXPECT_EQ(w.observe(2, 2, 0), 0);
  EXPECT_EQ(w.observe(3, 1, 1), 0);    // a client between read and fork, or a leak
  EXPECT_EQ(w.observe(3, 2, 1.5), 0);  // the excess is now 1
  EXPECT_EQ(w.observe(3, 0, 2.1), 1);  // lasted a second: the least of it
  EXPECT_EQ(w.observe(1, 1, 3), 0);
  EXPECT_EQ(w.observe(2, 1, 3.2), 0);
  EXPECT_EQ(w.observe(1, 1, 3.5), 0);  // it came back: no leak
  EXPECT_EQ(w.observe(2, 1, 4.6), 0);
}
