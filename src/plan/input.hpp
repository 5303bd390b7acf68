// Where `memgate plan` gets its jobs: a recorded build from history, a
// .ninja_log (times) with history's memory figures, or a measured job
// table. Each returns the jobs and a line saying where they came from.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "history/history.hpp"
#include "plan/jobs_csv.hpp"
#include "plan/render.hpp"
#include "plan/workload.hpp"
#include "util/result.hpp"

namespace memgate::plan {

struct PlanInput {
  std::vector<PlanJob> jobs;
  std::string source;              // for the table's title
  std::vector<std::string> notes;  // worth telling the user (on stderr)
  std::optional<MeasuredRun> measured;  // a recorded build's own -j, cores and wall time
};

// `ref`: a build id or "last" (history/build_ref.hpp); the source line
// says which build it was.
Result<PlanInput> input_from_history(History& history, std::string_view ref, const std::string& cwd,
                                     const std::string& where = "history");

// `history` may be null (then every job gets per-tool defaults). `cores`:
// the machine the log was written on.
Result<PlanInput> input_from_ninja_log(const std::string& path, History* history, int cores);

Result<PlanInput> input_from_jobs_csv(const std::string& path, const std::string& profiles_dir, const NvccShape& shape);

}  // namespace memgate::plan
