#include "plan/ninja_log.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <map>
#include <tuple>

#include "core/job_class.hpp"
#include "plan/recorded.hpp"
#include "predict/predictor.hpp"

namespace memgate::plan {

namespace {

bool parse_int(std::string_view s, long long& out) {
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && end == s.data() + s.size();
}

}  // namespace

Result<std::vector<NinjaEdge>> parse_ninja_log(std::string_view text) {
  size_t nl = text.find('\n');
  std::string_view header = text.substr(0, nl);
  if (!header.starts_with("# ninja log v"))
    return Error{"not a .ninja_log (its first line should be '# ninja log v5')"};
  long long version = 0;
  std::string_view v = header.substr(13);
  while (!v.empty() && (v.back() == '\r' || v.back() == ' ')) v.remove_suffix(1);
  if (!parse_int(v, version) || version < 5 || version > 6)
    return Error{fmt::format("unsupported .ninja_log version '{}' (v5 and v6 are read)", v)};

  // The newest entry per output, then its edge's outputs grouped.
  struct Entry {
    long long start, end;
    std::string hash;
    size_t line;
  };
  std::map<std::string, Entry> last;
  size_t line_no = 1;
  for (size_t pos = nl == std::string_view::npos ? text.size() : nl + 1; pos < text.size(); ++line_no) {
    size_t end = text.find('\n', pos);
    std::string_view line = text.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    pos = end == std::string_view::npos ? text.size() : end + 1;
    while (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty() || line.starts_with('#')) continue;
    std::vector<std::string_view> f;
    for (size_t from = 0;;) {
      size_t tab = line.find('\t', from);
      f.push_back(line.substr(from, tab == std::string_view::npos ? std::string_view::npos : tab - from));
      if (tab == std::string_view::npos) break;
      from = tab + 1;
    }
    long long start = 0, stop = 0;
    if (f.size() != 5 || !parse_int(f[0], start) || !parse_int(f[1], stop) || stop < start)
      return Error{fmt::format(".ninja_log line {}: expected start, end, mtime, output and hash", line_no + 1)};
    last[std::string(f[3])] = Entry{start, stop, std::string(f[4]), line_no};
  }
  std::map<std::tuple<long long, long long, std::string>, NinjaEdge> edges;
  std::map<std::tuple<long long, long long, std::string>, size_t> first_line;
  for (const auto& [output, e] : last) {
    auto key = std::make_tuple(e.start, e.end, e.hash);
    NinjaEdge& edge = edges[key];
    edge.start_s = static_cast<double>(e.start) / 1000.0;
    edge.end_s = static_cast<double>(e.end) / 1000.0;
    edge.outputs.push_back(output);
    auto [it, fresh] = first_line.emplace(key, e.line);
    if (!fresh) it->second = std::min(it->second, e.line);
  }
  std::vector<std::pair<size_t, NinjaEdge>> ordered;
  for (auto& [key, edge] : edges) ordered.emplace_back(first_line[key], std::move(edge));
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto& a, const auto& b) {
    return a.second.start_s != b.second.start_s ? a.second.start_s < b.second.start_s : a.first < b.first;
  });
  std::vector<NinjaEdge> out;
  for (auto& [line, edge] : ordered) out.push_back(std::move(edge));
  return out;
}

std::string tool_for_output(std::string_view output) {
  std::string_view name = output.substr(output.rfind('/') + 1);
  if (name.ends_with(".cu.o") || name.ends_with(".cuda.o")) return "nvcc";
  if (name.ends_with(".o") || name.ends_with(".obj")) return "c++";
  size_t dot = name.rfind('.');
  if (dot == std::string_view::npos || dot == 0 || name.ends_with(".so") || name.ends_with(".a") ||
      name.find(".so.") != std::string_view::npos || name.ends_with(".exe"))
    return "ld";
  return "other";
}

std::vector<PlanJob> jobs_from_ninja_log(const std::vector<NinjaEdge>& edges, const std::vector<JobRecord>& history,
                                         int cores, int* matched, int* waits_removed) {
  std::map<std::string, const JobRecord*> by_output;
  for (const JobRecord& j : history) {
    std::string out = parse_job_identity(j.key.identity).output;
    if (!out.empty()) by_output[out] = &j;
  }
  // The log becomes a recorded build, so its times get the same
  // contention estimate as one memgate recorded.
  BuildRecord build;
  build.slots = std::max(1, cores);
  int found = 0;
  for (const NinjaEdge& e : edges) {
    JobRecord j;
    j.submit_s = j.start_s = e.start_s;
    j.end_s = e.end_s;
    double wall = std::max(e.end_s - e.start_s, 1e-3);
    const JobRecord* h = nullptr;
    for (const std::string& out : e.outputs)
      if (auto it = by_output.find(out); it != by_output.end()) h = it->second;
    if (h) {
      ++found;
      // Under memgate, ninja's time for an edge includes the job's wait for
      // admission. When the log and history tell the same run (the edge
      // lasted what memgate saw from the request to the end), the wait goes.
      double asked_to_end = h->end_s - h->submit_s;
      if (h->wait_s > 0 && std::fabs(wall - asked_to_end) <= std::max(0.25, 0.2 * asked_to_end)) {
        double wait = std::min(h->wait_s, 0.95 * wall);
        j.start_s += wait;
        wall -= wait;
        if (waits_removed) ++*waits_removed;
      }
      double h_wall = h->wall_s() > 0 ? h->wall_s() : wall;
      j.key = h->key;
      j.cpu_s = h->cpu_s * wall / h_wall;
      j.peak_bytes = h->peak_bytes;
      j.t_peak_s = h->t_peak_s * wall / h_wall;
      j.peak_over_frac = h->peak_over_frac;
      j.after_peak_bytes = h->after_peak_bytes;
      for (const MemSample& s : h->profile) j.profile.push_back({s.t_s * wall / h_wall, s.bytes});
    } else {
      j.key.tool = tool_for_output(e.outputs.front());
      j.key.identity = JobIdentity{JobClass{"", j.key.tool, "", {}}, "", e.outputs.front(), ""}.str();
      Prediction d = default_prediction(j.key);
      j.cpu_s = j.key.tool == "other" ? 0 : wall;
      j.peak_bytes = d.peak;
      j.t_peak_s = 0.1 * wall;
      j.peak_over_frac = 1.0;
    }
    build.jobs.push_back(std::move(j));
  }
  if (matched) *matched = found;
  std::vector<PlanJob> jobs = jobs_from_build(build, cores);
  for (size_t i = 0; i < jobs.size() && i < edges.size(); ++i) jobs[i].name = edges[i].outputs.front();
  return jobs;
}

}  // namespace memgate::plan
