// The jobserver as a run serves it (run/runner_tokens.hpp): when it is
// served, what it offers as the governor allows, the log of what changed,
// and the reclaiming of tokens no live client can hold. A real fifo in a
// private directory; this test process plays the build's client.
#include "run/runner_tokens.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <sstream>

#include "support/temp_dir.hpp"

using namespace memgate;
using memgate::test::TempDir;

namespace {

class RunnerTokensTest : public ::testing::Test {
 protected:
  RunnerTokensTest() {
    auto d = PrivateDir::create({tmp_.path()}, 4096);
    EXPECT_TRUE(d.ok()) << d.error();
    dir_.emplace(std::move(*d));
    GovernorConfig gc;
    gc.budget = gc.hard_limit = 64 * GiB;
    gc.slots = 4;
    gov_ = std::make_unique<Governor>(gc, [](const JobKey&) { return Prediction{}; });
    opt_.command = {"make"};
    opt_.jobserver = "always";
    opt_.jobserver_log = tmp_ / "tokens.log";
  }
  std::string serve() { return tokens_.serve(opt_, *dir_, 4, env_, fds_); }
  std::string log() const {
    std::ifstream in(opt_.jobserver_log);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
  }
  void take_one() {
    char c;
    ASSERT_EQ(::read(fds_.at(0), &c, 1), 1);
  }

  TempDir tmp_{"tokens"};
  std::optional<PrivateDir> dir_;
  std::unique_ptr<Governor> gov_;
  RunOptions opt_;
  RunnerTokens tokens_;
  std::map<std::string, std::string> env_;
  std::vector<int> fds_;
  MemoryView view_;
};

}  // namespace

TEST_F(RunnerTokensTest, NoneWhenTheUserChoseTheParallelismOrSaidOff) {
  opt_.jobserver = "auto";
  opt_.command = {"make", "-j4"};
  EXPECT_EQ(serve(), "");
  opt_.jobserver = "off";
  opt_.command = {"make"};
  EXPECT_EQ(serve(), "");
  EXPECT_FALSE(tokens_.served());
  EXPECT_TRUE(env_.empty());
  EXPECT_TRUE(fds_.empty());
  tokens_.offer(*gov_, view_, 0);  // nothing to do, nothing breaks
}

TEST_F(RunnerTokensTest, OffersWhatTheGovernorAllowsAndLogsEachChange) {
  ASSERT_EQ(serve(), "");
  ASSERT_TRUE(tokens_.served());
  EXPECT_NE(env_["MAKEFLAGS"].find("-j4 --jobserver-auth="), std::string::npos) << env_["MAKEFLAGS"];
  EXPECT_NE(env_["CARGO_MAKEFLAGS"].find("--jobserver-auth="), std::string::npos);
  ASSERT_EQ(fds_.size(), 2u);
  tokens_.tell(*gov_, 0);
  tokens_.offer(*gov_, view_, 0);  // four slots, the client's implicit token: three
  take_one();
  tokens_.tell(*gov_, 0.1);
  tokens_.offer(*gov_, view_, 0.1);  // one held: two more on offer
  tokens_.offer(*gov_, view_, 0.2);  // no change, no line
  EXPECT_EQ(log(), "0.000 held 0 waiting 3 reclaimed 0\n0.100 held 1 waiting 2 reclaimed 0\n");
}

// The token this test took has no holder among memgate's descendants: a
// client that died holding it. It is reclaimed once that has lasted.
TEST_F(RunnerTokensTest, ATokenNoLiveClientCanHoldIsReclaimedAfterASecond) {
  ASSERT_EQ(serve(), "");
  tokens_.offer(*gov_, view_, 0);
  take_one();
  for (double t : {0.0, 0.5}) {
    tokens_.tell(*gov_, t);
    tokens_.offer(*gov_, view_, t);
  }
  tokens_.tell(*gov_, 1.25);
  tokens_.offer(*gov_, view_, 1.25);
  EXPECT_EQ(log(), "0.000 held 0 waiting 3 reclaimed 0\n0.000 held 1 waiting 2 reclaimed 0\n"
                   "1.250 held 0 waiting 3 reclaimed 1\n");
}
