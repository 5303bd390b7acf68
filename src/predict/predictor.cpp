// Placeholder until the history issue lands the real predictor.
#include "predict/predictor.hpp"

#include <algorithm>

namespace memgate {

Prediction default_prediction(const JobKey& key) {
  Prediction p;
  p.peak = key.tool == "nvcc" ? 4 * GiB * std::max(1, key.cpu_weight) : 1 * GiB;
  p.source = "default";
  return p;
}

void Predictor::add_history(const JobRecord& job) { observe(job); }

void Predictor::observe(const JobRecord& job) {
  Bytes& p = class_peak_[job.key.klass];
  p = std::max(p, job.peak_bytes);
}

Prediction Predictor::predict(const JobKey& key) const {
  auto it = class_peak_.find(key.klass);
  if (it == class_peak_.end()) return default_prediction(key);
  Prediction p;
  p.peak = it->second;
  p.source = "build";
  p.confidence = 0.3;
  return p;
}

}  // namespace memgate
