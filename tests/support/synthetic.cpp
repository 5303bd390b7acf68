#include "support/synthetic.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <queue>
#include <random>

#include "core/job_class.hpp"

namespace memgate {
namespace {

struct Slots {
  // Free times of the slots, earliest first.
  std::priority_queue<double, std::vector<double>, std::greater<>> free;
  explicit Slots(int n) {
    for (int i = 0; i < n; ++i) free.push(0);
  }
  double take() {
    double t = free.top();
    free.pop();
    return t;
  }
};

JobKey make_key(int i, std::mt19937& rng) {
  static const char* tools[] = {"nvcc", "g++", "cc", "clang++"};
  const char* tool = tools[std::uniform_int_distribution<int>(0, 3)(rng)];
  std::string stem = fmt::format("kernel_{}_hdim{}.cu", i, 32 << (i % 4));
  // Some identities carry characters that must be escaped in HTML and JSON.
  const char* odd = i % 37 == 0 ? "<tmpl&\"x\">/" : "";
  JobIdentity id{JobClass{"", tool, "compile", {"sm_80"}}, fmt::format("csrc/{}{}", odd, stem),
                 fmt::format("build/temp.linux-x86_64-cpython-311/csrc/{}{}.o", odd, stem), ""};
  return make_job_key(id, stem);
}

// A profile that rises to the peak 10-30% of the way in and falls to a
// quarter of it, like the measured nvcc jobs.
std::vector<MemSample> make_profile(double wall, Bytes peak, int points, double peak_frac) {
  std::vector<MemSample> p;
  for (int k = 0; k < points; ++k) {
    double f = static_cast<double>(k) / (points - 1);
    double level = f < peak_frac ? f / peak_frac : 0.25 + 0.75 * std::exp(-(f - peak_frac) * 8);
    p.push_back({f * wall, static_cast<Bytes>(static_cast<double>(peak) * level)});
  }
  return p;
}

void add_job(BuildRecord& b, int i, Slots& slots, std::mt19937& rng, const SyntheticOptions& o) {
  std::lognormal_distribution<double> wall_d(2.0, 0.9);
  std::lognormal_distribution<double> peak_d(std::log(600.0), 0.8);
  std::uniform_real_distribution<double> u(0, 1);
  JobRecord j;
  j.key = make_key(i, rng);
  j.argv_digest = fmt::format("{:016x}", rng());
  j.cwd = "/src/project";
  j.peak_bytes = static_cast<Bytes>(std::min(peak_d(rng), 7000.0) * static_cast<double>(MiB));
  j.predicted.peak = static_cast<Bytes>(static_cast<double>(j.peak_bytes) * (0.8 + 0.4 * u(rng)));
  j.predicted.source = PredictionSource::history;
  j.submit_s = 0;
  const bool retried = u(rng) < o.retry_share;
  const int attempts = retried ? 2 : 1;
  for (int a = 0; a < attempts; ++a) {
    double start = slots.take();
    double wall = std::min(wall_d(rng), 300.0);
    bool last = a == attempts - 1;
    if (!last) wall *= 0.3;  // killed part-way
    Attempt at{start, start + wall, last ? Outcome::ok : (i % 2 ? Outcome::requeued : Outcome::oom), j.peak_bytes};
    if (a == 0) j.start_s = start;
    j.attempt_log.push_back(at);
    slots.free.push(at.end_s);
    if (!last) {
      b.events.push_back({at.end_s, at.outcome == Outcome::oom ? EventKind::oom_kill : EventKind::requeue, i, "memory ran short"});
    }
  }
  j.end_s = j.attempt_log.back().end_s;
  j.attempts = attempts;
  j.exit_status = i % 997 == 0 ? 1 : 0;
  if (j.exit_status != 0) j.attempt_log.back().outcome = Outcome::failed;
  j.cpu_s = j.wall_s() * (0.7 + 0.3 * u(rng));
  j.wait_s = u(rng) < 0.3 ? u(rng) * 20 : 0;
  const double peak_frac = 0.1 + 0.2 * u(rng);
  j.t_peak_s = peak_frac * j.wall_s();
  j.profile = make_profile(j.wall_s(), j.peak_bytes, 16 + i % 49, peak_frac);
  b.jobs.push_back(std::move(j));
}

void add_memory_series(BuildRecord& b, int points) {
  double end = 0;
  for (const auto& j : b.jobs) end = std::max(end, j.end_s);
  // Each job's contribution, as a difference array over the sample grid.
  std::vector<double> diff(static_cast<size_t>(points) + 1, 0);
  for (const auto& j : b.jobs) {
    const Attempt& a = j.attempt_log.back();
    auto idx = [&](double t) { return static_cast<size_t>(std::clamp(t / end * (points - 1), 0.0, points - 1.0)); };
    diff[idx(a.start_s)] += 0.55 * static_cast<double>(j.peak_bytes);
    diff[idx(a.end_s) + 1] -= 0.55 * static_cast<double>(j.peak_bytes);
  }
  double level = 0;
  Bytes base = 300 * MiB;  // make, ninja, python
  for (int k = 0; k < points; ++k) {
    level += diff[static_cast<size_t>(k)];
    Bytes used = base + static_cast<Bytes>(level);
    b.memory.push_back({end * k / (points - 1), used});
    b.peak_bytes = std::max(b.peak_bytes, used);
  }
}

void add_freezes(BuildRecord& b, std::mt19937& rng) {
  std::uniform_int_distribution<size_t> pick(0, b.jobs.size() - 1);
  const size_t n = b.jobs.size() / 50 + 1;
  for (size_t k = 0; k < n; ++k) {
    const size_t i = pick(rng);
    const JobRecord& j = b.jobs[i];
    const double t = j.start_s + 0.2 * j.wall_s();
    b.events.push_back({t, EventKind::freeze, static_cast<int>(i), "memory above 95% of the limit"});
    b.events.push_back({t + 0.1 * j.wall_s(), EventKind::thaw, static_cast<int>(i), "memory back below 88%"});
    b.jobs[i].frozen_s = 0.1 * j.wall_s();
  }
  std::stable_sort(b.events.begin(), b.events.end(),
                   [](const BuildEvent& x, const BuildEvent& y) { return x.t_s < y.t_s; });
}

void add_counters(BuildRecord& b) {
  std::int64_t wait_ms = 0, frozen_ms = 0, retried = 0;
  for (const auto& j : b.jobs) {
    wait_ms += static_cast<std::int64_t>(j.wait_s * 1000);
    frozen_ms += static_cast<std::int64_t>(j.frozen_s * 1000);
    retried += j.attempts - 1;
  }
  auto count = [&](EventKind kind) {
    return static_cast<std::int64_t>(std::count_if(b.events.begin(), b.events.end(),
                                                   [&](const BuildEvent& e) { return e.kind == kind; }));
  };
  const auto wall_ms = static_cast<std::int64_t>(b.wall_s() * 1000);
  b.counters = {{Counter::jobs, static_cast<std::int64_t>(b.jobs.size())},
                {Counter::admitted, static_cast<std::int64_t>(b.jobs.size()) + retried},
                {Counter::waited_for_memory, static_cast<std::int64_t>(b.jobs.size() / 4)},
                {Counter::frozen, count(EventKind::freeze)},
                {Counter::thawed, count(EventKind::thaw)},
                {Counter::requeued, count(EventKind::requeue)},
                {Counter::oom_killed, count(EventKind::oom_kill)},
                {Counter::retried, retried},
                {Counter::wait_memory_ms, wait_ms},
                {Counter::frozen_ms, frozen_ms},
                {Counter::memory_bound_ms, wall_ms * 45 / 100},
                {Counter::cpu_bound_ms, wall_ms * 10 / 100}};
}

}  // namespace

BuildRecord make_synthetic_build(const SyntheticOptions& o) {
  std::mt19937 rng(o.seed);
  BuildRecord b;
  b.cwd = "/src/project";
  b.command = "pip install flash-attn --no-build-isolation";
  b.start_unix = 1700000000;
  b.capacity = 64 * GiB;
  b.budget = 60 * GiB;
  b.slots = std::max(1, o.slots);
  Slots slots(b.slots);
  for (int i = 0; i < o.jobs; ++i) add_job(b, i, slots, rng, o);
  double end = 0;
  for (const auto& j : b.jobs) end = std::max(end, j.end_s);
  b.end_unix = b.start_unix + end + 1;
  if (!b.jobs.empty()) {
    add_memory_series(b, std::max(2, o.memory_points));
    add_freezes(b, rng);
  }
  add_counters(b);
  return b;
}

}  // namespace memgate
