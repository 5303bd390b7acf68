// Every enum that history stores by name has exactly one name per value,
// and reads back as itself (ccache's statistics table, for memgate).
#include <gtest/gtest.h>

#include <set>

#include "core/job.hpp"

using namespace memgate;

TEST(Names, EveryCounterHasAUniqueNameThatReadsBack) {
  std::set<std::string_view> seen;
  for (Counter c : all_counters()) {
    std::string_view n = name(c);
    EXPECT_NE(n, "?");
    EXPECT_TRUE(seen.insert(n).second) << n;
    EXPECT_EQ(parse_counter(n), c);
  }
  EXPECT_EQ(parse_counter("no_such_counter"), std::nullopt);
}

TEST(Names, EventsOutcomesAndSourcesReadBack) {
  for (EventKind k : {EventKind::freeze, EventKind::thaw, EventKind::kill, EventKind::requeue, EventKind::oom_kill,
                      EventKind::retry, EventKind::gave_up, EventKind::alone, EventKind::overshoot,
                      EventKind::pressure, EventKind::offload, EventKind::decline,
                      EventKind::fallback})
    EXPECT_EQ(parse_event_kind(name(k)), k);
  for (Placement p : {Placement::local, Placement::remote, Placement::offloaded})
    EXPECT_EQ(parse_placement(name(p)), p);
  for (Outcome o : {Outcome::ok, Outcome::failed, Outcome::requeued, Outcome::oom, Outcome::lost})
    EXPECT_EQ(parse_outcome(name(o)), o);
  for (PredictionSource s : {PredictionSource::history, PredictionSource::imported, PredictionSource::prior,
                             PredictionSource::similar, PredictionSource::build, PredictionSource::profile,
                             PredictionSource::fallback})
    EXPECT_EQ(parse_prediction_source(name(s)), s);
  EXPECT_EQ(name(PredictionSource::fallback), "default") << "what history and README have always said";
}

TEST(Names, CountersByNameDropWhatTheyDoNotKnow) {
  Counters c = from_names({{"frozen", 2}, {"from_the_future", 9}});
  EXPECT_EQ(c.size(), 1u);
  EXPECT_EQ(get(c, Counter::frozen), 2);
  EXPECT_EQ(get(c, Counter::requeued), 0);
  EXPECT_EQ(by_name(c), (std::map<std::string, std::int64_t>{{"frozen", 2}}));
}
