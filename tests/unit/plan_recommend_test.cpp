// `--recommend` never recommends a job count
// whose simulated peak exceeds capacity - reserve, over many random
// workloads and machines; and more memory never recommends fewer jobs.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <random>

#include "plan/machine.hpp"
#include "plan/plan.hpp"

using namespace memgate;
using namespace memgate::plan;

namespace {

// std::mt19937_64's output is fixed by the standard (its distributions
// are not), so values are derived from it by hand.
struct Rng {
  std::mt19937_64 gen;
  explicit Rng(std::uint64_t seed) : gen(seed) {}
  double uniform(double lo, double hi) {
    return lo + (hi - lo) * static_cast<double>(gen() >> 11) * (1.0 / 9007199254740992.0);
  }
  int between(int lo, int hi) { return lo + static_cast<int>(gen() % static_cast<std::uint64_t>(hi - lo + 1)); }
};

PlanJob random_job(Rng& rng, int i) {
  PlanJob j;
  j.name = "job" + std::to_string(i);
  j.work_s = rng.uniform(1, 100);
  j.threads = rng.between(1, 4);
  j.key.cpu_weight = j.threads;
  j.cpu_s = rng.uniform(0, 1) < 0.2 ? 0 : j.work_s * j.threads * rng.uniform(0.3, 1.0);
  Bytes peak = static_cast<Bytes>(rng.uniform(50.0 * MiB, 6.0 * GiB));
  int points = rng.between(2, 8);
  double at = rng.uniform(0, 1);
  j.profile.push_back({0.0, static_cast<Bytes>(peak * rng.uniform(0.05, 0.5))});
  for (int k = 1; k < points - 1; ++k)
    j.profile.push_back({static_cast<double>(k) / (points - 1), static_cast<Bytes>(peak * rng.uniform(0.05, 0.9))});
  j.profile.push_back({1.0, static_cast<Bytes>(peak * rng.uniform(0.05, 0.5))});
  j.profile.push_back({at, peak});
  std::sort(j.profile.begin(), j.profile.end(), [](const ProfilePoint& a, const ProfilePoint& b) { return a.p < b.p; });
  normalize(j);
  return j;
}

// Independently of make_plan: the worst peak of -j n over the recorded
// order and the same random orders.
Bytes worst_peak(const std::vector<PlanJob>& jobs, int n, int cores, int orders, std::uint64_t seed) {
  std::vector<int> recorded(jobs.size());
  std::iota(recorded.begin(), recorded.end(), 0);
  Bytes worst = peak_memory(jobs, simulate_static(jobs, recorded, n, cores).traces);
  for (const auto& order : random_orders(static_cast<int>(jobs.size()), orders, seed))
    worst = std::max(worst, peak_memory(jobs, simulate_static(jobs, order, n, cores).traces));
  return worst;
}

}  // namespace

TEST(PlanRecommend, NeverRecommendsACountWhosePeakExceedsCapacityMinusReserve) {
  Rng rng(7);
  PlanOptions o;
  o.orders = 30;
  o.rows = false;
  o.memgate = false;
  int recommended = 0, none = 0, limited_by_memory = 0;
  for (int c = 0; c < 150; ++c) {
    std::vector<PlanJob> jobs;
    int n = rng.between(3, 30);
    for (int i = 0; i < n; ++i) jobs.push_back(random_job(rng, i));
    Machine m = machine_with(rng.between(1, 16), static_cast<Bytes>(rng.uniform(2.0 * GiB, 64.0 * GiB)));
    SCOPED_TRACE(testing::Message() << "case " << c << ": " << n << " jobs, " << m.cores << " cores, "
                                    << format_bytes(m.capacity));
    PlanResult r = make_plan(jobs, m, o);
    Bytes largest = 0;
    for (const PlanJob& j : jobs) largest = std::max(largest, j.peak);
    if (!r.recommended) {
      ++none;
      EXPECT_GT(largest, m.budget()) << "only a job too big to run alone leaves nothing safe";
      continue;
    }
    ++recommended;
    int rec = *r.recommended;
    EXPECT_LE(rec, r.safe_up_to);
    EXPECT_LE(worst_peak(jobs, rec, m.cores, o.orders, o.seed), m.budget());
    // The rule itself: within 5% of the best safe time, and the smallest so.
    std::vector<int> order(jobs.size());
    std::iota(order.begin(), order.end(), 0);
    auto wall = [&](int k) { return simulate_static(jobs, order, k, m.cores).wall_s; };
    double best = wall(1);
    for (int k = 1; k <= r.safe_up_to; ++k) best = std::min(best, wall(k));
    EXPECT_LE(wall(rec), best * 1.05 + 1e-9);
    for (int k = 1; k < rec; ++k) EXPECT_GT(wall(k), best * 1.05) << "-j " << k << " was good enough";
    if (r.safe_up_to < r.jobs_to) ++limited_by_memory;
  }
  // The random cases must exercise every branch.
  EXPECT_GT(recommended, 50);
  EXPECT_GT(none, 5);
  EXPECT_GT(limited_by_memory, 20);
}

TEST(PlanRecommend, MoreMemoryNeverRecommendsFewerJobs) {
  Rng rng(11);
  PlanOptions o;
  o.orders = 30;
  o.rows = false;
  o.memgate = false;
  for (int c = 0; c < 40; ++c) {
    std::vector<PlanJob> jobs;
    int n = rng.between(3, 24);
    for (int i = 0; i < n; ++i) jobs.push_back(random_job(rng, i));
    int cores = rng.between(1, 16);
    int last = 0;
    for (Bytes mem : {4 * GiB, 8 * GiB, 12 * GiB, 24 * GiB, 48 * GiB, 96 * GiB}) {
      PlanResult r = make_plan(jobs, machine_with(cores, mem), o);
      int rec = r.recommended.value_or(0);
      EXPECT_GE(rec, last) << "case " << c << " at " << format_bytes(mem);
      last = rec;
    }
  }
}

TEST(PlanRecommend, TheReserveCountsNotJustTheCapacity) {
  // Two jobs of 3 GiB together peak at 6 GiB: within a 6 GiB capacity, but
  // not within capacity - reserve (6 GiB - 512 MiB).
  PlanJob j;
  j.work_s = 10;
  j.cpu_s = 10;
  j.profile = {{0.0, 3 * GiB}, {1.0, 3 * GiB}};
  normalize(j);
  std::vector<PlanJob> jobs(4, j);
  PlanResult r = make_plan(jobs, machine_with(4, 6 * GiB));
  ASSERT_TRUE(r.recommended);
  EXPECT_EQ(*r.recommended, 1);
  ASSERT_GE(r.rows.size(), 2u);
  EXPECT_DOUBLE_EQ(r.rows[1].oom_risk, 0.0) << "6 GiB does not exceed the capacity";
  EXPECT_FALSE(r.rows[1].safe) << "but it eats the reserve";
}
