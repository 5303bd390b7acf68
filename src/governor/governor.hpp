// The governor: which waiting job may start now, and what to do when real
// memory runs short anyway. Pure logic over numbers and a clock; the
// runner feeds it measurements and carries out its decisions. No I/O, no
// processes: tests drive it with fakes.
//
// Cold start. A job nothing is known about would wait for a per-tool
// default (nvcc: 4 GiB per pipeline) that may not fit beside anything. The
// live peaks of running jobs of its klass are evidence too (a running
// job's memory so far is a lower bound of its peak), so such a job may be
// admitted on them, a few at a time (cold_need); freezing and requeueing
// catch the misses. Likewise a running job's own curve overrides such a
// guess once it has peaked well under it and is falling (reservation):
// a first job guessed above the budget then runs alone only until its
// peak has shown.
//
// Memory model. The build has an effective limit E = min(budget,
// capacity - reserve - memory outside the build). Every running job holds
// a reservation: its predicted peak until it is past that peak for good,
// then what it still uses. A waiting job is admitted when its predicted
// peak fits in E minus the reservations minus the build's own overhead
// (make, ninja, ungated processes), and its CPU weight fits the free slots.
// If nothing runs, one job always starts (ninja's CanRunMore rule).
//
// Pressure. When measured use still crosses E (predictions are wrong),
// the governor escalates with hysteresis and cooldowns, like oomd:
//   1. stop admitting;
//   2. freeze the newest running job (never the last unfrozen one), thaw
//      the oldest frozen job once memory has stayed low for a while;
//   3. kill the newest job and requeue it with its prediction raised to
//      what it was seen to use.
// Code: a job and what is told of it in gov_job.hpp, admission in
// governor_admit.cpp, packing's timeline in governor_shadow.cpp, pressure
// in governor_pressure.cpp, a job's life, learning and the rest in
// governor.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/job.hpp"
#include "governor/gov_job.hpp"

