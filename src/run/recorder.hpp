// What a build leaves behind (ninja's BuildLog, for memgate): each job's
// record as its attempts end, the build's memory over time, and at the end
// the BuildRecord that history, the summary and the report files share.
// Everything a record takes from the governor (the job's key and where it
// ran, its times, waits, attempts and peaks) comes from what the governor
// tells as it happens (JobFact): the recorder reads no GovJob, and the
// governor keeps no field for it.
// No processes and no I/O apart from publish(): tests feed it numbers.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/job.hpp"
#include "governor/governor.hpp"

namespace memgate {

class History;

// Shell-style quoting of a command line, for display and for matching the
// same command across builds in history.
std::string quote_command(const std::vector<std::string>& argv);

// One attempt as the runner saw it, beside what the governor knows.
struct AttemptReport {
  std::vector<std::string> argv;   // for the digest
  std::string cwd;
  double attempt_start = 0;        // seconds since the build started
  std::vector<MemSample> profile;  // this attempt, t since attempt_start
  double cpu_s = 0;
  int exit_status = 0;             // shell style: code, or 128 + signal
};

class Recorder {
 public:
  Recorder(std::string cwd, std::string command, double start_unix);

  // The whole build's memory at t seconds since it started.
  void sample_memory(double t, Bytes used);
  Bytes peak_used() const { return peak_used_; }
  const std::string& cwd() const { return cwd_; }
  const std::string& command() const { return command_; }
  double start_unix() const { return start_unix_; }

  // What the governor tells of each job (Governor::on_fact).
  void observe(const JobFact& fact);

  // The record of job `id`'s attempt that ended at `now`, from what the
  // governor told of it and what the runner saw. Killed attempts teach
  // the predictor too (what they reached is a floor), so every attempt
  // gets one; only a job's last goes into the build (finish()).
  JobRecord make_record(JobId id, const AttemptReport& attempt, double now) const;
  void finish(JobId id, JobRecord record);
  std::size_t finished_jobs() const { return jobs_.size(); }
  double finished_job_s() const { return finished_job_s_; }

  // Everything the build leaves: the governor's counters and events
  // (job ids become indexes into jobs),
  // the server's counters, the memory series and the finished jobs.
  struct Totals {
    double end_unix = 0;
    int exit_status = 0;
    Bytes capacity = 0, budget = 0;
    int slots = 0;
    int cores = 0;  // the machine's usable cores
    Bytes cgroup_peak = 0;  // the build cgroup's own peak, when it has one
    Counters counters;
    std::vector<GovEvent> events;
  };
  BuildRecord build_record(const Totals& totals) const;

 private:
  std::string cwd_, command_;
  double start_unix_ = 0;
  Bytes peak_used_ = 0;
  std::vector<MemSample> memory_;
  std::vector<JobRecord> jobs_;
  double finished_job_s_ = 0;  // the sum of their durations
  std::map<JobId, int> index_of_;
  // One job's facts, until its record is finished.
  struct Ledger {
    JobKey key;  // as last named (JobFact::named)
    Placement placement = Placement::local;
    std::string engine;
    int started = 0;  // attempts
    double submit_t = 0;
    double first_start_t = -1;
    Prediction first_pred;  // what its first admission reserved for
    double wait_s = 0;
    double frozen_s = 0;
    double frozen_since = -1;
    std::vector<Attempt> attempts;
  };
  std::map<JobId, Ledger> ledgers_;
};

// The end of a build: its record saved to history (its id filled in; a
// build that gated no job only with `record_empty`, so `true`, configure
// steps and up-to-date rebuilds do not fill history with noise), the
// summary on stderr (under --quiet only the explanation of a build memory
// failed), and the report and summary JSON files asked for. Failures are
// warnings; the build's status stands. A record the database would not
// take (locked, or not open at all) goes to a side file beside
// `history_path` (history/pending.hpp).
struct PublishOptions {
  std::string history_path;           // "" = no history at all
  std::vector<std::string> degraded;  // what the run lacked
  std::vector<std::string> notes;     // extra summary lines (ungated compilers)
  bool quiet = false;
  bool verbose = false;  // the full summary even when memgate did not act
  std::string report_html, trace_json;
  std::string summary_json;   // the record as JSON (history/record_json.hpp)
  bool record_empty = false;  // keep a build with no gated job in history too
};
void publish(BuildRecord& build, History* history, const PublishOptions& options);

}  // namespace memgate
