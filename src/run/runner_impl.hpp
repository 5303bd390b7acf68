// The runner's insides, shared by runner.cpp (the steps, the event loop,
// signals and the build process) and runner_jobs.cpp (one job's messages
// and the tick). The cgroups live in Confinement, the records in Recorder;
// the Runner is the loop that connects them to the Governor. The job
// steps reach the wrappers and the OS only through ports_ (runner_ports.hpp),
// so tests drive them with fakes.
#pragma once

#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/capacity.hpp"
#include "governor/governor.hpp"
#include "history/history.hpp"
#include "predict/predictor.hpp"
#include "report/status.hpp"
#include "run/confinement.hpp"
#include "run/guard.hpp"
#include "run/job_exec.hpp"
#include "run/job_server.hpp"
#include "run/jobserver.hpp"
#include "run/recorder.hpp"
#include "run/runner_ports.hpp"
#include "run/run_stats.hpp"
#include "run/runner.hpp"
#include "run/ungated.hpp"
#include "wrap/protocol.hpp"

namespace memgate {

// The runner's side of one wrapper connection, which is one job.
struct ConnectedJob {
  ConnId conn = 0;
  JobId id = 0;
  RequestMsg req;
  std::unique_ptr<JobControl> exec;
  bool killed_by_us = false;  // this attempt
  // CPU the attempt's processes had used when memgate killed them: the
  // wrapper's rusage misses a compiler proper killed beside its driver
  // (gcc's cc1plus is never waited for), and a requeue's cost is this.
  double cpu_at_kill_s = 0;
  bool done = false;          // the final verdict was sent
  double attempt_start = 0;
  std::vector<MemSample> profile;  // this attempt, t since attempt start
  Bytes current = 0;
  double next_sample_t = -1;  // when its memory may be read next with room to spare (sample_jobs)
};

class Runner {
 public:
  explicit Runner(RunOptions options);
  ~Runner();
  int run();

 private:
  friend class RunnerStepsTest;  // tests/unit/runner_steps_test.cpp: the job steps with fake ports
  friend class RunnerTickBench;  // bench/micro_scale.cpp: the tick's cost with fake ports

  // The steps, in the order run() takes them (runner.cpp).
  bool detect_machine();
  bool open_history();
  void load_shipped_priors();
  bool load_prior();
  bool start_server();
  bool start_build();
  void main_loop();
  void end_leftovers();
  void finish();

  // Signals and processes (runner.cpp).
  void handle_signals();
  void reap_children();
  void begin_abort(int sig);
  void kill_everything();
  void forward_signal(int sig);

  // Jobs and the tick (runner_jobs.cpp).
  void on_message(ConnId conn, const Message& m);
  void on_closed(ConnId conn);
  void on_request(ConnId conn, const RequestMsg& m);
  void on_started(ConnId conn, const StartedMsg& m);
  void on_exit(ConnId conn, const ExitMsg& m);
  void schedule();
  void schedule_now();
  void tick();
  bool prepare_jobs();
  void sample_jobs();
  void scan_ungated(double t);
  void apply(const Decisions& d);
  void grant(ConnectedJob& job);
  void decline(ConnectedJob& job);
  void log_new_events();
  // The jobserver (runner_tokens.cpp).
  void serve_tokens(std::map<std::string, std::string>& env, std::vector<int>& fds);
  void tell_tokens(double t);
  void offer_tokens(double t);
  std::vector<TokenOpener> token_openers() const;
  StatusSnapshot snapshot() const;
  ConnectedJob* by_job(JobId id);

  double now() const;

  RunOptions opt_;
  std::chrono::steady_clock::time_point t0_;
  DeathGuard guard_;

  // The machine and the parts.
  Capacity cap_;
  Budget budget_;
  int slots_ = 1;
  std::optional<Confinement> cgroups_;
  Recorder recorder_;
  std::unique_ptr<History> history_;
  std::string history_path_;
  Predictor predictor_;
  std::unique_ptr<Governor> gov_;
  std::optional<PrivateDir> socket_dir_;  // before server_: it outlives the socket
  std::optional<JobServer> server_;
  std::unique_ptr<RunnerPorts> ports_;  // over server_ and cgroups_ (runner_ports.hpp)
  std::optional<TokenPool> tokens_;  // the jobserver, when served
  int tokens_logged_held_ = -1, tokens_logged_waiting_ = -1;
  int tokens_max_held_ = 0;
  int tokens_told_held_ = 0;  // what tell_tokens last told the governor clients hold
  LeakWatch token_leaks_;
  double next_leak_scan_ = 0;
  int tokens_reclaimed_ = 0;
  FILE* tokens_log_ = nullptr;
  std::unique_ptr<StatusLine> status_;
  int sigfd_ = -1;

  // The build process.
  pid_t build_pid_ = -1;
  bool build_done_ = false;
  int build_wait_status_ = 0;
  int abort_signal_ = 0;
  double abort_deadline_ = 0;
  bool killed_all_ = false;
  int exit_status_ = 0;

  // Jobs, and what the tick last measured.
  std::map<ConnId, ConnectedJob> live_;
  std::map<JobId, ConnId> conn_of_;
  size_t events_seen_ = 0;
  Counters extra_counters_;  // the runner's own decisions, beside the governor's
  std::vector<std::string> degraded_;  // what this run lacks beyond its cgroups (shims instead of preloading)
  UngatedTracker ungated_;  // compilers in the build but in no job
  bool gated_nothing_ = false;  // memgate's parts could not be handed on: no compiler is gated
  double next_ungated_scan_ = 0;  // also when the confinement is next checked
  // Wrappers waiting to connect, by pid: the scan they were last read in
  // (scan_ungated reads each again every kWrapperRecheck scans).
  std::unordered_map<pid_t, std::uint64_t> waiting_wrappers_;
  std::uint64_t ungated_scans_ = 0;
  MemoryView view_;
  JobId sample_cursor_ = -1;  // the job sample_jobs visited last: the next tick goes on after it
  double next_tick_ = 0;
  bool schedule_due_ = false;  // admission runs once per loop turn, after every message of the turn
  bool admitted_any_ = false;  // a first job was granted (see on_request's burst wait)
  ProgressReference progress_ref_;  // the last complete, successful build of this command here
  // The machine's busy CPU and our tree's CPU when the build started: what
  // others took beside the build (Counter::other_cpu_ms, for plan).
  std::optional<double> machine_busy_at_start_;
  double own_cpu_at_start_ = 0;
  // memgate's own cost (MEMGATE_RUN_STATS, for bench/scale).
  RunStats stats_;
  double last_release_ = 0;  // a job last gave back its slot and memory
  void write_stats();
};

}  // namespace memgate
