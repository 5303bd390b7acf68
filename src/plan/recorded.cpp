#include "plan/recorded.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "plan/simulate.hpp"

namespace memgate::plan {

RecordedWindow recorded_window(const JobRecord& job) {
  RecordedWindow w;
  if (!job.attempt_log.empty()) {
    w.start_s = job.attempt_log.back().start_s;
    w.end_s = job.attempt_log.back().end_s;
  } else {
    w.start_s = job.start_s;
    w.end_s = job.end_s;
  }
  w.end_s = std::max(w.end_s, w.start_s);
  // Frozen time is recorded over all attempts; most of it is in the one
  // that finished (a frozen job is killed last).
  w.frozen_s = std::clamp(job.frozen_s, 0.0, 0.95 * (w.end_s - w.start_s));
  return w;
}

namespace {

struct Edge {
  double t;
  int job;
  bool start;
};

// One round of the estimate: the work each job did in its window under
// the shares the recorded overlap gave it, with CPU fractions from `idle`.
std::vector<double> work_done(const std::vector<RecordedWindow>& windows, const std::vector<Edge>& edges,
                              const std::vector<double>& cpu_s, const std::vector<int>& threads,
                              const std::vector<double>& idle, double cores) {
  size_t n = windows.size();
  std::vector<double> frac(n), work(n, 0.0);
  for (size_t i = 0; i < n; ++i) frac[i] = std::clamp(cpu_s[i] / (threads[i] * idle[i]), 0.0, 1.0);
  std::vector<int> active;
  std::vector<size_t> pos(n, 0);
  for (size_t e = 0; e < edges.size();) {
    double t = edges[e].t;
    for (; e < edges.size() && edges[e].t == t; ++e) {
      int j = edges[e].job;
      if (edges[e].start) {
        pos[j] = active.size();
        active.push_back(j);
      } else {
        int last = active.back();
        active[pos[j]] = last;
        pos[last] = pos[j];
        active.pop_back();
      }
    }
    if (e == edges.size() || active.empty()) continue;
    double dt = edges[e].t - t;
    double demand = 0;
    for (int j : active) demand += frac[j] * threads[j];
    double share = demand > cores ? cores / demand : 1.0;
    for (int j : active) work[j] += dt / ((1.0 - frac[j]) + frac[j] / share);
  }
  return work;
}

}  // namespace

// A job that used at least this share of the CPU the most CPU-bound reading
// offers it is read as computing all the time.
constexpr double kCpuBoundShare = 0.6;

std::vector<double> idle_durations(const std::vector<RecordedWindow>& windows, const std::vector<double>& cpu_s,
                                   const std::vector<int>& threads, double cores) {
  size_t n = windows.size();
  std::vector<double> length(n), busy(n), idle(n);
  std::vector<Edge> edges;
  for (size_t i = 0; i < n; ++i) {
    length[i] = std::max(windows[i].end_s - windows[i].start_s, 1e-6);
    busy[i] = std::max(length[i] - windows[i].frozen_s, 1e-6);
    // The most CPU-bound reading first (see the header).
    idle[i] = std::clamp(cpu_s[i] / threads[i], 1e-6, busy[i]);
    edges.push_back({windows[i].start_s, static_cast<int>(i), true});
    edges.push_back({windows[i].start_s + length[i], static_cast<int>(i), false});
  }
  // Ends before starts at one instant: a job taking a freed slot never
  // overlaps the job that freed it.
  std::sort(edges.begin(), edges.end(),
            [](const Edge& a, const Edge& b) { return a.t != b.t ? a.t < b.t : (!a.start && b.start); });
  // Round 0 reads every job as computing all the time. A job that used
  // most of the CPU that reading offers it computed all the time, and stays
  // so: letting it be read as waiting would free CPU for the others, which
  // would then look as if they waited too (on a machine others kept busy,
  // that runs away from a CPU-bound build).
  std::vector<bool> fixed(n, false);
  for (int round = 0; round < 200; ++round) {
    std::vector<double> work = work_done(windows, edges, cpu_s, threads, idle, cores);
    if (round == 0)
      for (size_t i = 0; i < n; ++i) fixed[i] = cpu_s[i] / threads[i] >= kCpuBoundShare * work[i] * busy[i] / length[i];
    double moved = 0;
    for (size_t i = 0; i < n; ++i) {
      if (fixed[i]) continue;
      double floor = std::min(busy[i], cpu_s[i] / threads[i]);
      double next = std::clamp(work[i] * busy[i] / length[i], floor, busy[i]);
      moved = std::max(moved, std::fabs(next - idle[i]) / busy[i]);
      idle[i] = next;
    }
    if (moved < 1e-9) break;
  }
  return idle;
}

namespace {

int threads_of(const JobRecord& job, double busy_s) {
  int threads = std::max(1, job.key.cpu_weight);
  // A job that used more cores than its weight says ran more threads.
  if (busy_s > 0) threads = std::max(threads, static_cast<int>(std::ceil(job.cpu_s / busy_s - 0.1)));
  return threads;
}

std::vector<ProfilePoint> profile_of(const JobRecord& job, double attempt_s) {
  if (!job.profile.empty()) return profile_from_samples(job.profile, attempt_s, job.peak_bytes, job.t_peak_s);
  double peak_at = job.t_peak_s > 0 && attempt_s > 0 ? job.t_peak_s / attempt_s : 0.1;
  Bytes after = job.after_peak_bytes > 0 ? job.after_peak_bytes : job.peak_bytes / 4;
  return synthesize_profile(job.peak_bytes, peak_at, job.peak_over_frac, after);
}

}  // namespace

double cores_left_to_build(const BuildRecord& build, int cores) {
  // The machine's cores, whatever --jobs was: 8 slots on 2 cores ran 2 at a time.
  double recorded = cores > 0 ? cores : build.cores > 0 ? build.cores : std::max(1, build.slots);
  auto others = build.counters.find(Counter::other_cpu_ms);
  if (others == build.counters.end() || build.wall_s() <= 0) return recorded;
  double load = static_cast<double>(others->second) / 1000.0 / build.wall_s();
  return std::max(recorded - load, 0.05 * recorded);
}

std::vector<PlanJob> jobs_from_build(const BuildRecord& build, int cores) {
  const double recorded_cores = cores_left_to_build(build, cores);
  std::vector<size_t> order(build.jobs.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return build.jobs[a].submit_s < build.jobs[b].submit_s; });

