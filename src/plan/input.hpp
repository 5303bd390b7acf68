// Where `memgate plan` gets its jobs: a recorded build from history, a
// .ninja_log (times) with history's memory figures, or a measured job
// table. Each returns the jobs and a line saying where they came from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "history/history.hpp"
#include "plan/jobs_csv.hpp"
#include "plan/workload.hpp"
#include "util/result.hpp"

namespace memgate::plan {

struct PlanInput {
  std::vector<PlanJob> jobs;
  std::string source;              // for the table's title
  std::vector<std::string> notes;  // worth telling the user (on stderr)
};

// `id`: a build id; nullopt: the last build in `cwd`, else the last build
// of all (with a note saying so).
Result<PlanInput> input_from_history(History& history, std::optional<std::int64_t> id, const std::string& cwd);

// `history` may be null (then every job gets per-tool defaults). `cores`:
// the machine the log was written on.
Result<PlanInput> input_from_ninja_log(const std::string& path, History* history, int cores);

Result<PlanInput> input_from_jobs_csv(const std::string& path, const std::string& profiles_dir, const NvccShape& shape);

}  // namespace memgate::plan
