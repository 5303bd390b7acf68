// The end-of-build summary on stderr, and the facts behind it, which the
// HTML report's summary table shows too (one computation, same numbers).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/build_summary.hpp"
#include "core/job.hpp"

namespace memgate {

// The build's summary (wall time, jobs, peak, waits: core/build_summary.hpp,
// the same numbers `memgate history` shows) and what the report adds.
struct BuildFacts : BuildSummary {
  double objects_per_min = 0;
  int jobs_waited = 0;        // jobs that could not start at once for lack of memory
  std::int64_t freezes = 0;
  std::int64_t requeues = 0;
  double requeued_cpu_s = 0;  // CPU time of the attempts those requeues (and OOM kills) threw away
  // Reservation running jobs gave back past their peaks (their envelope),
  // in GiB x s: the room later jobs had beside their tails. < 0: not recorded.
  double released_gib_s = -1;
  // Jobs started before their peak fitted, their climb timed to meet the
  // running jobs' falls (Counter::timed_starts). < 0: not recorded.
  std::int64_t timed_starts = -1;
  // Guesses that did not fit, started in the room beside running jobs past
  // their peaks (Counter::room_starts). < 0: not recorded.
  std::int64_t room_starts = -1;
  std::int64_t retries = 0;
  std::int64_t oom_kills = 0;
  std::int64_t ran_alone = 0;
  // Fractions of the wall time during which a waiting job was held back by
  // memory with a core free, by every core being busy, or by --jobs with a
  // core free; < 0 when the build did not record them.
  double memory_bound = -1;
  double cpu_bound = -1;
  double slots_bound = -1;
  std::vector<int> heaviest;  // indexes into BuildRecord::jobs, highest peak first
  std::string verdict;        // what limited the build, in one sentence
};

// A share of the wall time above this counts as "bound".
constexpr double kBoundThreshold = 0.2;

BuildFacts build_facts(const BuildRecord& build, size_t heaviest = 5);

// The verdict sentence for the given fractions (see BuildFacts).
// `slots` and `cores`: the build's --jobs and the machine's cores, named
// when the slots held it back.
std::string limit_verdict(double memory_bound, double cpu_bound, int jobs, double slots_bound = -1, int slots = 0,
                          int cores = 0);

// Every line starts with "memgate: " and ends with '\n' (for stderr): one
// or two lines (jobs, time, peak against the budget; what limited the
// build) unless memgate acted (core/build_summary.hpp: froze, requeued,
// reran, ran a job alone) or
// `verbose`, when the waits, the counters and the heaviest jobs follow. A
// failed build that lost a job to memory ends with format_memory_failure.
std::string format_summary(const BuildRecord& build);
// The same, with what the run lacked ("build not confined (--no-confine)")
// as a `memgate: degraded: ...` line before the memory explanation, so the
// explanation is always the last thing memgate prints.
// `notes` (lines the runner adds, such as the ungated compilers) come
// after the body, before the degraded line.
std::string format_summary(const BuildRecord& build, const std::vector<std::string>& degraded,
                           const std::vector<std::string>& notes = {}, bool verbose = false);

// Why a failed build lost a job to memory. Users read "Killed" or "Error
// 137" in the build log as a compiler error; these say what happened.
enum class MemoryDeath {
  kernel_oom,  // the kernel OOM killer ended its last attempt (outcome "oom")
  memgate,     // memgate killed it under pressure and gave up (outcome "requeued")
  sigkill,     // exit status 137 with no OOM kill recorded: most likely the OOM killer
};

struct LostJob {
  int job = -1;  // index into BuildRecord::jobs
  MemoryDeath how = MemoryDeath::kernel_oom;
};

// The jobs whose final attempt died of memory, heaviest first. Empty when
// the build succeeded: a job that was rerun and finished cost nothing.
std::vector<LostJob> jobs_lost_to_memory(const BuildRecord& build);

// The closing explanation of a failed build that lost jobs to memory, or
// processes memgate did not gate (counter "oom_killed_ungated"); "" when
// memory was not the cause. Names the job, its peak against the budget,
// that it was an OOM kill and not a compiler error, and what to do.
std::string format_memory_failure(const BuildRecord& build);

// "a...z": `text` cut in the middle to at most `max` bytes (UTF-8 safe
// cut points), for identities that are long paths.
std::string shorten_middle(const std::string& text, size_t max);

}  // namespace memgate
