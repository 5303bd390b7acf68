// `memgate run`, from start to finish. run() reads as the list of steps;
// the job-level work is in runner_jobs.cpp.
#include "run/runner_impl.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/core.h>

#include "platform/cpu.hpp"
#include "run/build_process.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"
#include "wrap/parts.hpp"
#include "wrap/shims.hpp"

namespace memgate {

namespace {

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

}  // namespace

int run_build(const RunOptions& options) {
  Runner runner(options);
  return runner.run();
}

Runner::Runner(RunOptions options)
    : opt_(std::move(options)),
      t0_(std::chrono::steady_clock::now()),
      recorder_(current_dir(), quote_command(opt_.command), unix_now()) {}

Runner::~Runner() = default;

double Runner::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

int Runner::run() {
  log::set_quiet(opt_.quiet);
  build_.guard();                                     // ends the build if memgate is killed (before the subreaper)
  if (!detect_machine()) return 125;                  // capacity, budget, CPU slots
  if (!known_.open_history(opt_, recorder_.cwd(), recorder_.command(), degraded_))
    return 125;                                       // predictions and the known total
  if (!known_.load_prior(opt_)) return 125;           // --prior / MEMGATE_PRIOR, for this run only
  if (!start_server()) return 125;                    // socket in a private dir, the governor
  cgroups_ = Confinement::setup(machine_.cap, machine_.budget, !opt_.no_confine);  // confinement, job accounting
  ports_ = live_ports(*server_, *cgroups_);           // what the job steps reach the world through
  build_.watch_signals();                             // Ctrl-C, SIGTERM, children
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);                 // orphans of the build stay ours
  if (!start_build()) {                               // the user's command
    finish();
    return build_.exit_status();
  }
  log::debug("memgate runs at nice {}", raise_own_priority());  // its ticks go before the build's processes
  main_loop();                                        // until the build and its jobs end
  end_leftovers();                                    // nothing of the build outlives it
  finish();                                           // history, summary, reports; cgroups, socket
  return build_.exit_status();
}

bool Runner::detect_machine() {
  auto machine = RunMachine::detect(opt_);
  if (!machine) {
    log::error("{}", machine.error());
    return false;
  }
  machine_ = *machine;
  return true;
}

bool Runner::start_server() {
  auto dir = make_socket_dir();
  if (!dir) {
    log::error("{}", dir.error());
    return false;
  }
  socket_dir_.emplace(std::move(*dir));
  auto server = JobServer::listen(join_path(socket_dir_->path(), "sock"));
  if (!server) {
    log::error("{}", server.error());
    return false;
  }
  server_.emplace(std::move(*server));
  server_->on_message = [this](ConnId c, const Message& m) { on_message(c, m); };
  server_->on_closed = [this](ConnId c) { on_closed(c); };
  if (server_->max_connections() < static_cast<std::size_t>(machine_.slots))
    log::warn("the open-file limit lets memgate hold {} wrapper connections, fewer than --jobs {}: at most {} jobs "
              "run at once; raise the hard limit (ulimit -Hn, systemd LimitNOFILE=)",
              server_->max_connections(), machine_.slots, server_->max_connections());

  Predictor& predictor = known_.predictor();
  gov_ = std::make_unique<Governor>(
      governor_config(machine_, opt_), [&predictor](const JobKey& k) { return predictor.predict(k); },
      [&predictor](const JobRecord& r) { predictor.observe(r); });
  gov_->on_past_peak([&predictor](const JobKey& k, Bytes peak) { predictor.observe_peak(k, peak); });
  gov_->on_fact([this](const JobFact& f) { recorder_.observe(f); });
  return true;
}

