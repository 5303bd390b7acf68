// The governor driven with fake predictions, fake memory readings and a
// fake clock (the governor_*_test.cpp files): no processes anywhere.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "governor/governor.hpp"
#include "run/recorder.hpp"

namespace memgate::governor_test {

struct Fixture {
  std::map<std::string, Prediction> preds;
  Prediction fallback;
  std::vector<std::string> learned;  // identities of the records learn() passed on
  GovernorConfig cfg;
  std::unique_ptr<Governor> gov;
  Recorder rec{"/src", "make", 0};  // keeps what the governor tells of each job, as the runner's does

  explicit Fixture(Bytes budget, int slots = 16) {
    cfg.budget = budget;
    cfg.hard_limit = budget;
    cfg.slots = slots;
    fallback.peak = 1 * GiB;
  }
  Governor& g() {
    if (!gov)
      gov = std::make_unique<Governor>(
          cfg,
          [this](const JobKey& k) {
            auto it = preds.find(k.identity);
            return it == preds.end() ? fallback : it->second;
          },
          [this](const JobRecord& r) { learned.push_back(r.key.identity); });
    gov->on_fact([this](const JobFact& fact) { rec.observe(fact); });
    return *gov;
  }
  // The job's record as the runner would make it at `now`.
  JobRecord record(JobId id, double now) { return rec.make_record(id, AttemptReport{}, now); }
  // A job with a known prediction (from its own history); cold jobs:
  // submit_cold below.
  JobId submit(const std::string& id, Bytes peak, double wall = 0, int weight = 1, double t = 0) {
    Prediction p;
    p.peak = peak;
    p.wall_s = wall;
    p.source = PredictionSource::history;
    p.confidence = 1.0;
    preds[id] = p;
    JobKey k;
    k.identity = id;
    k.cpu_weight = weight;
    return g().submit(k, t);
  }
};

inline MemoryView used(Bytes build_used, Bytes outside = 0) {
  MemoryView v;
  v.build_used = build_used;
  v.outside = outside;
  return v;
}

inline bool contains(const std::vector<JobId>& v, JobId id) { return std::find(v.begin(), v.end(), id) != v.end(); }

}  // namespace memgate::governor_test
