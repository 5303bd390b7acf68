// The predictor: how much memory (and time) will this job need, and when
// does its peak come? Pure logic over numbers; history feeds it records,
// the running build feeds it finished jobs, admission asks it questions.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/job.hpp"

namespace memgate {

// Conservative first guess for a job never seen before, by tool.
Prediction default_prediction(const JobKey& key);

class Predictor {
 public:
  // A job from a past build (history), oldest first.
  void add_history(const JobRecord& job);
  // A job of the current build finished: predictions change from now on.
  void observe(const JobRecord& job);
  Prediction predict(const JobKey& key) const;

 private:
  std::map<std::string, Bytes> class_peak_;  // placeholder online learning
};

}  // namespace memgate