bool Runner::start_build() {
  Parts parts = find_parts();  // this copy's wrapper, preload library and shim dir
  InjectionInput in;
  if (auto trusted = trusted_parts(parts, ::geteuid())) {
    parts = *trusted;
  } else {
    in.untrusted_parts = trusted.error();
    ungated_.gated_nothing();
    log::warn("compilers run ungated: memgate's parts are not safe to hand to the build ({}); install memgate "
              "where only root (or you) can write",
              trusted.error());
  }
  in.env = current_environment();
  in.memgate_exe = parts.wrapper;
  in.socket_path = server_->path();
  in.slots = machine_.slots;
  in.command = opt_.command;
  in.preload_lib = parts.preload;
  Interception how = choose_interception(in);
  if (how.mechanism == Mechanism::shims || how.mechanism == Mechanism::preload_and_shims) {  // only when used
    auto shims = ensure_shim_dir(parts.shim_dir, parts.wrapper);
    if (shims) {
      in.shim_dir = *shims;
    } else {
      log::warn("cannot use the compiler shims: {}", shims.error());
      degraded_.push_back("compiler shims refused: " + shims.error());
    }
  }
  if (auto note = interception_note(how, !in.shim_dir.empty()); !note.empty()) degraded_.push_back(note);

  SpawnSpec spec;
  spec.argv = opt_.command;
  spec.env_changes = injection_env(in);
  // A build with no complete run of this command here has nothing to
  // predict its compiles from: its wrappers measure each one's size
  // (wrap/tu_size.hpp). A build seen before does not pay for it, nor one
  // whose user said MEMGATE_TU_SIZE=0.
  const char* tu = std::getenv("MEMGATE_TU_SIZE");
  const bool refused = tu && std::string_view(tu) == "0";
  std::string tu_size = refused ? std::string("0") : known_.progress().jobs > 0 ? std::string() : std::string("1");
  spec.env_changes["MEMGATE_TU_SIZE"] = std::move(tu_size);
  spec.cgroup_dirs = cgroups_->build_dirs();
  if (std::string why = tokens_.serve(opt_, *socket_dir_, machine_.slots, spec.env_changes, spec.inherit_fds); !why.empty())
    degraded_.push_back("no jobserver: " + why);
  tokens_.offer(*gov_, view_, now());
  SpawnFailure failure;
  if (!build_.start(spec, &failure)) {
    log::error("{}", failure.message);
    return false;
  }
  console_.start(opt_.quiet);
  return true;
}

// The loop: poll the socket, the signals and the clock; every tick
// measure, decide and act. It ends when the build process has exited and
// no wrapper is still connected.
void Runner::main_loop() {
  while (!(build_.done() && live_.empty())) {
    std::vector<pollfd> fds;
    fds.push_back(pollfd{build_.signal_fd(), POLLIN, 0});
    server_->append_pollfds(fds);
    stats_.loop_turn();
    int timeout_ms = pace_.poll_timeout_ms(now());
    if (!pace_.scheduled() && prepare_jobs()) timeout_ms = 0;  // more idle work: back after a look at the sockets
    int n = ::poll(fds.data(), fds.size(), std::min(timeout_ms, ungated_.ms_until_due(now())));
    if (n < 0 && errno != EINTR) {
      log::error("poll failed: {}", std::strerror(errno));
      begin_abort(SIGTERM);
    }
    if (n > 0) {
      if (fds[0].revents & POLLIN) handle_signals();
      server_->handle_ready(fds);
    }
    if (pace_.take_scheduled()) schedule_now();
    if (pace_.tick_due(now())) tick();
    else scan_ungated(now());  // when due, and never in a tick's turn
    if (build_.done() && !live_.empty() && !build_.aborting()) {
      // The build tool is gone but some wrappers live on (orphans of a
      // killed make): nobody waits for their output any more.
      log::warn("{} job(s) outlived the build; ending them", live_.size());
      begin_abort(SIGTERM);
      build_.kill_everything(*cgroups_);
    }
  }
}

void Runner::handle_signals() {
  for (int sig : build_.read_signals()) begin_abort(sig);
}

void Runner::begin_abort(int sig) {
  if (!build_.begin_abort(sig, now())) {
    build_.kill_everything(*cgroups_);  // a second Ctrl-C: no more grace
    return;
  }
  console_.aborting(sig == SIGINT);
  log::info("{}: stopping the build", strsignal(sig));
  build_.forward(sig, *cgroups_);
}

