// The flash-attn 2.8 kernel build (96 nvcc jobs
// from the measured table) on a hypothetical 128-core, 432 GiB machine,
// and how the answer moves with memory, cores and nvcc --threads.
#include <gtest/gtest.h>

#include <fmt/core.h>

#include <algorithm>
#include <numeric>

#include "plan/jobs_csv.hpp"
#include "plan/machine.hpp"
#include "plan/plan.hpp"

using namespace memgate;
using namespace memgate::plan;

namespace {

struct Case {
  int cores;
  Bytes memory;
  int threads, targets;
};

struct PlanOutcome {
  Case c;
  PlanResult plan;
  std::vector<PlanJob> jobs;
};

const std::vector<MeasuredRow>& table() {
  static const std::vector<MeasuredRow> rows = [] {
    auto r = read_jobs_csv(std::string(MEMGATE_FIXTURES) + "/flash-attn/flash-attn-nvcc-jobs.csv");
    return r.ok() ? *r : std::vector<MeasuredRow>{};
  }();
  return rows;
}

PlanOutcome plan_for(Case c) {
  auto w = workload_from_measurements(table(), NvccShape{c.threads, c.targets});
  EXPECT_TRUE(w.ok());
  PlanOptions o;
  o.rows = false;  // the recommendation and memgate's run are what this test reads
  PlanOutcome out{c, make_plan(w->jobs, machine_with(c.cores, c.memory), o), w->jobs};
  const PlanResult& r = out.plan;
  fmt::print("  {:>3} cores {:>8} --threads {} x {} target(s): -j {:>3} ({:>6} static), memgate {:>6}, peak {}\n",
             c.cores, format_bytes(c.memory), c.threads, c.targets,
             r.recommended ? std::to_string(*r.recommended) : "none", format_duration(r.best_safe_wall_s),
             format_duration(r.memgate->wall_s), format_bytes(r.memgate->peak));
  return out;
}

Bytes worst_peak(const PlanOutcome& o, int n) {
  std::vector<int> recorded(o.jobs.size());
  std::iota(recorded.begin(), recorded.end(), 0);
  Bytes worst = peak_memory(o.jobs, simulate_static(o.jobs, recorded, n, o.c.cores).traces);
  for (const auto& order : random_orders(static_cast<int>(o.jobs.size()), 200, 1))
    worst = std::max(worst, peak_memory(o.jobs, simulate_static(o.jobs, order, n, o.c.cores).traces));
  return worst;
}

// What must hold on any machine.
void check(const PlanOutcome& o) {
  SCOPED_TRACE(testing::Message() << o.c.cores << " cores, " << format_bytes(o.c.memory) << ", --threads "
                                  << o.c.threads << " x " << o.c.targets);
  const PlanResult& r = o.plan;
  ASSERT_TRUE(r.recommended);
  EXPECT_LE(worst_peak(o, *r.recommended), r.machine.budget());
  ASSERT_TRUE(r.memgate);
  EXPECT_TRUE(r.memgate->finished);
  EXPECT_EQ(r.memgate->failed, 0);
  EXPECT_LE(r.memgate->peak, r.machine.budget()) << "memgate keeps the reserve free";
  EXPECT_LE(r.memgate->wall_s, r.best_safe_wall_s * 1.05) << "memgate is no slower than the best safe static -j";
}

}  // namespace

TEST(PlanFlashAttn, On128CoresAnd432GiBTheAnswerMovesWithMemoryCoresAndThreads) {
  ASSERT_EQ(table().size(), 25u);
  fmt::print("flash-attn 2.8, 96 kernels:\n");
  // One target (sm80), --threads 1: ~6.5 GiB at most per job.
  PlanOutcome base = plan_for({128, 432 * GiB, 1, 1});
  // A 4-arch list with flash-attn's default --threads 4: four pipelines per job.
  PlanOutcome t4 = plan_for({128, 432 * GiB, 4, 4});
  PlanOutcome t4_864 = plan_for({128, 864 * GiB, 4, 4});
  PlanOutcome t4_64 = plan_for({64, 432 * GiB, 4, 4});
  PlanOutcome t1x4 = plan_for({128, 432 * GiB, 1, 4});
  for (const PlanOutcome* o : {&base, &t4, &t4_864, &t4_64, &t1x4}) check(*o);

  // One target fits almost all 96 jobs at once in 432 GiB.
  EXPECT_GE(*base.plan.recommended, 64);
  // Four pipelines per job quadruple the peaks: far fewer jobs fit...
  EXPECT_LT(*t4.plan.recommended, *base.plan.recommended / 2);
  EXPECT_LT(t4.plan.safe_up_to, 48);
  // ...twice the memory lets more run, and finishes sooner.
  EXPECT_GT(*t4_864.plan.recommended, *t4.plan.recommended);
  EXPECT_LT(t4_864.plan.best_safe_wall_s, t4.plan.best_safe_wall_s);
  // Half the cores: never more jobs than the memory allowed, never faster.
  EXPECT_LE(*t4_64.plan.recommended, t4.plan.safe_up_to);
  EXPECT_GE(t4_64.plan.memgate->wall_s, t4.plan.memgate->wall_s * 0.99);
  // --threads 1 over four archs runs the pipelines one after another: one
  // pipeline's peak, so more jobs fit than with --threads 4.
  EXPECT_GT(*t1x4.plan.recommended, *t4.plan.recommended);
  // Where memory binds, memgate's admission beats every safe static -j.
  EXPECT_LT(t4.plan.memgate->wall_s, t4.plan.best_safe_wall_s);
}

TEST(PlanFlashAttn, MoreMemoryNeverRecommendsFewerJobs) {
  auto w = workload_from_measurements(table(), NvccShape{4, 4});
  ASSERT_TRUE(w.ok());
  PlanOptions o;
  o.rows = false;
  o.memgate = false;
  int last = 0;
  for (Bytes mem : {64 * GiB, 128 * GiB, 256 * GiB, 432 * GiB, 640 * GiB, 864 * GiB}) {
    PlanResult r = make_plan(w->jobs, machine_with(128, mem), o);
    ASSERT_TRUE(r.recommended) << format_bytes(mem);
    EXPECT_GE(*r.recommended, last) << format_bytes(mem);
    last = *r.recommended;
  }
}
