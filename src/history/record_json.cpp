#include "history/record_json.hpp"

#include <algorithm>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/job_class.hpp"

namespace memgate {

namespace {

using nlohmann::json;

json job_json(const JobRecord& j) {
  return {{"identity", j.key.identity},
          {"tool", j.key.tool},
          {"klass", j.key.klass},
          {"predicted_peak_bytes", j.predicted.peak},
          {"predicted_source", name(j.predicted.source)},
          {"predicted_cpu_s", j.predicted.cpu_s},
          {"predicted_wall_s", j.predicted.wall_s},
          {"peak_bytes", j.peak_bytes},
          {"cpu_s", j.cpu_s},
          {"wall_s", j.wall_s()},
          {"wait_s", j.wait_s},
          {"frozen_s", j.frozen_s},
          {"t_peak_s", j.t_peak_s},
          {"peak_over_frac", j.peak_over_frac},
          {"attempts", j.attempts},
          {"exit_status", j.exit_status},
          {"where", name(j.where)},
          {"engine", j.engine}};
}

}  // namespace

json build_summary_json(const BuildSummary& s) {
  return {{"id", s.id},
          {"start_unix", s.start_unix},
          {"wall_s", s.wall_s},
          {"exit_status", s.exit_status},
          {"peak_bytes", s.peak_bytes},
          {"budget_bytes", s.budget},
          {"job_count", s.job_count},
          {"wait_s", s.wait_s},
          {"cwd", s.cwd},
          {"command", s.command}};
}

std::string build_record_json(const BuildRecord& b) {
  json build = build_summary_json(summarize_build(b));
  if (b.id <= 0) build["id"] = nullptr;
  build["end_unix"] = b.end_unix;
  build["capacity_bytes"] = b.capacity;
  build["slots"] = b.slots;
  build["cores"] = b.cores;
  build["kind"] = b.kind.empty() ? classify_build(b.jobs) : b.kind;
  build["counters"] = by_name(b.counters);
  std::vector<const JobRecord*> jobs;
  for (const auto& j : b.jobs) jobs.push_back(&j);
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const JobRecord* a, const JobRecord* c) { return a->peak_bytes > c->peak_bytes; });
  json list = json::array();
  for (const JobRecord* j : jobs) list.push_back(job_json(*j));
  return json{{"build", build}, {"jobs", list}}.dump(2) + "\n";
}

}  // namespace memgate
