#include "report/trace.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <map>
#include <set>
#include <string>

#include "support/synthetic.hpp"

using namespace memgate;
using nlohmann::json;

namespace {

std::vector<json> events_of(const json& doc, const std::string& phase) {
  std::vector<json> out;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.at("ph") == phase) out.push_back(e);
  }
  return out;
}

BuildRecord small_build() {
  BuildRecord b;
  b.command = "make -j2";
  b.budget = 2 * GiB;
  JobRecord a;
  a.key = {"cc", "cc:obj/a.o", "cc", "a.c", 1};
  a.attempt_log = {{1.5, 4.25, Outcome::ok, 300 * MiB}};
  a.start_s = 1.5;
  a.end_s = 4.25;
  a.peak_bytes = 300 * MiB;
  a.cpu_s = 2.5;
  a.wait_s = 1.25;
  JobRecord b2;
  b2.key = {"nvcc", "nvcc:obj/k.o", "nvcc", "k.cu", 1};
  b2.attempt_log = {{0, 2, Outcome::oom, 900 * MiB}, {3, 9, Outcome::ok, 1000 * MiB}};
  b2.attempts = 2;
  b2.start_s = 0;
  b2.end_s = 9;
  b.jobs = {a, b2};
  // Deliberately out of order: the trace must still be monotonic.
  b.memory = {{2, 800 * MiB}, {0, 100 * MiB}, {1, 500 * MiB}, {5, 1200 * MiB}, {3, 600 * MiB}};
  b.events = {{2, EventKind::oom_kill, 1, "kernel"}, {1, EventKind::freeze, 0, "pressure"}, {1.2, EventKind::thaw, 0, ""},
              {2, EventKind::requeue, 1, "retry after OOM"}};
  return b;
}

}  // namespace

TEST(Trace, IsATraceEventFormatObject) {
  json doc = json::parse(render_trace_json(small_build()));
  ASSERT_TRUE(doc.is_object());
  EXPECT_TRUE(doc.at("traceEvents").is_array());
  EXPECT_EQ(doc.at("displayTimeUnit"), "ms");
  for (const auto& e : doc.at("traceEvents")) {
    EXPECT_TRUE(e.contains("ph") && e.contains("pid") && e.contains("name")) << e.dump();
  }
}

TEST(Trace, EveryAttemptIsACompleteEventInMicroseconds) {
  json doc = json::parse(render_trace_json(small_build()));
  auto slices = events_of(doc, "X");
  ASSERT_EQ(slices.size(), 3u);
  std::multiset<std::string> identities;
  for (const auto& e : slices) identities.insert(e.at("args").at("identity").get<std::string>());
  EXPECT_EQ(identities.count("cc:obj/a.o"), 1u);
  EXPECT_EQ(identities.count("nvcc:obj/k.o"), 2u);
  for (const auto& e : slices) {
    if (e.at("args").at("identity") != "cc:obj/a.o") continue;
    EXPECT_EQ(e.at("ts"), 1500000);
    EXPECT_EQ(e.at("dur"), 2750000);
    EXPECT_EQ(e.at("name"), "a.c");
    EXPECT_EQ(e.at("cat"), "cc");
    EXPECT_EQ(e.at("args").at("outcome"), "ok");
    EXPECT_DOUBLE_EQ(e.at("args").at("peak_MiB").get<double>(), 300);
    EXPECT_DOUBLE_EQ(e.at("args").at("cpu_s").get<double>(), 2.5);
    EXPECT_DOUBLE_EQ(e.at("args").at("wait_s").get<double>(), 1.25);
  }
}

TEST(Trace, AttemptsOfOneLaneDoNotOverlapAndLanesAreNamed) {
  json doc = json::parse(render_trace_json(make_synthetic_build({})));
  std::map<int, std::vector<std::pair<std::int64_t, std::int64_t>>> lanes;
  for (const auto& e : events_of(doc, "X")) lanes[e.at("tid")].emplace_back(e.at("ts"), e.at("dur"));
  std::set<int> named;
  for (const auto& e : events_of(doc, "M")) {
    if (e.at("name") == "thread_name") named.insert(e.at("tid").get<int>());
  }
  for (auto& [tid, slices] : lanes) {
    EXPECT_TRUE(named.count(tid)) << tid;
    std::sort(slices.begin(), slices.end());
    for (size_t i = 1; i < slices.size(); ++i) {
      EXPECT_LE(slices[i - 1].first + slices[i - 1].second, slices[i].first + 1) << "lane " << tid;
    }
  }
}

TEST(Trace, CounterTimestampsAreMonotonicAndCarryTheBudget) {
  json doc = json::parse(render_trace_json(small_build()));
  auto counters = events_of(doc, "C");
  ASSERT_EQ(counters.size(), 5u);
  std::int64_t last = -1;
  for (const auto& c : counters) {
    EXPECT_EQ(c.at("name"), "memory");
    EXPECT_GE(c.at("ts").get<std::int64_t>(), last);
    last = c.at("ts");
    EXPECT_DOUBLE_EQ(c.at("args").at("budget_MiB").get<double>(), 2048);
  }
  EXPECT_DOUBLE_EQ(counters.back().at("args").at("used_MiB").get<double>(), 1200);
}

TEST(Trace, GovernorDecisionsAreInstantEvents) {
  json doc = json::parse(render_trace_json(small_build()));
  std::multiset<std::string> kinds;
  for (const auto& e : events_of(doc, "i")) {
    kinds.insert(e.at("name").get<std::string>());
    EXPECT_EQ(e.at("s"), "p");
  }
  for (const char* k : {"freeze", "thaw", "requeue", "oom_kill"}) EXPECT_EQ(kinds.count(k), 1u) << k;
}

TEST(Trace, InvalidUtf8InAnIdentityIsReplacedNotFatal) {
  BuildRecord b = small_build();
  b.jobs[0].key.identity = "cc:bad\xff\xfe.o";
  std::string text;
  ASSERT_NO_THROW(text = render_trace_json(b));
  json doc;
  ASSERT_NO_THROW(doc = json::parse(text));
  EXPECT_NE(doc.dump().find("cc:bad"), std::string::npos);
}

TEST(Trace, EveryJobOfALargeBuildHasItsSlices) {
  SyntheticOptions o;
  o.jobs = 2000;
  BuildRecord b = make_synthetic_build(o);
  json doc = json::parse(render_trace_json(b));
  size_t attempts = 0;
  for (const auto& j : b.jobs) attempts += j.attempt_log.size();
  EXPECT_EQ(events_of(doc, "X").size(), attempts);
  std::int64_t last = -1;
  for (const auto& c : events_of(doc, "C")) {
    EXPECT_GE(c.at("ts").get<std::int64_t>(), last);
    last = c.at("ts");
  }
}

// A job that ran through an engine says where in its args.
TEST(Trace, RemoteAndOffloadedJobsSayWhereTheyRan) {
  BuildRecord b = small_build();
  b.jobs[0].where = Placement::offloaded;
  b.jobs[0].engine = "distcc";
  json doc = json::parse(render_trace_json(b));
  int offloaded = 0, unmarked = 0;
  for (const auto& e : events_of(doc, "X")) {
    if (e.at("args").contains("where")) {
      EXPECT_EQ(e.at("args").at("where"), "offloaded (distcc)");
      ++offloaded;
    } else {
      ++unmarked;
    }
  }
  EXPECT_EQ(offloaded, 1);
  EXPECT_EQ(unmarked, 2);  // the local job's two attempts
}
