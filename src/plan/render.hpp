// What `memgate plan` prints: the table for people, JSON for scripts.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

#include "plan/plan.hpp"

namespace memgate::plan {

// A recorded build's own wall time, shown beside the estimate for its -j.
struct MeasuredRun {
  std::int64_t build = 0;  // its id
  int jobs = 0;            // its --jobs (slots)
  int cores = 0;           // the cores it ran on
  double wall_s = 0;
};

// `source` says where the jobs came from ("build 12 in /src/x: make -j8").
std::string render_table(const PlanResult& result, const std::string& source,
                         const std::optional<MeasuredRun>& measured = std::nullopt);

// {"rows": [{"jobs", "wall_s", "objects_per_min", "peak_bytes",
//   "worst_peak_bytes", "oom_risk", "safe"}],
//  "memgate": {"wall_s", "objects_per_min", "peak_bytes", "finished",
//   "failed", "counters": {...}} or null,
//  "recommended_jobs": N or null, "safe_up_to", "best_safe_wall_s",
//  "machine": {"cores", "capacity_bytes", "reserve_bytes", "budget_bytes"},
//  "job_count", "orders", "largest_job": {"name", "peak_bytes"}, "source"}
// With a measured run: "measured": {"build", "jobs", "cores", "wall_s"}.
nlohmann::json to_json(const PlanResult& result, const std::string& source,
                       const std::optional<MeasuredRun>& measured = std::nullopt);

// Why there is no recommendation: the job too big to run alone within
// capacity - reserve, or a --jobs-range that starts above the safe counts.
std::string no_recommendation_message(const PlanResult& result);

}  // namespace memgate::plan