namespace memgate {

// Which waiting job admission starts first. Both start the longest predicted job that fits, and let
// any job that fits start after it while the longest waiting one cannot.
//   longest_first: any job that fits, in longest-first order (backfill
//     without looking ahead); a job that has waited starvation_s keeps
//     its memory from the jobs behind it.
//   packing: the first job that cannot start (the head) gets a
//     reservation: the earliest moment the running jobs' predicted
//     releases (what they give back past their peak, and at their end)
//     free its memory and slots. A later job that fits now starts if it
//     does not delay that moment (it ends before it, or what it will hold
//     then fits beside the head), or if, by the two jobs' predictions,
//     starting it now ends both no later than making it wait behind the
//     head (it could only start once the head is past its peak or done);
//     while at most kLookAhead jobs wait (governor_shadow.hpp), by the
//     end of all of them (but for a timed start). Jobs are still tried
//     longest first, so the memory a held job leaves idle until the head
//     can start goes to the shorter jobs that end before it (a heavy short
//     job fits there). A job of unknown duration, or a head whose moment
//     cannot be told (it needs what a job of unknown duration holds), is
//     not held (longest-first then). This is EASY backfilling, with
//     memory as well as slots and a look-ahead. The default: on the
//     measured flash-attn kernels in plan's simulator (bench_envelope_sim,
//     bench/packing) it is 4-6% faster on 2 cores and 8 GiB, and as fast
//     or faster at 16 and 128 cores but for 0.25% on one of six cases.
enum class AdmissionPolicy { longest_first, packing };
std::string_view name(AdmissionPolicy p);
std::optional<AdmissionPolicy> parse_admission_policy(std::string_view s);

class Shadow;  // packing's timeline: governor_shadow.hpp

struct GovernorConfig {
  Bytes budget = 0;       // what the build may use (capacity - reserve, or --memory)
  Bytes hard_limit = 0;   // capacity - reserve: the confinement limit (>= budget)
  int slots = 1;          // CPU slots (--jobs)
  int cores = 0;          // the machine's usable cores, for what held the build back (0: slots)
  int max_attempts = 4;   // first run + 3 reruns, then the real failure is reported
  // A job at the head of the queue that has waited this long for memory
  // makes later jobs leave room for it, so big jobs are not starved by a
  // stream of small ones.
  double starvation_s = 30;
  AdmissionPolicy admission = AdmissionPolicy::packing;
  // Live evidence. Cold admission (cold_need): the peak of a running job
  // past its peak (its memory halved from it), per unit of CPU weight,
  // times margin_falling predicts a waiting job of its klass that has
  // nothing better than a default or a klass-wide guess. A job whose own
  // curve contradicts its guess (peaked under half of it, and its memory
  // halved since) holds its peak times margin_rising: it
  // may rise again. Only jobs that have run min_s count as evidence.
  struct Live {
    double margin_rising = 1.5;
    double margin_falling = 1.15;
    double min_s = 1.0;
  } live;
  // Pressure: the thresholds of escalation, as fractions of the effective
  // limit E, and the cooldowns between actions.
  struct Pressure {
    double freeze_frac = 0.92;   // freeze above this (leaves room to act before killing)
    double kill_frac = 0.985;    // kill above this
    double thaw_frac = 0.88;     // thaw when use plus the job's growth stays below this...
    double thaw_hold_s = 1.0;    // ...for this long
    double freeze_cooldown_s = 0.3;
    double kill_cooldown_s = 1.0;
    double thaw_cooldown_s = 0.5;
    // Memory stall (PSI "full" avg10, percent) at which the build is
    // treated as thrashing: freeze, admit nothing.
    double psi_full_freeze = 10.0;
    double psi_full_clear = 2.0;
    // PSI averages move slowly; while they stay high, freeze one job at a
    // time with a longer pause so the build is not frozen down to one job
    // by a single episode.
    double psi_freeze_cooldown_s = 3.0;
    // Machine-wide stalls count once build + outside use this much of
    // capacity - reserve.
    double psi_machine_full_frac = 0.88;
  } pressure;
  // Offload (--offload): a compile the engine takes that waits for local
  // memory is sent to it instead. Its local side (the engine's client and
  // the preprocessor) still needs a reservation here, but no CPU slot: it
  // runs on the engine's machines.
  struct Offload {
    std::string engine;  // "": never
    int slots = 0;       // at most this many at once (0: never)
    std::function<bool(const JobKey&)> takes;  // which jobs the engine can take (engine/engine.hpp)
  } offload;
  // Remote capacity: how many compiles each engine can run on other
  // machines at once (distcc: the /LIMITs of DISTCC_HOSTS without
  // localhost). A job the build's own launcher hands to an engine with a
  // free remote slot takes that slot and no local CPU slot: here it is a
  // launcher and a preprocessor. With the engine's slots all taken, or for
  // an engine not listed here (icecc: its scheduler decides, memgate does
  // not know its capacity), it weighs like a local compile, since distcc
  // then waits for a host or compiles on localhost. Offloaded jobs take
  // the same slots.
  std::map<std::string, int> remote_slots;
  // A build server's rule (--decline-after): a job that has waited this
  // long is declined rather than kept waiting past its client's timeout;
  // the client then compiles it elsewhere. 0: never.
  double decline_after_s = 0;
  // The jobserver (governor/jobserver.hpp): what a token is taken to need
  // while no job of this build says better.
  Bytes token_need = 512 * MiB;
};

// What the runner measured this tick, besides per-job samples.
struct MemoryView {
  Bytes build_used = 0;  // all memory of the build now (jobs, build tool, ungated processes)
  Bytes outside = 0;     // memory used outside the build that counts against the capacity
  std::optional<double> psi_full_avg10;
  // Where the stalls were measured. The build cgroup's own (v2) are the
  // build's doing; machine-wide ones (/proc/pressure, v1) may be other
  // tenants thrashing inside their own limits, so they count only when
  // the machine itself is nearly full: then the build must yield to
  // protect it, whoever caused it.
  bool psi_machine_wide = false;
};

struct GovEvent {
  double t = 0;
  EventKind kind = EventKind::freeze;
  JobId job = -1;
  std::string reason;
};

struct Decisions {
  std::vector<JobId> admit;
  std::vector<JobId> freeze;
  std::vector<JobId> thaw;
  std::vector<JobId> kill;
  std::vector<JobId> decline;  // done without running (decline_after_s)
  bool empty() const {
    return admit.empty() && freeze.empty() && thaw.empty() && kill.empty() && decline.empty();
  }
};

struct GovernorCounts {
  int waiting = 0, waiting_memory = 0, waiting_cpu = 0, running = 0, frozen = 0, done = 0;
  // How long the running jobs have run so far, each at most its predicted
  // duration where one is known (counts(now) only): the ETA's progress
  // within jobs that have not ended.
  double running_job_s = 0;
};

class Governor {
 public:
  using PredictFn = std::function<Prediction(const JobKey&)>;
  using LearnFn = std::function<void(const JobRecord&)>;
  using PeakFn = std::function<void(const JobKey&, Bytes)>;
  using FactFn = std::function<void(const JobFact&)>;

