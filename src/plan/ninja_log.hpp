// A `.ninja_log` as a workload (`memgate plan --ninja-log PATH`), so users
// of plain ninja get answers too.
//
// The log (v5, and v6 which has the same columns) holds, per line,
// start_ms, end_ms, mtime, output and command hash, appended build after
// build. Only the last entry per output counts; the outputs of one edge
// (same start, end and hash) are one job. Jobs are submitted in start
// order.
//
// The log has times only. Memory and CPU come from history when a
// recorded job has the same output (the "->OUTPUT" part of its identity):
// its peak, peak timing, profile and CPU share. Otherwise from the
// per-tool defaults of predict/predictor.hpp, the tool guessed from the
// output's name (.cu.o/.cuda.o: nvcc; .o/.obj: c++; .so/.a, or no
// extension: a link; anything else: a small custom step), with the CPU
// busy for the whole job and the peak held from 10% of the job to its end
// (nothing is known about its shape). The log was most likely written on
// this machine, so its times are taken to have been contended on this
// machine's cores.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/job.hpp"
#include "plan/workload.hpp"
#include "util/result.hpp"

namespace memgate::plan {

struct NinjaEdge {
  double start_s = 0;
  double end_s = 0;
  std::vector<std::string> outputs;
};

Result<std::vector<NinjaEdge>> parse_ninja_log(std::string_view text);

// "nvcc", "c++", "ld" or "other".
std::string tool_for_output(std::string_view output);

// `history` oldest first (History::jobs_for_prediction); the newest
// record of an output wins. `cores`: where the log was written.
// `matched`: edges found in history; `waits_removed`: edges whose time
// lost memgate's admission wait (the log was written under memgate, in
// the run history recorded).
std::vector<PlanJob> jobs_from_ninja_log(const std::vector<NinjaEdge>& edges, const std::vector<JobRecord>& history,
                                         int cores, int* matched = nullptr, int* waits_removed = nullptr);

}  // namespace memgate::plan
