// How long `memgate plan` takes on the flash-attn workload: the
// recommendation alone, the table, and memgate's simulation, for a few
// machines. Usage: bench_plan_speed [FIXTURES_DIR]
#include <fmt/core.h>

#include <chrono>
#include <string>

#include "plan/jobs_csv.hpp"
#include "plan/machine.hpp"
#include "plan/plan.hpp"

using namespace memgate;
using namespace memgate::plan;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir = argc > 1 ? argv[1] : "tests/fixtures/flash-attn";
  auto rows = read_jobs_csv(dir + "/flash-attn-nvcc-jobs.csv");
  if (!rows) {
    fmt::print(stderr, "{}\n", rows.error());
    return 1;
  }
  struct Case {
    int cores;
    Bytes memory;
    NvccShape shape;
  };
  for (Case c : {Case{128, 432 * GiB, {1, 1}}, Case{128, 432 * GiB, {4, 4}}, Case{64, 432 * GiB, {4, 2}},
                 Case{16, 64 * GiB, {1, 1}}}) {
    auto w = workload_from_measurements(*rows, c.shape);
    Machine m = machine_with(c.cores, c.memory);
    PlanOptions only;
    only.rows = false;
    only.memgate = false;
    auto t0 = std::chrono::steady_clock::now();
    PlanResult r = make_plan(w->jobs, m, only);
    double t_rec = seconds_since(t0);
    PlanOptions table;
    table.memgate = false;
    t0 = std::chrono::steady_clock::now();
    make_plan(w->jobs, m, table);
    double t_table = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    MemgateRun g = simulate_memgate(w->jobs, m);
    double t_gate = seconds_since(t0);
    fmt::print("{:>3} cores {:>9} T{} K{}: -j {:>3}  recommend {:.2f}s  table {:.2f}s  memgate {:.2f}s ({:.0f} s build)\n",
               c.cores, format_bytes(c.memory), c.shape.threads, c.shape.targets, r.recommended.value_or(0), t_rec,
               t_table, t_gate, g.wall_s);
  }
  return 0;
}
