// The runner's insides, shared by runner.cpp (the steps, the event loop,
// the abort and the end) and runner_jobs.cpp (one job's messages and the
// tick). The Runner is the loop that connects the parts to the Governor;
// each part owns its state and the steps that touch only it: the machine
// (machine.hpp), what the run predicts from (knowledge.hpp), the build
// process (build_process.hpp), the connected jobs (live_jobs.hpp), the
// loop's pace (pace.hpp), the jobserver (runner_tokens.hpp), the ungated
// scan (ungated.hpp), the status line (console.hpp), memgate's own cost
// (run_stats.hpp), the cgroups (confinement.hpp) and the records
// (recorder.hpp). The job steps reach the wrappers and the OS only
// through ports_ (runner_ports.hpp), so tests drive them with fakes.
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "governor/governor.hpp"
#include "report/status.hpp"
#include "run/build_process.hpp"
#include "run/confinement.hpp"
#include "run/console.hpp"
#include "run/job_server.hpp"
#include "run/knowledge.hpp"
#include "run/live_jobs.hpp"
#include "run/machine.hpp"
#include "run/pace.hpp"
#include "run/recorder.hpp"
#include "run/runner_ports.hpp"
#include "run/runner_tokens.hpp"
#include "run/run_stats.hpp"
#include "run/runner.hpp"
#include "run/ungated.hpp"
#include "wrap/protocol.hpp"

namespace memgate {

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
  bool start_server();
  bool start_build();
  void main_loop();
  void end_leftovers();
  void finish();
  Recorder::Totals totals() const;
  PublishOptions publish_options(const Counters& counters) const;

  // Signals and the abort (runner.cpp).
  void handle_signals();
  void begin_abort(int sig);

  // Jobs and the tick (runner_jobs.cpp).
  void on_message(ConnId conn, const Message& m);
  void on_closed(ConnId conn);
  void on_request(ConnId conn, const RequestMsg& m);
  void on_started(ConnId conn, const StartedMsg& m);
  void on_exit(ConnId conn, const ExitMsg& m);
  void schedule_now();
  void step(double t);
  void tick();
  bool prepare_jobs();
  void scan_ungated(double t);
  void apply(const Decisions& d);
  void grant(ConnectedJob& job);
  void decline(ConnectedJob& job);
  StatusSnapshot snapshot() const;

  double now() const;

  RunOptions opt_;
  std::chrono::steady_clock::time_point t0_;

  // The machine and the parts.
  RunMachine machine_;  // capacity, budget, CPU slots (machine.hpp)
  std::optional<Confinement> cgroups_;
  Recorder recorder_;
  Knowledge known_;  // the predictor, history and priors (knowledge.hpp)
  std::unique_ptr<Governor> gov_;
  std::optional<PrivateDir> socket_dir_;  // before server_: it outlives the socket
  std::optional<JobServer> server_;
  std::unique_ptr<RunnerPorts> ports_;  // over server_ and cgroups_ (runner_ports.hpp)
  RunnerTokens tokens_;  // the jobserver, when served (runner_tokens.hpp)
  Console console_;  // the status line and the events as they happen (console.hpp)
  BuildProcess build_;  // its guard, signals and status, the abort (build_process.hpp)

  // Jobs, and what the tick last measured.
  LiveJobs live_;  // one per wrapper connection (live_jobs.hpp)
  Counters extra_counters_;  // the runner's own decisions, beside the governor's
  std::vector<std::string> degraded_;  // what this run lacks beyond its cgroups (shims instead of preloading)
  UngatedScan ungated_;  // compilers in the build but in no job (ungated.hpp)
  MemoryView view_;
  Pace pace_;  // when the loop ticks, and when it admits between ticks (pace.hpp)
  // memgate's own cost (MEMGATE_RUN_STATS, for bench/scale).
  RunStats stats_;
};

}  // namespace memgate
