#include "plan/input.hpp"

#include <fmt/core.h>

#include "plan/ninja_log.hpp"
#include "plan/recorded.hpp"
#include "util/fs.hpp"

namespace memgate::plan {

Result<PlanInput> input_from_history(History& history, std::optional<std::int64_t> id, const std::string& cwd) {
  PlanInput in;
  if (!id) {
    id = history.last_build_id(cwd, std::nullopt);
    if (!id) {
      id = history.last_build_id(std::nullopt, std::nullopt);
      if (id) in.notes.push_back(fmt::format("no recorded build in {}; using the last build of all (#{})", cwd, *id));
    }
  }
  if (!id)
    return Error{"no recorded build: run 'memgate run -- <build command>' first, or give --ninja-log or --jobs-csv"};
  auto build = history.load_build(*id);
  if (!build) return Error{fmt::format("no build #{} in history", *id)};
  if (build->jobs.empty()) return Error{fmt::format("build #{} recorded no jobs", *id)};
  in.jobs = jobs_from_build(*build);
  in.source = fmt::format("build #{} in {}: {}", *id, build->cwd, build->command);
  if (build->slots <= 0) in.notes.push_back("the build did not record its core count; its times are taken as uncontended");
  return in;
}

Result<PlanInput> input_from_ninja_log(const std::string& path, History* history, int cores) {
  auto text = read_file(path);
  if (!text) return Error{fmt::format("cannot read {}", path)};
  auto edges = parse_ninja_log(*text);
  if (!edges) return Error{fmt::format("{}: {}", path, edges.error())};
  if (edges->empty()) return Error{fmt::format("{} lists no jobs", path)};
  std::vector<JobRecord> known;
  if (history) known = history->jobs_for_prediction(20);
  PlanInput in;
  int matched = 0;
  in.jobs = jobs_from_ninja_log(*edges, known, cores, &matched);
  in.source = fmt::format("{}, memory of {} of them from history", path, matched);
  if (matched < static_cast<int>(in.jobs.size()))
    in.notes.push_back(fmt::format("{} of {} jobs are not in history: their memory is a per-tool guess",
                                   in.jobs.size() - static_cast<size_t>(matched), in.jobs.size()));
  return in;
}

Result<PlanInput> input_from_jobs_csv(const std::string& path, const std::string& profiles_dir, const NvccShape& shape) {
  auto rows = read_jobs_csv(path, profiles_dir);
  if (!rows) return Error{rows.error()};
  auto w = workload_from_measurements(*rows, shape);
  if (!w) return Error{fmt::format("{}: {}", path, w.error())};
  PlanInput in;
  in.jobs = std::move(w->jobs);
  in.source = w->description;
  size_t with_profile = 0;
  for (const auto& r : *rows) with_profile += !r.samples.empty();
  if (with_profile == 0) in.notes.push_back("no profiles found next to the table: memory shapes are synthesized");
  return in;
}

}  // namespace memgate::plan
