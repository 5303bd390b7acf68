// The runner's insides, shared by runner.cpp (setup, the loop, teardown)
// and runner_jobs.cpp (one job's messages, the tick, the decisions).
#pragma once

#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/capacity.hpp"
#include "core/job.hpp"
#include "governor/governor.hpp"
#include "history/history.hpp"
#include "platform/cgroup.hpp"
#include "predict/predictor.hpp"
#include "report/status.hpp"
#include "run/job_exec.hpp"
#include "run/runner.hpp"
#include "wrap/protocol.hpp"
#include "wrap/server.hpp"

namespace memgate {

// One wrapper connection, which is one job.
struct LiveJob {
  ConnId conn = 0;
  JobId id = 0;
  RequestMsg req;
  std::unique_ptr<JobExec> exec;
  bool killed_by_us = false;  // this attempt
  bool done = false;          // the final verdict was sent
  double attempt_start = 0;
  std::vector<MemSample> profile;  // this attempt, t since attempt start
  Bytes current = 0;
};

class Runner {
 public:
  explicit Runner(RunOptions options);
  ~Runner();
  int run();

 private:
  // Setup and teardown (runner.cpp), in the order run() calls them.
  bool detect_machine();
  void open_history();
  bool start_server();
  void setup_cgroups();
  bool start_build();
  void main_loop();
  void end_leftovers();
  void teardown();
  void save_and_report();

  // Signals and processes (runner.cpp).
  void handle_signals();
  void reap_children();
  void begin_abort(int sig);
  void kill_everything();
  void forward_signal(int sig);

  // Jobs (runner_jobs.cpp).
  void on_message(ConnId conn, const Message& m);
  void on_closed(ConnId conn);
  void on_request(ConnId conn, const RequestMsg& m);
  void on_started(ConnId conn, const StartedMsg& m);
  void on_exit(ConnId conn, const ExitMsg& m);
  void schedule();
  void tick();
  void sample_jobs();
  MemoryView read_memory();
  void apply(const Decisions& d);
  void grant(LiveJob& job);
  void log_new_events();
  JobRecord make_record(const LiveJob& job, const ExitMsg& exit);
  StatusSnapshot snapshot() const;
  LiveJob* by_job(JobId id);

  double now() const;

  RunOptions opt_;
  std::chrono::steady_clock::time_point t0_;
  double start_unix_ = 0;
  std::string cwd_;
  std::string command_;

  // The machine.
  Capacity cap_;
  Budget budget_;
  int slots_ = 1;
  platform::CgroupLayout layout_;
  std::optional<platform::Cgroup> confine_;    // memgate-<pid>: limit, job cgroups below
  std::optional<platform::Cgroup> build_leaf_;  // confine_/build: the build tool itself
  std::optional<platform::Cgroup> capacity_cg_; // the cgroup whose limit is the capacity
  bool confined_ = false;
  // What this run lacks (no confinement, SIGSTOP instead of a freezer...),
  // said in the summary so a degraded run never looks like a normal one.
  std::vector<std::string> degraded_;

  // The parts.
  std::unique_ptr<History> history_;
  Predictor predictor_;
  std::unique_ptr<Governor> gov_;
  std::optional<JobServer> server_;
  std::string private_dir_, socket_path_;
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

  // Jobs.
  std::map<ConnId, LiveJob> live_;
  std::map<JobId, ConnId> conn_of_;
  std::vector<JobRecord> finished_;
  std::map<JobId, int> record_index_;
  size_t events_seen_ = 0;

  // Measurements.
  MemoryView view_;
  Bytes peak_used_ = 0;
  std::vector<MemSample> memory_series_;
  double next_tick_ = 0;
  int known_total_ = 0;
  double last_wall_ = 0;
};

}  // namespace memgate