  // `predict` answers for a job when it is submitted and again while it
  // waits; `learn` (optional) is told about every attempt that ends.
  Governor(GovernorConfig config, PredictFn predict, LearnFn learn = nullptr);
  // It keeps pointers into its own job maps: moved, never copied.
  Governor(const Governor&) = delete;
  Governor& operator=(const Governor&) = delete;
  Governor(Governor&&) = default;
  Governor& operator=(Governor&&) = default;
  // Told once per attempt when a running job has fallen below half its
  // peak after live.min_s: its peak is known before it exits (a prior is
  // calibrated on it, Predictor::observe_peak). Predictions are asked
  // again after it.
  void on_past_peak(PeakFn fn) { past_peak_ = std::move(fn); }
  // Told every JobFact as it happens.
  void on_fact(FactFn fn) { fact_ = std::move(fn); }

  // A wrapper asks to run a job. It waits until step() admits it. A job
  // the build's own launcher sends to a distributed engine names it
  // (`engine`, "distcc"): it is learned and predicted as the engine's.
  // `order`: where the build tool put the job in its own order (the
  // wrapper's pid: make and ninja fork their jobs in their order); it
  // breaks ties in admission order, which with nothing known is every tie.
  // 0: the order of submission.
  JobId submit(const JobKey& key, double now, const std::string& engine = "", std::int64_t order = 0);

  // The periodic decision: admissions and pressure actions. Call it every
  // tick and after anything changed (a submit, an exit).
  Decisions step(const MemoryView& view, double now);

  // The job's tree uses `current` now, and at most `peak` this attempt;
  // it has used `cpu_s` of CPU time this attempt (< 0: cannot be read).
  void sample(JobId id, Bytes current, Bytes peak, double now, double cpu_s = -1);
  // Whether a running job's CPU time is worth reading while it runs: its
  // reservation past its peak follows its CPU progress (a predicted CPU
  // time, and an envelope that gives back at least kReleaseWorthTracking,
  // 64 MiB). Else progress is its wall time, which only the packing
  // estimate of its end reads.
  bool wants_cpu(JobId id) const;

  // An attempt ended. Returns true if the job goes back to the queue to be
  // run again (its wrapper then waits for a new grant). A waiting job that
  // "exits" was cancelled: its wrapper went away before it was granted.
  // `cpu_s`: the attempt's CPU time as its wrapper saw it; an attempt
  // ended by memory adds it to Counter::requeued_cpu_ms (the cost of
  // optimism, with frozen_ms).
  bool exited(JobId id, ExitKind how, int exit_status, double now, double cpu_s = 0);

