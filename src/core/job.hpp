// The vocabulary every part of memgate shares: what a job is, what we
// predict about it, what we measured, and what a finished build leaves
// behind. Plain data only; no I/O here.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/size.hpp"

namespace memgate {

// Where a prediction came from, best first.
enum class PredictionSource {
  history,   // this identity's own past runs
  imported,  // profiles imported into history from another machine (history import)
  prior,     // a prior file seeding this run only (--prior, MEMGATE_PRIOR, the shipped flash-attn prior)
  similar,   // jobs like it (same class, similar source name), in history
  build,     // jobs of the same class finished earlier in this build
  profile,   // plan: the job's own measured profile
  fallback,  // per-tool conservative defaults ("default")
};

// How one attempt of a job ended.
enum class Outcome {
  ok,        // exited 0
  failed,    // exited non-zero (a compiler error)
  requeued,  // killed by memgate under pressure, run again later
  oom,       // killed by the kernel OOM killer
  lost,      // the wrapper vanished
};

// Where a job's compile ran. Its record is always the local
// side: what this machine spent on it (for a remote job, the launcher and
// the local preprocessing).
enum class Placement {
  local,      // here
  remote,     // handed to a distributed engine by the build's own launcher (CC="distcc gcc")
  offloaded,  // sent to the engine by memgate (--offload): it would have waited for local memory
};

// A decision memgate took, or something it saw, for the log, summary,
// report and trace.
enum class EventKind {
  freeze,     // a job was frozen to stop the build's growth
  thaw,       // ...and thawed
  kill,       // memgate killed a job under pressure
  requeue,    // ...and queued it again
  oom_kill,   // the kernel OOM killer ended a job
  retry,      // a job killed by the kernel runs again
  gave_up,    // a job died of memory too often; its failure stands
  alone,      // a job bigger than the budget runs with nothing else
  overshoot,  // a job used more than predicted (routine: counted, not logged)
  pressure,   // memory stalls (PSI) made the build stop admitting
  offload,    // a job waiting for local memory was sent to a distributed engine
  decline,    // a build server declined a job that waited too long
  fallback,   // a job handed to an engine was compiled here after all (distcc's local fallback)
};

// Every decision leaves a counter, as ccache's statistics do. Stored in
// history and printed under these names (core/names.cpp), so a name never
// changes meaning; new counters go anywhere in the list.
enum class Counter {
  submitted,          // jobs the wrappers asked to run
  admitted,           // attempts started
  jobs,               // jobs finished (all outcomes)
  failed,             // jobs whose final status was non-zero
  cancelled,          // jobs whose wrapper left before they were granted
  waited_for_memory,  // jobs that could not start at once for lack of memory
  ran_alone,          // jobs bigger than the budget, run with nothing else
  frozen,             // freeze actions
  thawed,             // thaw actions
  freeze_failed,      // freezes that could not be carried out
  requeued,           // jobs killed by memgate under pressure and queued again
  oom_killed,         // attempts killed by the kernel OOM killer
  retried,            // reruns of any kind
  overshoot,          // jobs that used more than 110% of their prediction
  wait_memory_ms,     // summed time jobs spent waiting for memory
  memory_bound_ms,    // build time during which some job waited for memory and a core was free
  cpu_bound_ms,       // build time during which jobs waited and every core was busy
  slots_bound_ms,     // build time during which jobs waited for a slot (--jobs) with a core free
  frozen_ms,          // summed time jobs spent frozen
  wrapper_connections,  // connections the socket accepted
  refused_uid,        // connections refused: another user
  dropped_malformed,  // connections dropped for a protocol error
  dropped_idle,       // connections dropped for sending nothing (or half a frame) for too long
  refused_pid,        // `started` pids ignored: not below the wrapper that reported them
  unjoined,           // attempts that could not join their cgroup (measured from /proc)
  oom_killed_ungated, // processes the OOM killer ended in the build's own cgroup (not a gated job)
  ungated,            // compiler processes found in the build outside every job
  ungated_peak_bytes, // the most memory they held at once
  other_cpu_ms,       // CPU time the machine spent outside the build while it ran (a loaded machine)
  remote,             // jobs the build's launcher handed to a distributed engine
  offloaded,          // jobs memgate sent to the engine instead of letting them wait for memory
  declined,           // jobs refused after waiting too long (--decline-after, on a build server)
  fell_back,          // remote or offloaded jobs the engine compiled here after all (recorded local)
  requeued_cpu_ms,    // CPU time of attempts ended by memory (memgate's kill or the kernel's OOM killer): work done again
  released_mib_s,     // reservation given back by running jobs past their peaks (predicted peak less what they held), MiB x s
  timed_starts,       // jobs started before their peak fitted: their climb timed to meet the running jobs' falls
  room_starts,        // guesses that did not fit, started in the room beside running jobs past their peaks
};

// Counters present in a record: a missing one was not recorded (an older
// build), a zero one was recorded as none.
using Counters = std::map<Counter, std::int64_t>;

std::string_view name(PredictionSource s);
std::string_view name(Outcome o);
std::string_view name(EventKind k);
std::string_view name(Counter c);
std::string_view name(Placement p);
std::optional<Placement> parse_placement(std::string_view s);
std::optional<PredictionSource> parse_prediction_source(std::string_view s);
std::optional<Outcome> parse_outcome(std::string_view s);
std::optional<EventKind> parse_event_kind(std::string_view s);
std::optional<Counter> parse_counter(std::string_view s);
// Every counter, in declaration order.
const std::vector<Counter>& all_counters();
// Every event kind, in declaration order.
const std::vector<EventKind>& all_event_kinds();
// The counter's value, 0 when it was not recorded.
std::int64_t get(const Counters& c, Counter which);
// Keyed by name, for JSON; names memgate does not know are dropped when read.
std::map<std::string, std::int64_t> by_name(const Counters& c);
Counters from_names(const std::map<std::string, std::int64_t>& named);

// What the wrapper tells the governor about one compiler invocation, plus
// what the governor derives from it before predicting.
struct JobKey {
  std::string tool;      // "nvcc", "g++", "cc", "clang++", "ld", ... (basename of the real program)
  std::string identity;  // stable across builds of the same tree (see predict/identity.hpp)
  std::string klass;     // coarser grouping for online learning: tool + arch flags
  std::string stem;      // main source file name without directories, for "similar" matching
  int cpu_weight = 1;    // CPU slots the job occupies (nvcc --threads across archs), 1..kMaxCpuWeight
  // Not part of the key: the translation unit's size after preprocessing,
  // in bytes, where it was measured; 0 = unknown. Cold predictions scale
  // by it (Predictor, rung 5).
  Bytes tu_bytes = 0;
};

// The most CPU slots one job may claim. Peaks are predicted per slot and
// multiplied by the weight, so an unbounded weight from the wire (INT_MAX)
// overflowed the prediction into a negative peak.
constexpr int kMaxCpuWeight = 1024;

// A job's future-max curve: at[i] is the most memory the job still uses
// from progress x_i = i / (at.size() - 1) to its end, as a fraction of its
// peak (so at[0] is 1 and the values never rise). Progress is the job's
// CPU time over its predicted CPU time (wall time where CPU time cannot
// be read). Empty: unknown (the job may use its peak until it ends).
// predict/envelope.hpp learns, combines and reads it.
struct Envelope {
  std::vector<double> at;
  // Where the recorded runs' memory, having reached 90% of their peak,
  // first fell below half of it (the earliest of the runs; < 0: not
  // known). A running job whose memory has done the same is there,
  // whatever its CPU time says (Governor::envelope_x).
  double fall_x = -1;
  // The climb: rise[i] is the most memory the job used from its start to
  // x_i, as a fraction of its peak (non-decreasing, 1 at the end), on the
  // points of `at`. Learned from the job's own runs only (the highest of
  // them at each point); empty: unknown (the job may reach its peak at
  // once). Admission times a job's climb against the running jobs' falls
  // with it (Governor::Shadow::climbs_in_time).
  std::vector<double> rise;
  bool empty() const { return at.empty(); }
  bool operator==(const Envelope&) const = default;
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
  PredictionSource source = PredictionSource::fallback;
  // What it still uses from each point of its progress on, as fractions
  // of `peak`; empty: the step peak_over_frac/after_peak make
  // (predict/envelope.hpp envelope_for). Admission reads only this.
  Envelope envelope;
  // A guess with no shape and no time (the default): the most its kind's
  // profiles used once their memory had first halved from their peaks, as
  // a share of those peaks (Envelope::fall_x); 0 = unknown. What such a
  // job holds once its own memory has halved (Governor::reservation).
  double fallen_share = 0;
};

// One identity's learned figures, as `history export` writes them and
// `history import` and `--prior` read them (history/profiles.hpp): what
// the predictor needs, and nothing that ties it to a machine or a user.
struct JobProfile {
  JobKey key;                   // identity, klass, tool, stem, cpu_weight
  Bytes peak = 0;               // measured peak, no margin
  double wall_s = 0;
  double cpu_s = 0;
  double peak_over_frac = 1.0;  // see Prediction
  Bytes after_peak = 0;
  int runs = 1;                 // complete runs it sums up
  PredictionSource origin = PredictionSource::history;  // history (own), imported or prior
  Envelope envelope;            // see Prediction; empty: the step of peak_over_frac and after_peak
};

// A point of a memory profile: seconds since the job (or build) started.
// A job's profile may carry its CPU clock too: the job's CPU seconds at
// that point (< 0: not read). Its envelope is learned on that clock, the
// one admission reads it by (predict/envelope.hpp).
struct MemSample {
  double t_s = 0;
  Bytes bytes = 0;
  double cpu_s = -1;
};

// One run of a job's program. A job that was requeued has several.
struct Attempt {
  double start_s = 0;        // since build start
  double end_s = 0;
  Outcome outcome = Outcome::ok;
  Bytes peak_bytes = 0;
  double cpu_s = 0;          // CPU time of the attempt's tree, as its wrapper saw it (0: not known)
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
  Placement where = Placement::local;
  std::string engine;        // the distributed engine of a remote or offloaded job ("distcc"), else ""
  double wall_s() const { return end_s - start_s; }
};

// A decision the governor took, for the summary, report and trace.
struct BuildEvent {
  double t_s = 0;            // since build start
  EventKind kind = EventKind::freeze;
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
  int cores = 0;             // the usable cores of the machine it ran on; 0 = not recorded
  // What the build was, from its jobs (classify_build): "build" (it
  // compiled), "configure" (only probes), "relink" (links, no compile),
  // "empty" (no gated job); "" for a build recorded before kinds were.
  std::string kind;
  Bytes peak_bytes = 0;      // peak memory of the whole build
  Counters counters;
  std::vector<MemSample> memory;   // build memory over time (t since build start)
  std::vector<BuildEvent> events;
  std::vector<JobRecord> jobs;
  double wall_s() const { return end_unix - start_unix; }
};

}  // namespace memgate

