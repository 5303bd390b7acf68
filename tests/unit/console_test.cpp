// What the user sees while the build runs (run/console.hpp): each
// governor event logged once as it happens, overshoots not at all.
#include "run/console.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "util/log.hpp"

using namespace memgate;

namespace {

struct CapturedLog {
  std::vector<std::string> lines;
  CapturedLog() {
    log::set_sink([this](log::Level, std::string_view line) { lines.emplace_back(line); });
  }
  ~CapturedLog() { log::reset_sink(); }
};

}  // namespace

TEST(Console, EachEventIsLoggedOnceAndOvershootsNotAtAll) {
  GovernorConfig gc;
  gc.budget = gc.hard_limit = 1 * GiB;
  gc.slots = 2;
  Governor gov(gc, [](const JobKey&) {
    Prediction p;
    p.peak = 4 * GiB;  // above the budget: it runs alone, and says so
    return p;
  });
  JobKey key;
  key.identity = "c++:compile:big.cpp->big.o";
  JobId id = gov.submit(key, 0);
  CapturedLog log;
  Console console;
  EXPECT_FALSE(console.showing()) << "no status line before the build starts";
  gov.step(MemoryView{}, 0);
  console.log_events(gov);
  ASSERT_EQ(log.lines.size(), 1u);
  EXPECT_NE(log.lines[0].find("job 1 (c++:compile:big.cpp->big.o)"), std::string::npos) << log.lines[0];
  gov.sample(id, 5 * GiB, 5 * GiB, 1);  // over its prediction: an overshoot
  console.log_events(gov);
  console.log_events(gov);
  EXPECT_EQ(log.lines.size(), 1u);
  console.aborting(true);  // no line to take away: nothing happens
  console.finish();
}