void Runner::end_leftovers() {
  build_.reap();
  if (build_.aborting()) return;
  if (std::size_t n = cgroups_->release_leftovers())
    log::info("{} process(es) the build started keep running outside memgate's cgroup", n);
}

// The end, whether the build ran or could not start: its record, the
// summary and reports, then the cgroups and the socket go.
void Runner::finish() {
  console_.finish();
  if (build_.started()) {
    const Recorder::Totals t = totals();
    BuildRecord b = recorder_.build_record(t);
    publish(b, known_.history(), publish_options(t.counters));
  }
  stats_.write(now(), gov_ ? get(gov_->counters(), Counter::admitted) : 0);  // MEMGATE_RUN_STATS
  cgroups_->remove(build_.aborting());
  build_.disarm_guard();  // the cgroups are gone: nothing is left for it to do
  ports_.reset();
  server_.reset();
  tokens_.close();
  if (socket_dir_)
    if (auto st = socket_dir_->remove(); !st) log::warn("{}", st.error());
}

// The build's totals: the governor's counters and events, and beside them
// the runner's own decisions, the server's, what escaped the gate, and
// the kernel's OOM kills of what memgate does not gate.
Recorder::Totals Runner::totals() const {
  Recorder::Totals t;
  t.end_unix = recorder_.start_unix() + now();
  t.exit_status = build_.exit_status();
  t.capacity = machine_.budget.capacity;
  t.budget = machine_.budget.budget;
  t.slots = machine_.slots;
  t.cores = platform::detect_cores();
  t.cgroup_peak = cgroups_->peak().value_or(0);
  t.counters = gov_->counters();
  for (const auto& [c, n] : extra_counters_) t.counters[c] += n;
  const ServerCounters& sc = server_->counters();
  t.counters[Counter::wrapper_connections] = static_cast<std::int64_t>(sc.accepted);
  t.counters[Counter::refused_uid] = static_cast<std::int64_t>(sc.refused_uid);
  t.counters[Counter::dropped_malformed] = static_cast<std::int64_t>(sc.dropped_malformed);
  t.counters[Counter::dropped_idle] = static_cast<std::int64_t>(sc.dropped_idle);
  t.events = gov_->events();
  if (std::int64_t n = cgroups_->ungated_oom_kills(); n > 0) {
    t.counters[Counter::oom_killed_ungated] = n;
    t.events.push_back(GovEvent{now(), EventKind::oom_kill, -1,
                                fmt::format("{} process(es) in the build's own cgroup (the build tool or a program "
                                            "memgate does not gate)",
                                            n)});
  }
  t.counters[Counter::ungated] = static_cast<std::int64_t>(ungated_.found().count());
  if (auto others = build_.other_cpu_ms()) t.counters[Counter::other_cpu_ms] = *others;
  t.counters[Counter::ungated_peak_bytes] = static_cast<std::int64_t>(ungated_.found().peak_together());
  return t;
}

// Where the record goes, and what the summary says the run lacked.
PublishOptions Runner::publish_options(const Counters& counters) const {
  PublishOptions p;
  p.degraded = cgroups_->degraded();
  p.degraded.insert(p.degraded.end(), degraded_.begin(), degraded_.end());
  if (auto n = get(counters, Counter::unjoined))
    p.degraded.push_back(fmt::format("{} job attempt(s) outside their cgroup: measured through /proc", n));
  if (auto n = get(counters, Counter::refused_pid))
    p.degraded.push_back(fmt::format("{} reported pid(s) refused: not below their wrapper, never frozen or killed", n));
  p.notes = ungated_.found().summary_lines();
  p.quiet = opt_.quiet;
  p.verbose = opt_.verbose;
  p.history_path = known_.history_path();
  p.report_html = opt_.report_html;
  p.trace_json = opt_.trace_json;
  p.summary_json = opt_.summary_json;
  p.record_empty = opt_.record_empty;
  return p;
}

}  // namespace memgate