  // The engine compiled this remote or offloaded job here after all
  // (distcc's fallback when its server refuses or fails, its local retry,
  // localhost in its hosts). Call before exited() of a finished attempt:
  // the job is then recorded, and learned, as the local compile it was
  // (placement local, its own key, the engine kept to say who gave it
  // back), counted `fell_back`, with a `fallback` event.
  void ran_here(JobId id, double now);

  // The runner could not carry out a freeze (no freezer): undo it.
  void freeze_failed(JobId id);

  // An attempt ended (after exited()): what it measured teaches the
  // predictor, and the waiting jobs are predicted again with that. One
  // call, so the queue can never miss what the predictor learned: at once
  // while few jobs wait; with many, once the jobs learned number 1/8 of
  // those waiting, and at the first step 0.5 s after a learning at the
  // latest (after every exit, a build's cost grew with the square of its
  // jobs; at 1/32, it was a fifth of memgate's CPU at 2000 jobs).
  void learn(const JobRecord& attempt);

  // Any job of this build, running or done (throws for an unknown id).
  const GovJob& job(JobId id) const;
  std::vector<JobId> active_jobs() const;  // running, frozen, killing: what a tick measures
  const Counters& counters() const { return counters_; }
  const std::vector<GovEvent>& events() const { return events_; }
  GovernorCounts counts(double now = -1) const;
  const GovernorConfig& config() const { return cfg_; }
  // What admission believes is still free (for status and tests).
  Bytes headroom(const MemoryView& view) const;
  // The effective limit E for this view.
  Bytes effective_limit(const MemoryView& view) const;
  // The reservation a running job holds now: max(what it uses, E(x) ×
  // margin), E the future-max envelope of its prediction and x its
  // progress (see progress()).
  Bytes reservation(const GovJob& j, double now) const;
  // How far a running attempt is through its work, 0..1: its CPU time
  // over its predicted CPU time where both are known (a job slowed by
  // contention or frozen makes no progress), else its wall time over its
  // predicted wall time; -1 when neither is known. `by_cpu` tells which.
  static double progress(const GovJob& j, double now, bool* by_cpu = nullptr);
  // The same, not capped at 1: past 1, how far the attempt has overrun
  // its prediction.
  static double work_done(const GovJob& j, double now, bool* by_cpu = nullptr);
  // Progress `x` read on the envelope: x itself, but for a prediction
  // from other jobs (similar stems, the klass, a default) whose memory
  // has halved from its peak, at
  // least as far past the envelope's peak (envelope_peak_end) as the job
  // is past its own (run.peak_x); for its own record that knows its fall
  // (Envelope::fall_x), once the job's memory has fallen as the record's
  // did, at least as far past the record's fall as the job is past its own
  // (run.fall_x).
  static double envelope_x(const GovJob& j, double x);

  // The jobserver (governor/jobserver.hpp): the tokens its clients hold
  // now, and whether one has taken any. Admission then counts them as
  // busy slots, and lets a gated job under them start without a slot.
  void set_jobserver(int held, bool client_seen);
  // How many tokens to keep waiting in the pipe now: the free slots that
  // memory allows a job of this build's typical need; none under pressure
  // or while a job waits for memory.
  int tokens_to_offer(const MemoryView& view, double now) const;

