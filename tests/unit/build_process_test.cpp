// The build's life as the runner follows it (run/build_process.hpp:
// BuildProcess): its signals, reaping, the abort with its grace, and the
// exit status `run` gives back, with real small children. Every wait is
// on the signal fd, never on time.
#include "run/build_process.hpp"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "run/confinement.hpp"

using namespace memgate;

namespace {

class BuildProcessTest : public ::testing::Test {
 protected:
  BuildProcessTest() { build_.watch_signals(); }
  // The signals stay this test's to handle only while it runs.
  ~BuildProcessTest() override {
    sigset_t set;
    sigemptyset(&set);
    for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD}) sigaddset(&set, sig);
    sigprocmask(SIG_UNBLOCK, &set, nullptr);
  }
  bool start(std::vector<std::string> argv) {
    SpawnSpec spec;
    spec.argv = std::move(argv);
    SpawnFailure failure;
    return build_.start(spec, &failure);
  }
  // Waits for signals until the build has been reaped; returns the others.
  std::vector<int> until_done() {
    std::vector<int> others;
    while (!build_.done()) {
      pollfd p{build_.signal_fd(), POLLIN, 0};
      if (::poll(&p, 1, 30000) != 1) {
        ADD_FAILURE() << "no signal came";
        break;
      }
      for (int sig : build_.read_signals()) others.push_back(sig);
    }
    return others;
  }

  BuildProcess build_;
  Confinement none_ = Confinement::none("a unit test");
};

}  // namespace

TEST_F(BuildProcessTest, TheBuildsOwnStatusIsWhatRunExitsWith) {
  ASSERT_TRUE(start({"/bin/sh", "-c", "exit 3"}));
  EXPECT_TRUE(build_.started());
  EXPECT_GT(build_.running_pid(), 0);
  EXPECT_TRUE(until_done().empty());
  EXPECT_EQ(build_.running_pid(), 0);
  EXPECT_EQ(build_.exit_status(), 3);
  EXPECT_FALSE(build_.aborting());
}

TEST_F(BuildProcessTest, ABuildThatCannotStartGivesItsReason) {
  EXPECT_FALSE(start({"/nonexistent/memgate-no-such-tool"}));
  EXPECT_FALSE(build_.started());
  EXPECT_EQ(build_.exit_status(), 127);
}

TEST_F(BuildProcessTest, ASignalToMemgateIsReturnedToAbortOn) {
  ASSERT_EQ(::kill(::getpid(), SIGTERM), 0);
  pollfd p{build_.signal_fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 30000), 1);
  EXPECT_EQ(build_.read_signals(), std::vector<int>{SIGTERM});
}

TEST_F(BuildProcessTest, AnAbortIsForwardedGivesGraceAndEndsAs128PlusTheSignal) {
  ASSERT_TRUE(start({"sleep", "100"}));
  EXPECT_TRUE(build_.begin_abort(SIGTERM, 10));
  EXPECT_FALSE(build_.begin_abort(SIGINT, 11)) << "a second one: the caller kills everything";
  EXPECT_FALSE(build_.grace_over(11.9));
  EXPECT_TRUE(build_.grace_over(12));
  build_.forward(SIGTERM, none_);
  until_done();
  EXPECT_EQ(build_.exit_status(), 128 + SIGTERM);
  build_.kill_everything(none_);
  EXPECT_FALSE(build_.grace_over(20)) << "everything is killed already";
}

TEST_F(BuildProcessTest, KillingEverythingEndsWhatIgnoresTheSignal) {
  ASSERT_TRUE(start({"/bin/sh", "-c", "trap '' TERM; sleep 100 & wait"}));
  build_.begin_abort(SIGINT, 0);
  build_.kill_everything(none_);
  until_done();
  EXPECT_EQ(build_.exit_status(), 128 + SIGINT) << "the abort's signal, whatever killed it";
}
