// What `memgate plan` prints: the table for people, JSON for scripts.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "plan/plan.hpp"

namespace memgate::plan {

// `source` says where the jobs came from ("build 12 in /src/x: make -j8").
std::string render_table(const PlanResult& result, const std::string& source);

// {"rows": [{"jobs", "wall_s", "objects_per_min", "peak_bytes",
//   "worst_peak_bytes", "oom_risk", "safe"}],
//  "memgate": {"wall_s", "objects_per_min", "peak_bytes", "finished",
//   "failed", "counters": {...}} or null,
//  "recommended_jobs": N or null, "safe_up_to", "best_safe_wall_s",
//  "machine": {"cores", "capacity_bytes", "reserve_bytes", "budget_bytes"},
//  "job_count", "orders", "largest_job": {"name", "peak_bytes"}, "source"}
nlohmann::json to_json(const PlanResult& result, const std::string& source);

// Why there is no recommendation: the job too big to run alone within
// capacity - reserve, or a --jobs-range that starts above the safe counts.
std::string no_recommendation_message(const PlanResult& result);

}  // namespace memgate::plan