 private:
  void account_time(double now);
  void admit_jobs(const MemoryView& view, double now, Decisions& out);
  // Packing's timeline (governor_shadow.hpp).
  std::optional<Shadow> shadow_for(const GovJob& head, Bytes need, Bytes left, int free_slots,
                                   const MemoryView& view, double now) const;
  // A timed start (Counter::timed_starts): a job that does not fit now,
  // whose own record says how its memory climbs, starts if the climb stays
  // within what the running jobs leave free as they fall, with
  // kTimedSlack on both: the climb as much faster, the falls as much
  // later. At most kTimedTries jobs are timed a step.
  static constexpr double kTimedSlack = 1.15;
  static constexpr int kTimedTries = 8;
  bool can_time(const GovJob& j, Bytes need, const MemoryView& view) const;
  Shadow timeline(const GovJob& j, Bytes need, Bytes left, int free_slots, double now) const;
  // The soonest the job can be through its progress: its CPU time on the
  // slots it claims, or its wall time if shorter, over kTimedSlack.
  static double climb_s(const GovJob& j);
  // A room start (Counter::room_starts): the head of the queue, a weak
  // guess that does not fit (or, behind a head that is no guess and does
  // not fit, the first weak guess), starts anyway when every running job is past
  // its peak (its memory halved from it) and what they leave holds at
  // least kRoomShare of the guess. A guess from other jobs is often high
  // (a cold flash-attn build guessed its forward kernels at the backward
  // kernels' 6 GiB; they peaked at 3-4 GiB): the room is a bet the job
  // stays in it, and the freezer, not the kernel, settles a lost bet. It
  // is frozen as soon as it comes within kRoomSlack of the room's edge
  // (the limit less the other jobs' reservations, so their second peaks
  // stay covered) until it is past its own peak; one at a time. Jobs
  // still rising are not waited beside: their reservations are guesses
  // too, and the freezer cannot take back what both grow into.
  bool room_start_open(double now) const;
  bool past_own_peak(const GovJob& r, double now) const;
  Bytes room_beside(const GovJob& j, const MemoryView& view, double now) const;
  // The room start that outgrew its room and must be frozen now, if any;
  // one past its peak, or whose guess now fits, is a job like any other.
  GovJob* outgrown_room(const MemoryView& view, double now);
  void offload_jobs(std::vector<GovJob*>& queue, Bytes& left, double now, Decisions& out);
  void decline_jobs(double now, Decisions& out);
  void relieve_pressure(const MemoryView& view, double now, Decisions& out);
  bool try_thaw(const MemoryView& view, double now, Decisions& out);
  // Freezes v now (`used`: the build's memory, the level the freeze rule compares with).
  void freeze(GovJob& v, double now, Bytes used, std::string reason, Decisions& out);
  void start(GovJob& j, double now, Decisions& out);
  void event(double now, EventKind kind, JobId job, std::string reason);
  void tell(const JobFact& f) { if (fact_) fact_(f); }
  void count(Counter c, std::int64_t by = 1) { counters_[c] += by; }
  std::vector<GovJob*> by_state(JobState s);
  // The newest job that may be frozen (running) or killed (running or frozen, reruns left).
  GovJob* newest_to_freeze();
  GovJob* newest_to_kill();
  int busy_slots() const;
  // Remote slots of `engine` free now (GovernorConfig::remote_slots; 0 for
  // an engine of unknown capacity), and held (remote jobs and offloaded).
  int remote_free(const std::string& engine) const;
  int remote_busy(const std::string& engine) const;
  int unfrozen_running() const;
  Bytes overhead(const MemoryView& view) const;
  // A default, or an estimate from few jobs or from profiles alone.
  static bool weak_guess(const Prediction& p);
  // What a klass's running jobs show, read once per admission step for
  // all its waiting jobs: the largest peak of a job past it, per unit of
  // CPU weight with its margin, speculative admissions in flight, and jobs
  // past their peak or finished.
  struct LiveSiblings {
    double best_w = 0;  // over the siblings past their peak that have run min_s
    int in_flight = 0, confirmed = 0;
  };
  LiveSiblings live_siblings(const std::string& klass, double now) const;
  // Cold admission: for a waiting job predicted by no more than a default
  // or a klass-wide guess, what its klass's jobs past their peak show (see
  // GovernorConfig), or 0 when none does or the klass has as many such
  // admissions in flight as jobs past their peak or finished (a slow
  // start: optimistic jobs at most double per peak). A sibling still
  // rising is no evidence: its peak so far says nothing of the peak to
  // come (an nvcc job rises for half its life; on a loaded machine a job
  // is slow to get its memory), and admitting on it cost flash-real's
  // cold run a requeue and made make take a token for a job memory had
  // no room for.
  Bytes cold_need(const GovJob& j, const LiveSiblings& s) const;

