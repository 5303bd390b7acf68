#include "report/trace.hpp"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "report/timeline.hpp"

namespace memgate {
namespace {

using nlohmann::json;

constexpr int kPid = 1;
constexpr int kGovernorTid = 0;

std::int64_t micros(double seconds) { return std::llround(std::max(0.0, seconds) * 1e6); }

double mib(Bytes b) { return std::round(static_cast<double>(b) / static_cast<double>(MiB) * 10) / 10; }

json metadata(const char* name, int tid, json args) {
  return {{"ph", "M"}, {"name", name}, {"pid", kPid}, {"tid", tid}, {"args", std::move(args)}};
}

void add_metadata(const BuildRecord& b, int lanes, json& events) {
  events.push_back(metadata("process_name", kGovernorTid, {{"name", "memgate: " + b.command}}));
  events.push_back(metadata("thread_name", kGovernorTid, {{"name", "governor"}}));
  events.push_back(metadata("thread_sort_index", kGovernorTid, {{"sort_index", 0}}));
  for (int lane = 0; lane < lanes; ++lane) {
    events.push_back(metadata("thread_name", lane + 1, {{"name", "slot " + std::to_string(lane + 1)}}));
    events.push_back(metadata("thread_sort_index", lane + 1, {{"sort_index", lane + 1}}));
  }
}

json slice(const BuildRecord& b, const TimelineBar& bar) {
  const JobRecord& j = b.jobs[static_cast<size_t>(bar.job)];
  json args = {{"identity", j.key.identity},
               {"tool", j.key.tool},
               {"peak_MiB", mib(bar.peak_bytes)},
               {"predicted_MiB", mib(j.predicted.peak)},
               {"outcome", name(bar.outcome)},
               {"attempt", fmt::format("{}/{}", bar.attempt + 1, bar.attempts)}};
  if (bar.last) {
    args["cpu_s"] = std::round(j.cpu_s * 100) / 100;
    args["wait_s"] = std::round(j.wait_s * 100) / 100;
    args["frozen_s"] = std::round(j.frozen_s * 100) / 100;
    args["exit_status"] = j.exit_status;
  }
  if (j.where != Placement::local) args["where"] = fmt::format("{} ({})", name(j.where), j.engine);
  const std::int64_t ts = micros(bar.start_s);
  return {{"ph", "X"},          {"name", short_name(j)},
          {"cat", j.key.tool},  {"pid", kPid},
          {"tid", bar.lane + 1}, {"ts", ts},
          {"dur", std::max<std::int64_t>(micros(bar.end_s) - ts, 1)}, {"args", std::move(args)}};
}

json instant(const BuildRecord& b, const BuildEvent& e) {
  json args = {{"reason", e.reason}};
  if (e.job >= 0 && static_cast<size_t>(e.job) < b.jobs.size()) {
    args["identity"] = b.jobs[static_cast<size_t>(e.job)].key.identity;
  }
  return {{"ph", "i"}, {"s", "p"},          {"name", name(e.kind)},           {"cat", "governor"},
          {"pid", kPid}, {"tid", kGovernorTid}, {"ts", micros(e.t_s)}, {"args", std::move(args)}};
}

void add_counters(const BuildRecord& b, json& events) {
  std::vector<MemSample> series = b.memory;
  std::stable_sort(series.begin(), series.end(),
                   [](const MemSample& x, const MemSample& y) { return x.t_s < y.t_s; });
  for (const auto& m : series) {
    json args = {{"used_MiB", mib(m.bytes)}};
    if (b.budget > 0) args["budget_MiB"] = mib(b.budget);
    events.push_back({{"ph", "C"}, {"name", "memory"}, {"pid", kPid}, {"tid", kGovernorTid},
                      {"ts", micros(m.t_s)}, {"args", std::move(args)}});
  }
}

}  // namespace

std::string render_trace_json(const BuildRecord& b) {
  const Timeline t = layout_timeline(b);
  json events = json::array();
  add_metadata(b, t.lanes, events);
  for (const auto& bar : t.bars) events.push_back(slice(b, bar));
  for (const auto& e : b.events) events.push_back(instant(b, e));
  add_counters(b, events);
  json doc = {{"traceEvents", std::move(events)},
              {"displayTimeUnit", "ms"},
              {"otherData",
               {{"command", b.command},
                {"cwd", b.cwd},
                {"build_id", b.id},
                {"exit_status", b.exit_status},
                {"budget_MiB", mib(b.budget)},
                {"capacity_MiB", mib(b.capacity)},
                {"slots", b.slots}}}};
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace memgate
