#include "report/timeline.hpp"

#include <algorithm>
#include <queue>

#include "report/summary.hpp"

namespace memgate {
namespace {

void add_bars(const JobRecord& j, int index, std::vector<TimelineBar>& bars) {
  if (j.attempt_log.empty()) {
    TimelineBar bar;
    bar.job = index;
    bar.start_s = j.start_s;
    bar.end_s = std::max(j.start_s, j.end_s);
    bar.outcome = j.exit_status == 0 ? Outcome::ok : Outcome::failed;
    bar.peak_bytes = j.peak_bytes;
    bars.push_back(std::move(bar));
    return;
  }
  const int n = static_cast<int>(j.attempt_log.size());
  for (int a = 0; a < n; ++a) {
    const Attempt& at = j.attempt_log[static_cast<size_t>(a)];
    TimelineBar bar;
    bar.job = index;
    bar.attempt = a;
    bar.attempts = n;
    bar.start_s = at.start_s;
    bar.end_s = std::max(at.start_s, at.end_s);
    bar.last = a == n - 1;
    bar.outcome = at.outcome;
    bar.peak_bytes = at.peak_bytes > 0 ? at.peak_bytes : (bar.last ? j.peak_bytes : 0);
    bars.push_back(std::move(bar));
  }
}

}  // namespace

Timeline layout_timeline(const BuildRecord& build) {
  Timeline t;
  for (size_t i = 0; i < build.jobs.size(); ++i) add_bars(build.jobs[i], static_cast<int>(i), t.bars);
  std::stable_sort(t.bars.begin(), t.bars.end(), [](const TimelineBar& a, const TimelineBar& b) {
    return a.start_s < b.start_s;
  });
  // Lanes in use, by end time; freed lanes, lowest first. A bar that
  // starts within a microsecond of another's end may reuse its lane.
  using Busy = std::pair<double, int>;
  std::priority_queue<Busy, std::vector<Busy>, std::greater<>> busy;
  std::priority_queue<int, std::vector<int>, std::greater<>> free_lanes;
  for (auto& bar : t.bars) {
    while (!busy.empty() && busy.top().first <= bar.start_s + 1e-6) {
      free_lanes.push(busy.top().second);
      busy.pop();
    }
    if (free_lanes.empty()) {
      bar.lane = t.lanes++;
    } else {
      bar.lane = free_lanes.top();
      free_lanes.pop();
    }
    busy.emplace(bar.end_s, bar.lane);
    t.end_s = std::max(t.end_s, bar.end_s);
  }
  return t;
}

std::string short_name(const JobRecord& job) {
  std::string name = job.key.stem;
  if (name.empty()) {
    const std::string& id = job.key.identity;
    size_t cut = id.find_last_of("/:");
    name = cut == std::string::npos ? id : id.substr(cut + 1);
    if (name.empty()) name = id;
  }
  if (name.empty()) name = job.key.tool;
  return shorten_middle(name, 48);
}

std::vector<MemSample> reserved_series(const BuildRecord& build, double merge_s) {
  // +bytes at each attempt's start, -bytes at its end.
  std::vector<MemSample> changes;
  bool any = false;
  for (const JobRecord& j : build.jobs) {
    if (j.predicted.peak <= 0) continue;
    any = true;
    if (j.attempt_log.empty()) {
      changes.push_back({j.start_s, j.predicted.peak});
      changes.push_back({std::max(j.start_s, j.end_s), -j.predicted.peak});
      continue;
    }
    Bytes held = j.predicted.peak;
    for (const Attempt& a : j.attempt_log) {
      changes.push_back({a.start_s, held});
      changes.push_back({std::max(a.start_s, a.end_s), -held});
      held = std::max(held, a.peak_bytes);
    }
  }
  if (!any) return {};
  // Changes at one instant are summed, so a job taking the slot another
  // frees at that moment leaves no dip.
  std::sort(changes.begin(), changes.end(), [](const MemSample& a, const MemSample& b) { return a.t_s < b.t_s; });
  std::vector<MemSample> out;
  out.reserve(2 * changes.size() + 1);
  out.push_back({0, 0});
  Bytes level = 0;
  for (size_t i = 0; i < changes.size();) {
    const double t = changes[i].t_s;
    const Bytes before = level;
    for (; i < changes.size() && changes[i].t_s <= t + merge_s; ++i) level += changes[i].bytes;
    if (level == before) continue;
    out.push_back({t, before});
    out.push_back({t, level});
  }
  return out;
}

std::vector<MemSample> downsample(const std::vector<MemSample>& series, size_t max_points) {
  std::vector<MemSample> sorted = series;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const MemSample& a, const MemSample& b) { return a.t_s < b.t_s; });
  max_points = std::max<size_t>(max_points, 4);
  if (sorted.size() <= max_points) return sorted;
  const size_t buckets = max_points / 2;
  std::vector<MemSample> out;
  out.reserve(max_points);
  for (size_t b = 0; b < buckets; ++b) {
    const size_t lo = b * sorted.size() / buckets;
    const size_t hi = (b + 1) * sorted.size() / buckets;
    if (lo >= hi) continue;
    size_t min_i = lo, max_i = lo;
    for (size_t i = lo; i < hi; ++i) {
      if (sorted[i].bytes < sorted[min_i].bytes) min_i = i;
      if (sorted[i].bytes > sorted[max_i].bytes) max_i = i;
    }
    out.push_back(sorted[std::min(min_i, max_i)]);
    if (min_i != max_i) out.push_back(sorted[std::max(min_i, max_i)]);
  }
  return out;
}

}  // namespace memgate