  GovernorConfig cfg_;
  PredictFn predict_;
  LearnFn learn_;
  PeakFn past_peak_;
  FactFn fact_;
  // Jobs not yet done: every decision iterates these, so the thousands a
  // long build has finished cost nothing per step.
  std::map<JobId, GovJob> jobs_;
  std::map<JobId, GovJob> done_;
  void retire(JobId id);
  // The running, frozen and killing jobs (pointers into jobs_, whose
  // nodes never move), in id order: what the sums of every step read, so
  // a step costs the jobs holding memory and slots, not every waiting one.
  // One sorted array, not a tree: a step walks it several times (headroom,
  // slots, packing, the counters) and a start or an end is one insert; at
  // --jobs 512 the walks of a std::map were a tenth of memgate's CPU
  // (bench/scale, docs/scale.md).
  class ActiveJobs {
   public:
    using Entry = std::pair<JobId, GovJob*>;
    void put(GovJob& j);
    void erase(JobId id);
    auto begin() const { return v_.cbegin(); }
    auto end() const { return v_.cend(); }
    std::size_t size() const { return v_.size(); }

   private:
    std::vector<Entry> v_;
  };
  ActiveJobs active_;
  void activate(GovJob& j);
  void deactivate(GovJob& j);
  // The waiting jobs in admission order (queue_before), kept between steps;
  // entries no longer waiting are dropped when admission next runs.
  std::vector<GovJob*> queue_;
  bool queue_sorted_ = true;
  static bool queue_before(const GovJob* a, const GovJob* b);
  void enqueue(GovJob& j);
  void leave_queue(const GovJob& j);
  // Waiting jobs blocked by memory, and by CPU (not memory), at the last admission.
  std::int64_t mem_waiters_ = 0, cpu_waiters_ = 0;
  std::size_t waiting_n_ = 0;     // jobs waiting now
  // Learning since the waiting jobs were last predicted again (learned()).
  static constexpr std::size_t kRepredictShare = 8;
  static constexpr double kRepredictAfter_s = 0.5;
  // ... or later where the queue is long: predicting it again costs a
  // prediction per waiting job (about 2.3 us each at bench/scale's 2000
  // jobs), so the timer predicts at most this many jobs a second, half a
  // percent of a core. At 5000 jobs it predicted 4500 waiting jobs every
  // 0.5 s, the one cost of memgate's that grew with the queue.
  static constexpr double kRepredictsPerSecond = 2000;
  double repredict_after() const;
  std::size_t unpredicted_ = 0;
  double unpredicted_since_ = 0;  // the governor's clock at the first of them
  void learned();
  // After the build learned something: waiting jobs take their new
  // prediction; a running job whose prediction was a guess keeps its peak
  // (its reservation) but takes the new timing (when it peaks, how long it
  // runs, what it keeps after its peak), so that past-peak release works
  // for jobs admitted before a prior was calibrated or on live siblings.
  void repredict();
  JobId next_id_ = 1;
  std::map<std::string, int> finished_by_klass_;  // jobs of this build done with status 0
  Counters counters_;
  std::vector<GovEvent> events_;
  double last_t_ = -1;
  double released_bytes_s_ = 0;  // Counter::released_mib_s, unrounded
  Bytes releasing_ = 0;          // what running jobs held below their peaks at the last step
  double last_freeze_t_ = -1e9, last_kill_t_ = -1e9, last_thaw_t_ = -1e9;
  double low_since_ = -1;   // memory has been low enough to thaw since then
  Bytes freeze_level_ = 0;  // the least the build's memory has been since the last freeze
  bool thrashing_ = false;  // PSI latch
  bool any_memory_blocked_ = false, any_cpu_blocked_ = false;
  int js_held_ = 0;           // jobserver tokens held by clients
  bool js_client_ = false;    // a client has taken a token
  bool under_pressure(const MemoryView& view) const;
};

}  // namespace memgate
