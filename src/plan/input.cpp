#include "plan/input.hpp"

#include <fmt/core.h>

#include "history/build_ref.hpp"
#include "plan/ninja_log.hpp"
#include "plan/recorded.hpp"
#include "util/fs.hpp"

namespace memgate::plan {

Result<PlanInput> input_from_history(History& history, std::string_view ref, const std::string& cwd,
                                     const std::string& where) {
  auto choice = load_build_ref(history, ref, cwd, where);
  if (!choice) return Error{choice.error() + " (or give --ninja-log or --jobs-csv)"};
  const BuildRecord* build = &choice->build;
  if (build->jobs.empty()) return Error{fmt::format("{} recorded no jobs", choice->description)};
  PlanInput in;
  in.jobs = jobs_from_build(*build);
  in.source = fmt::format("build #{} in {}: {}", build->id, build->cwd, build->command);
  in.notes.push_back("planning from " + choice->description);
  if (build->slots <= 0) in.notes.push_back("the build did not record its core count; its times are taken as uncontended");
  const int cores = build->cores > 0 ? build->cores : build->slots;
  if (build->cores > 0 && build->slots > build->cores)
    in.notes.push_back(fmt::format("the build ran with --jobs {} on {} cores: its jobs' times are read against the {} "
                                   "cores, which is all they shared",
                                   build->slots, build->cores, build->cores));
  if (double left = cores_left_to_build(*build); cores > 0 && left < cores - 0.25)
    in.notes.push_back(fmt::format("the build shared the machine: other processes took {:.1f} of its {} cores, "
                                   "so its jobs' times are read as slowed by them",
                                   cores - left, cores));
  if (build->slots > 0 && cores > 0 && build->wall_s() > 0)
    in.measured = MeasuredRun{build->id, build->slots, cores, build->wall_s()};
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
  int matched = 0, unwaited = 0;
  in.jobs = jobs_from_ninja_log(*edges, known, cores, &matched, &unwaited);
  if (unwaited > 0) in.notes.push_back(fmt::format("memgate's admission waits taken out of {} jobs' times", unwaited));
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
