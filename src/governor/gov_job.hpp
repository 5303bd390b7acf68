// A job as the governor sees it (GovJob), and what the governor tells of
// it as it happens (JobFact), from which run/recorder makes its record.
#pragma once

#include <cstdint>
#include <string>
#include <utility>

#include "core/job.hpp"

namespace memgate {

using JobId = int;

enum class JobState { waiting, running, frozen, killing, done };

// How an attempt ended, as the runner saw it.
enum class ExitKind {
  finished,      // the program exited on its own (any status)
  killed_by_us,  // memgate killed it under pressure
  oom_killed,    // the kernel OOM killer (inside memgate's confinement)
  lost,          // the wrapper vanished
};

// A job as the governor sees it, its fields grouped by the stage that
// reads them: who it is and what it is predicted to need (every stage),
// its place in the queue (admission), the running attempt (the
// reservation and pressure), where it runs. The recorder reads none of
// them: what a record needs the governor tells as it happens (JobFact).
struct GovJob {
  JobId id = 0;
  JobKey key;
  JobState state = JobState::waiting;
  int attempts = 0;          // started attempts
  Prediction pred;           // current prediction (re-predicted while waiting)
  Bytes peak_floor = 0;      // after a kill: the prediction may not go below this

  // Admission: its place in the queue, and what the last step found.
  struct Queue {
    std::int64_t order = 0;    // the build tool's order (see submit), else the id
    int requeues = 0;          // memgate kills: such a job goes first
    double queued_t = 0;       // when it last entered the queue
    double blocked_since = -1; // when it became memory-blocked at the head of the queue
    bool blocked_by_memory = false;  // last step: fits CPU but not memory
    bool blocked_by_cpu = false;     // last step: does not fit CPU
    bool waited_for_memory = false;  // counted once (Counter::waited_for_memory)
    // Admitted on the live peaks of running jobs of its klass rather than
    // on a prediction (cold_need): until it is past its peak or done, it
    // holds back the next such admission of its klass.
    bool speculative = false;
  } queue;

  // The running attempt: what the reservation and pressure read.
  struct Run {
    double start_t = -1;       // -1 while waiting
    Bytes current = 0;         // now
    Bytes attempt_peak = 0;    // this attempt
    double cpu_s = -1;         // CPU time of this attempt so far; < 0: cannot be read
    double peak_x = -1;        // its progress when attempt_peak last rose (Governor::progress)
    double fall_x = -1;        // its progress when its memory, having reached 90% of the
                               // predicted peak, first fell below half its peak
    bool peak_told = false;    // on_past_peak was told of this attempt
    // Started on a guess that did not fit, in the room the running jobs
    // left beside their falls (Governor::room_start_open): frozen if it
    // outgrows that room, until it is past its own peak.
    bool in_room = false;
  } run;

  // Where it runs: here, or through a distributed engine (engine/engine.hpp).
  struct Where {
    Placement placement = Placement::local;
    std::string engine;      // of a remote or offloaded job
    // A remote job holding one of its engine's remote slots (see
    // GovernorConfig::remote_slots) this attempt: it weighs no local CPU.
    bool remote_slot = false;
    JobKey local_key;        // the key it came with (an offloaded job's key is the engine's)
  } where;

  int weight(int slots) const;
};

// What happened to a job, told as it happens (Governor::on_fact), for
// whoever keeps its record: everything a record takes from the governor
// comes this way. In order, per job: submitted; then for each attempt
// started, any frozen/thawed, ended; or left (cancelled or declined while
// waiting).
struct JobFact {
  enum class Kind { submitted, started, frozen, thawed, ended, left };
  Kind kind = Kind::submitted;
  JobId job = -1;
  double t = 0;
  Prediction pred;       // started: the prediction admission reserved for
  double waited_s = 0;   // started, left: since it last entered the queue
  Attempt attempt;       // ended: the attempt, its outcome, peak and CPU time
  // submitted, ended, left: who the job is then (named()): the key it
  // runs under (an offloaded job's is its engine's, one its engine gave
  // back its own again) and where it ran.
  JobKey key;
  Placement placement = Placement::local;
  std::string engine;

  JobFact named(const GovJob& j) && {
    key = j.key;
    placement = j.where.placement;
    engine = j.where.engine;
    return std::move(*this);
  }

  static JobFact of(Kind kind, JobId job, double t, double waited_s = 0, Prediction pred = {}, Attempt attempt = {}) {
    JobFact f;
    f.kind = kind;
    f.job = job;
    f.t = t;
    f.waited_s = waited_s;
    f.pred = pred;
    f.attempt = attempt;
    return f;
  }
};

}  // namespace memgate
