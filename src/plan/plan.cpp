#include "plan/plan.hpp"

#include <algorithm>
#include <functional>
#include <numeric>
#include <set>

namespace memgate::plan {

std::vector<std::vector<int>> random_orders(int n, int count, std::uint64_t seed) {
  // splitmix64: tiny, well mixed, and the same everywhere (std::shuffle and
  // the std distributions are not).
  std::uint64_t state = seed;
  auto next = [&state] {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  std::vector<std::vector<int>> out;
  for (int c = 0; c < count; ++c) {
    std::vector<int> order(static_cast<size_t>(std::max(0, n)));
    std::iota(order.begin(), order.end(), 0);
    for (int i = n - 1; i > 0; --i) std::swap(order[i], order[next() % static_cast<std::uint64_t>(i + 1)]);
    out.push_back(std::move(order));
  }
  return out;
}

Bytes largest_peaks_sum(const std::vector<PlanJob>& jobs, int n) {
  std::vector<Bytes> peaks;
  for (const PlanJob& j : jobs) peaks.push_back(j.peak);
  std::sort(peaks.begin(), peaks.end(), std::greater<>());
  Bytes sum = 0;
  for (int i = 0; i < n && i < static_cast<int>(peaks.size()); ++i) sum += peaks[i];
  return sum;
}

namespace {

struct OrderStats {
  Bytes worst = 0;
  int over_capacity = 0;
  bool complete = false;  // every sampled order was simulated to its end
};

class Planner {
 public:
  Planner(const std::vector<PlanJob>& jobs, const Machine& machine, const PlanOptions& options)
      : jobs_(jobs), machine_(machine), options_(options), n_(static_cast<int>(jobs.size())) {
    recorded_.resize(jobs.size());
    std::iota(recorded_.begin(), recorded_.end(), 0);
    orders_ = random_orders(n_, std::max(0, options.orders), options.seed);
    std::vector<Bytes> peaks;
    for (const PlanJob& j : jobs) peaks.push_back(j.peak);
    std::sort(peaks.begin(), peaks.end(), std::greater<>());
    top_sums_.assign(1, 0);
    for (Bytes p : peaks) top_sums_.push_back(top_sums_.back() + p);
  }

  // -j n with n >= the job count runs every job at once, whatever the order.
  int effective(int n) const { return std::clamp(n, 1, std::max(1, n_)); }

  double wall(int n) {
    n = effective(n);
    auto it = walls_.find(n);
    if (it != walls_.end()) return it->second;
    return walls_[n] = simulate_static(jobs_, recorded_, n, machine_.cores).wall_s;
  }

  Bytes recorded_peak(int n) {
    n = effective(n);
    auto it = peaks_.find(n);
    if (it != peaks_.end()) return it->second;
    return peaks_[n] = peak_memory(jobs_, simulate_static(jobs_, recorded_, n, machine_.cores).traces);
  }

  // Stops at the first order above `stop` when given.
  OrderStats order_stats(int n, std::optional<Bytes> stop) {
    n = effective(n);
    auto it = stats_.find(n);
    if (it != stats_.end() && it->second.complete) return it->second;
    OrderStats s;
    s.complete = true;
    if (n < n_) {
      for (const auto& order : orders_) {
        Bytes peak = peak_memory(jobs_, simulate_static(jobs_, order, n, machine_.cores).traces, stop);
        s.worst = std::max(s.worst, peak);
        if (peak > machine_.capacity) ++s.over_capacity;
        if (stop && peak > *stop) {
          s.complete = false;
          break;
        }
      }
    } else if (recorded_peak(n) > machine_.capacity) {
      s.over_capacity = static_cast<int>(orders_.size());  // every order is the same schedule
    }
    s.worst = std::max(s.worst, recorded_peak(n));
    if (s.complete) stats_[n] = s;
    return s;
  }

  bool safe_alone(int n) {
    Bytes budget = machine_.budget();
    if (top_sums_[static_cast<size_t>(effective(n))] <= budget) return true;
    if (recorded_peak(n) > budget) return false;
    return order_stats(n, budget).worst <= budget;
  }

  PlanRow row(int n) {
    PlanRow r;
    r.jobs = n;
    r.wall_s = wall(n);
    r.objects_per_min = r.wall_s > 0 ? n_ * 60.0 / r.wall_s : 0;
    r.peak = recorded_peak(n);
    OrderStats s = order_stats(n, std::nullopt);
    r.worst_peak = s.worst;
    r.oom_risk = orders_.empty() ? (r.peak > machine_.capacity ? 1.0 : 0.0)
                                 : static_cast<double>(s.over_capacity) / static_cast<double>(orders_.size());
    return r;
  }

 private:
  const std::vector<PlanJob>& jobs_;
  Machine machine_;
  PlanOptions options_;
  int n_;
  std::vector<int> recorded_;
  std::vector<std::vector<int>> orders_;
  std::vector<Bytes> top_sums_;
  std::map<int, double> walls_;
  std::map<int, Bytes> peaks_;
  std::map<int, OrderStats> stats_;
};

std::set<int> rows_to_show(const PlanResult& r) {
  std::set<int> show;
  auto add = [&](int n) {
    if (n >= r.jobs_from && n <= r.jobs_to) show.insert(n);
  };
  if (r.jobs_to - r.jobs_from < 32) {
    for (int n = r.jobs_from; n <= r.jobs_to; ++n) show.insert(n);
    return show;
  }
  for (int n = 1; n <= r.jobs_to; n *= 2) add(n);
  add(r.jobs_from);
  add(r.jobs_to);
  add(r.machine.cores);
  add(r.safe_up_to + 1);
  if (r.recommended)
    for (int n = *r.recommended - 1; n <= *r.recommended + 1; ++n) add(n);
  return show;
}

}  // namespace

PlanResult make_plan(const std::vector<PlanJob>& jobs, const Machine& machine, const PlanOptions& options) {
  PlanResult r;
  r.machine = machine;
  r.job_count = static_cast<int>(jobs.size());
  r.orders = std::max(0, options.orders);
  int cores = std::max(1, machine.cores);
  r.jobs_from = std::max(1, options.jobs_from);
  r.jobs_to = options.jobs_to > 0 ? options.jobs_to : std::min(std::max(2 * cores, 8), std::max(1, r.job_count));
  r.jobs_to = std::max(r.jobs_to, r.jobs_from);
  for (const PlanJob& j : jobs)
    if (j.peak > r.largest_peak) r.largest_peak = j.peak, r.largest_job = j.name;
  if (jobs.empty()) return r;

  Planner planner(jobs, machine, options);
  // Safe counts form a prefix of the range (see plan.hpp).
  for (int n = r.jobs_from; n <= r.jobs_to && planner.safe_alone(n); ++n) r.safe_up_to = n;
  if (r.safe_up_to > 0) {
    r.best_safe_wall_s = planner.wall(r.jobs_from);
    for (int n = r.jobs_from; n <= r.safe_up_to; ++n) r.best_safe_wall_s = std::min(r.best_safe_wall_s, planner.wall(n));
    for (int n = r.jobs_from; n <= r.safe_up_to && !r.recommended; ++n)
      if (planner.wall(n) <= r.best_safe_wall_s * (1 + options.within)) r.recommended = n;
  }
  for (int n : options.rows ? rows_to_show(r) : std::set<int>{}) {
    PlanRow row = planner.row(n);
    row.safe = n <= r.safe_up_to;
    r.rows.push_back(row);
  }
  if (options.memgate) {
    MemgateRun m = simulate_memgate(jobs, machine, options.memgate_options);
    MemgateRow row;
    row.wall_s = m.wall_s;
    row.objects_per_min = m.wall_s > 0 ? r.job_count * 60.0 / m.wall_s : 0;
    row.peak = m.peak;
    row.finished = m.finished;
    row.failed = m.failed;
    row.counters = m.counters;
    row.admission = options.memgate_options.admission;
    r.memgate = row;
  }
  return r;
}

}  // namespace memgate::plan
