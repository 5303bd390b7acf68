#include "plan/render.hpp"

#include <fmt/core.h>

#include <cmath>

#include "util/size.hpp"

namespace memgate::plan {

namespace {

std::string percent(double share) {
  if (share <= 0) return "0%";
  if (share < 0.01) return "<1%";
  return fmt::format("{:.0f}%", share * 100);
}

std::string per_min(double v) { return v >= 10 ? fmt::format("{:.0f}", v) : fmt::format("{:.2g}", v); }

std::string memgate_line(const MemgateRow& m) {
  auto counter = [&](Counter c) { return get(m.counters, c); };
  std::string note = fmt::format("froze {}, requeued {}, OOM-killed {}", counter(Counter::frozen),
                                 counter(Counter::requeued), counter(Counter::oom_killed));
  if (counter(Counter::ran_alone) > 0) note += fmt::format(", ran {} alone", counter(Counter::ran_alone));
  if (m.failed > 0) note += fmt::format(", {} FAILED after repeated kills", m.failed);
  if (!m.finished) note += ", simulation gave up";
  return fmt::format("{:>7} {:>9} {:>8} {:>11} {:>11}  {}\n", "memgate", format_duration(m.wall_s),
                     per_min(m.objects_per_min), format_bytes(m.peak), "", note);
}

}  // namespace

std::string no_recommendation_message(const PlanResult& r) {
  if (r.largest_peak <= r.machine.budget())
    return fmt::format("no job count in {}-{} is safe; smaller ones may be (try --jobs-range 1-{})", r.jobs_from,
                       r.jobs_to, r.jobs_to);
  return fmt::format("no static job count is safe: {} alone peaks at {}, more than capacity - reserve ({} - {} = {})",
                     r.largest_job, format_bytes(r.largest_peak), format_bytes(r.machine.capacity),
                     format_bytes(r.machine.reserve), format_bytes(r.machine.budget()));
}

std::string render_table(const PlanResult& r, const std::string& source, const std::optional<MeasuredRun>& measured) {
  const Machine& m = r.machine;
  std::string out = fmt::format("memgate plan: {} jobs ({})\n", r.job_count, source);
  out += fmt::format("machine: {} cores, {} capacity, {} reserve: safe job counts stay within {}\n", m.cores,
                     format_bytes(m.capacity), format_bytes(m.reserve), format_bytes(m.budget()));
  out += fmt::format("OOM risk: share of {} random job orders whose peak exceeds the capacity\n\n", r.orders);
  out += fmt::format("{:>7} {:>9} {:>8} {:>11} {:>11} {:>9}\n", "-j", "time", "obj/min", "peak", "worst peak",
                     "OOM risk");
  for (const PlanRow& row : r.rows) {
    std::string mark = r.recommended && row.jobs == *r.recommended ? "  <- recommended"
                       : row.safe                                  ? ""
                                                                   : "  over capacity - reserve";
    if (measured && row.jobs == measured->jobs && measured->cores == m.cores)
      mark += fmt::format("  measured {}", format_duration(measured->wall_s));
    out += fmt::format("{:>7} {:>9} {:>8} {:>11} {:>11} {:>9}{}\n", row.jobs, format_duration(row.wall_s),
                       per_min(row.objects_per_min), format_bytes(row.peak), format_bytes(row.worst_peak),
                       percent(row.oom_risk), mark);
  }
  if (r.memgate) out += memgate_line(*r.memgate);
  out += "\n";
  if (measured) {
    out += fmt::format("measured: build #{} ran -j{} on {} core{} in {}; the times above are for an idle machine\n",
                       measured->build, measured->jobs, measured->cores, measured->cores == 1 ? "" : "s",
                       format_duration(measured->wall_s));
  }
  if (r.recommended) {
    out += fmt::format("recommended: -j {} (the smallest safe job count within 5% of the best safe time, {})\n",
                       *r.recommended, format_duration(r.best_safe_wall_s));
  } else {
    out += no_recommendation_message(r) + "\n";
  }
  return out;
}

nlohmann::json to_json(const PlanResult& r, const std::string& source, const std::optional<MeasuredRun>& measured) {
  nlohmann::json j;
  j["rows"] = nlohmann::json::array();
  for (const PlanRow& row : r.rows) {
    j["rows"].push_back({{"jobs", row.jobs},
                         {"wall_s", row.wall_s},
                         {"objects_per_min", row.objects_per_min},
                         {"peak_bytes", row.peak},
                         {"worst_peak_bytes", row.worst_peak},
                         {"oom_risk", row.oom_risk},
                         {"safe", row.safe}});
  }
  if (r.memgate) {
    j["memgate"] = {{"wall_s", r.memgate->wall_s},
                    {"objects_per_min", r.memgate->objects_per_min},
                    {"peak_bytes", r.memgate->peak},
                    {"finished", r.memgate->finished},
                    {"failed", r.memgate->failed},
                    {"admission", name(r.memgate->admission)},
                    {"counters", by_name(r.memgate->counters)}};
  } else {
    j["memgate"] = nullptr;
  }
  j["recommended_jobs"] = r.recommended ? nlohmann::json(*r.recommended) : nlohmann::json(nullptr);
  j["safe_up_to"] = r.safe_up_to;
  j["best_safe_wall_s"] = r.best_safe_wall_s;
  j["machine"] = {{"cores", r.machine.cores},
                  {"capacity_bytes", r.machine.capacity},
                  {"reserve_bytes", r.machine.reserve},
                  {"budget_bytes", r.machine.budget()}};
  j["job_count"] = r.job_count;
  j["orders"] = r.orders;
  j["largest_job"] = {{"name", r.largest_job}, {"peak_bytes", r.largest_peak}};
  j["source"] = source;
  if (measured)
    j["measured"] = {{"build", measured->build}, {"jobs", measured->jobs}, {"cores", measured->cores},
                     {"wall_s", measured->wall_s}};
  else
    j["measured"] = nullptr;
  return j;
}

}  // namespace memgate::plan
