#include "plan/simulate.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace memgate::plan {

double cpu_share(double demand, int cores) {
  double c = std::max(1, cores);
  return demand > c ? c / demand : 1.0;
}

double progress_rate(const PlanJob& job, double share) {
  double f = job.cpu_fraction();
  double s = std::max(share, 1e-9);
  return 1.0 / (job.work_s * ((1.0 - f) + f / s));
}

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct Running {
  int job;
  size_t trace;
  double p = 0;
  double rate = -1;  // -1: not yet set
};

// Sets every running job's rate for the current CPU demand, noting a path
// point wherever a rate changes (progress is linear between them).
void update_rates(const std::vector<PlanJob>& jobs, std::vector<Running>& running, std::vector<Trace>& traces,
                  int cores, double t) {
  double demand = 0;
  for (const Running& r : running) demand += jobs[r.job].cpu_demand();
  double share = cpu_share(demand, cores);
  for (Running& r : running) {
    double rate = progress_rate(jobs[r.job], share);
    if (rate != r.rate && r.rate >= 0) traces[r.trace].path.push_back({t, r.p});
    r.rate = rate;
  }
}

}  // namespace

// Event loop: fill free slots in order, then jump to the next finish;
// between finishes every rate is constant.
StaticRun simulate_static(const std::vector<PlanJob>& jobs, const std::vector<int>& order, int max_jobs, int cores) {
  StaticRun out;
  out.traces.reserve(order.size());
  std::vector<Running> running;
  size_t limit = static_cast<size_t>(std::max(1, max_jobs));
  size_t next = 0;
  double t = 0;
  while (true) {
    while (running.size() < limit && next < order.size()) {
      int j = order[next++];
      out.traces.push_back(Trace{j, {{t, 0.0}}});
      running.push_back(Running{j, out.traces.size() - 1});
    }
    if (running.empty()) break;
    update_rates(jobs, running, out.traces, cores, t);
    double dt = kInf;
    for (const Running& r : running) dt = std::min(dt, (1.0 - r.p) / r.rate);
    t += dt;
    // Jobs finishing within a rounding error of the first finish together.
    double tol = dt * 1e-9 + 1e-12;
    for (Running& r : running) {
      if ((1.0 - r.p) / r.rate <= dt + tol) {
        r.p = 1.0;
        out.traces[r.trace].path.push_back({t, 1.0});
      } else {
        r.p += r.rate * dt;
      }
    }
    std::erase_if(running, [](const Running& r) { return r.p >= 1.0; });
  }
  out.wall_s = t;
  return out;
}

namespace {

struct Change {
  double t;
  double value;  // jump
  double slope;  // change of slope
};

// A trace's memory as (time, bytes) corners: its path points and the
// profile points it passes, mapped to time.
void corners(const PlanJob& job, const Trace& tr, std::vector<std::pair<double, double>>& out) {
  out.clear();
  const auto& prof = job.profile;
  const auto& path = tr.path;
  for (size_t k = 0; k < path.size(); ++k) {
    out.emplace_back(path[k].t, static_cast<double>(memory_at(prof, path[k].p)));
    if (k + 1 == path.size()) break;
    double p0 = path[k].p, p1 = path[k + 1].p;
    if (p1 <= p0) continue;
    auto it = std::upper_bound(prof.begin(), prof.end(), p0, [](double v, const ProfilePoint& pt) { return v < pt.p; });
    for (; it != prof.end() && it->p < p1; ++it) {
      double t = path[k].t + (it->p - p0) / (p1 - p0) * (path[k + 1].t - path[k].t);
      out.emplace_back(t, static_cast<double>(it->bytes));
    }
  }
}

// One change per corner: the jump there and the change of slope.
void add_changes(const std::vector<std::pair<double, double>>& pts, std::vector<Change>& changes) {
  if (pts.empty()) return;
  double slope = 0;
  Change c{pts.front().first, pts.front().second, 0};
  for (size_t k = 0; k + 1 < pts.size(); ++k) {
    auto [t0, v0] = pts[k];
    auto [t1, v1] = pts[k + 1];
    if (t1 - t0 > 1e-9) {
      double s = (v1 - v0) / (t1 - t0);
      c.slope += s - slope;
      slope = s;
      changes.push_back(c);
      c = Change{t1, 0, 0};
    } else {
      c.value += v1 - v0;  // a step: same corner
    }
  }
  c.value -= pts.back().second;  // the job ends: its memory is gone
  c.slope -= slope;
  changes.push_back(c);
}

}  // namespace

// Sweep over every corner in time order, carrying the total and its
// slope. At one instant all changes apply together: a job ending and
// another starting at the same moment never count both.
Bytes peak_memory(const std::vector<PlanJob>& jobs, const std::vector<Trace>& traces, std::optional<Bytes> stop_above) {
  // Reused between calls: plan runs this thousands of times.
  thread_local std::vector<Change> changes;
  thread_local std::vector<std::pair<double, double>> pts;
  changes.clear();
  for (const Trace& tr : traces) {
    corners(jobs[tr.job], tr, pts);
    add_changes(pts, changes);
  }
  std::sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) { return a.t < b.t; });
  double value = 0, slope = 0, peak = 0, last_t = 0;
  double stop = stop_above ? static_cast<double>(*stop_above) : kInf;
  for (size_t i = 0; i < changes.size();) {
    double t = changes[i].t;
    value += slope * (t - last_t);
    peak = std::max(peak, value);  // just before the changes at t
    for (; i < changes.size() && changes[i].t == t; ++i) {
      value += changes[i].value;
      slope += changes[i].slope;
    }
    peak = std::max(peak, value);
    last_t = t;
    if (peak > stop) break;
  }
  return static_cast<Bytes>(std::llround(peak));
}

}  // namespace memgate::plan