  std::vector<RecordedWindow> windows;
  std::vector<double> cpu;
  std::vector<int> threads;
  for (size_t i : order) {
    const JobRecord& j = build.jobs[i];
    windows.push_back(recorded_window(j));
    const RecordedWindow& w = windows.back();
    cpu.push_back(std::max(0.0, j.cpu_s));
    threads.push_back(threads_of(j, w.end_s - w.start_s - w.frozen_s));
  }
  std::vector<double> idle = idle_durations(windows, cpu, threads, recorded_cores);

  std::vector<PlanJob> out;
  for (size_t k = 0; k < order.size(); ++k) {
    const JobRecord& j = build.jobs[order[k]];
    double attempt_s = windows[k].end_s - windows[k].start_s;
    PlanJob job;
    job.key = j.key;
    job.name = !j.key.identity.empty() ? j.key.identity : j.key.stem;
    job.work_s = idle[k];
    job.cpu_s = cpu[k];
    job.threads = threads[k];
    job.profile = profile_of(j, attempt_s);
    job.predicted.peak = j.peak_bytes;
    job.predicted.wall_s = attempt_s;
    job.predicted.cpu_s = j.cpu_s;
    job.predicted.peak_over_frac = j.peak_over_frac;
    job.predicted.after_peak = j.after_peak_bytes;
    job.predicted.envelope = envelope_of_profile(job.profile);
    job.predicted.confidence = 1;
    job.predicted.source = PredictionSource::history;
    normalize(job);
    job.predicted.peak = std::max(job.predicted.peak, job.peak);
    out.push_back(std::move(job));
  }
  return out;
}

}  // namespace memgate::plan
