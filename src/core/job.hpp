// The vocabulary every part of memgate shares: what a job is, what we
// predict about it, what we measured, and what a finished build leaves
// behind. Plain data only; no I/O here.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "util/size.hpp"

namespace memgate {

// What the wrapper tells the governor about one compiler invocation, plus
// what the governor derives from it before predicting.
struct JobKey {
  std::string tool;      // "nvcc", "g++", "cc", "clang++", "ld", ... (basename of the real program)
  std::string identity;  // stable across builds of the same tree (see predict/identity.hpp)
  std::string klass;     // coarser grouping for online learning: tool + arch flags
  std::string stem;      // main source file name without directories, for "similar" matching
  int cpu_weight = 1;    // CPU slots the job occupies (nvcc --threads across archs)
};

// What the predictor expects of a job. All figures are for the whole
// process tree of the job (nvcc -> cicc -> ptxas).
struct Prediction {
  Bytes peak = 0;            // peak memory
  double wall_s = 0;         // duration; 0 = unknown
  double cpu_s = 0;          // CPU time; 0 = unknown
  // When the job is past its peak for good: the last moment its memory was
  // within 90% of the peak, as a fraction of its duration. 1.0 = the peak
  // may come at any time (never release the reservation early).
  double peak_over_frac = 1.0;
  // The most memory the job uses after that moment; 0 = unknown.
  Bytes after_peak = 0;
  double confidence = 0;     // 0 (a guess) .. 1 (seen this exact job often)
  std::string source;        // "history", "similar", "build", "default"
};

// A point of a memory profile: seconds since the job (or build) started.
struct MemSample {
  double t_s = 0;
  Bytes bytes = 0;
};

// One run of a job's program. A job that was requeued has several.
struct Attempt {
  double start_s = 0;        // since build start
  double end_s = 0;
  std::string outcome;       // "ok", "failed", "requeued" (killed by memgate), "oom" (kernel OOM kill), "lost"
  Bytes peak_bytes = 0;
};

// Everything known about one finished job. This is what history stores,
// what the predictor learns from, and what plan and report read.
struct JobRecord {
  JobKey key;
  std::string argv_digest;   // hex digest of argv, for "same command?" checks
  std::string cwd;
  Prediction predicted;      // what admission used for the first attempt
  double submit_s = 0;       // since build start: when the wrapper asked
  double start_s = 0;        // first admission
  double end_s = 0;          // last attempt's end
  double wait_s = 0;         // total time waiting for admission, all attempts
  double frozen_s = 0;       // total time frozen
  double cpu_s = 0;          // CPU time of the tree, last attempt
  Bytes peak_bytes = 0;      // peak of the tree, max over attempts
  double t_peak_s = 0;       // seconds from the last attempt's start to its peak
  double peak_over_frac = 1.0;  // see Prediction
  Bytes after_peak_bytes = 0;   // see Prediction
  int exit_status = 0;       // the program's exit code, or 128+signal
  int attempts = 1;
  std::vector<Attempt> attempt_log;
  std::vector<MemSample> profile;  // last attempt, downsampled (<= 64 points), t relative to attempt start
  double wall_s() const { return end_s - start_s; }
};

// A decision the governor took, for the summary, report and trace.
struct BuildEvent {
  double t_s = 0;            // since build start
  std::string kind;          // "freeze", "thaw", "requeue", "oom_kill", "retry", "alone", "pressure"
  int job = -1;              // index into BuildRecord::jobs, or -1
  std::string reason;
};

struct BuildRecord {
  std::int64_t id = 0;       // assigned by history; 0 until stored
  std::string cwd;
  std::string command;       // the build command line, shell-quoted for display
  double start_unix = 0;     // wall-clock seconds since the epoch
  double end_unix = 0;
  int exit_status = 0;
  Bytes capacity = 0;
  Bytes budget = 0;
  int slots = 0;             // --jobs: CPU slots
  Bytes peak_bytes = 0;      // peak memory of the whole build
  std::map<std::string, std::int64_t> counters;  // "admitted", "waited_for_memory", "frozen", "requeued", "oom_killed", "retried", ...
  std::vector<MemSample> memory;   // build memory over time (t since build start)
  std::vector<BuildEvent> events;
  std::vector<JobRecord> jobs;
  double wall_s() const { return end_unix - start_unix; }
};

}  // namespace memgate

// Counter names used in BuildRecord::counters (every decision leaves one):
//   jobs             jobs finished (all outcomes)
//   failed           jobs whose final status was non-zero
//   admitted         admissions (attempts started)
//   waited_for_memory  jobs that could not start at once for lack of memory
//   frozen, thawed   freeze / thaw actions
//   requeued         jobs killed by memgate under pressure and queued again
//   oom_killed       attempts killed by the kernel OOM killer (then rerun)
//   retried          reruns of any kind
//   ran_alone        jobs bigger than the budget, run with nothing else
//   wait_memory_ms   summed time jobs spent waiting for memory
//   memory_bound_ms  build time during which some job waited for memory only
//   cpu_bound_ms     build time during which jobs waited for CPU slots only
//   frozen_ms        summed time jobs spent frozen
