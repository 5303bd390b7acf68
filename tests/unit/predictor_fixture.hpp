// Helpers the predictor's tests share (predictor_test.cpp, predictor_prior_test.cpp):
// an nvcc job's key by stem, and a finished run of it.
#pragma once

#include <algorithm>
#include <string>

#include "predict/predictor.hpp"

namespace memgate::predictor_test {

inline constexpr Bytes MB = 1000 * 1000;

inline JobKey key_for(const std::string& stem, const std::string& klass = "nvcc:compile[sm_80]", int weight = 1) {
  JobKey k;
  k.tool = klass.substr(0, klass.find(':'));
  k.klass = klass;
  k.stem = stem;
  k.identity = k.tool + ":compile:src/" + stem + ".cu->" + stem + ".o" + klass.substr(std::min(klass.find('['), klass.size()));
  k.cpu_weight = weight;
  return k;
}

inline JobRecord record(const JobKey& key, Bytes peak, int exit_status = 0) {
  JobRecord r;
  r.key = key;
  r.peak_bytes = peak;
  r.exit_status = exit_status;
  r.start_s = 10;
  r.end_s = 110;
  r.cpu_s = 95;
  r.peak_over_frac = 0.25;
  r.after_peak_bytes = peak / 4;
  r.attempt_log.push_back({10, 110, exit_status == 0 ? Outcome::ok : Outcome::failed, peak});
  return r;
}

}  // namespace memgate::predictor_test
