// `memgate run`, from start to finish. run() reads as the list of steps;
// the job-level work is in runner_jobs.cpp.
#include "run/runner_impl.hpp"

#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <fmt/core.h>

#include "engine/engine.hpp"
#include "history/profiles.hpp"
#include "platform/cpu.hpp"
#include "history/pending.hpp"
#include "platform/proc.hpp"
#include "run/build_process.hpp"
#include "util/atomic_file.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"
#include "util/trusted_dir.hpp"
#include "wrap/parts.hpp"
#include "wrap/shims.hpp"

namespace memgate {

namespace {

// After Ctrl-C or SIGTERM the build gets this long to stop by itself
// before everything left is killed.
constexpr double kAbortGrace_s = 2.0;

// How long the history database may keep a run waiting for its lock, at
// the start and again at the end. Another build's write takes
// milliseconds; anything longer is a lock held on purpose or a hung
// process, and the record then goes to a side file (history/pending.hpp)
// instead of stalling the build for the default 10 s and being lost.
constexpr int kHistoryBusy_ms = 1000;

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

Runner::~Runner() {
  if (sigfd_ >= 0) ::close(sigfd_);
}

double Runner::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
}

int Runner::run() {
  log::set_quiet(opt_.quiet);
  guard_ = DeathGuard::start();                       // ends the build if memgate is killed (before the subreaper)
  if (!detect_machine()) return 125;                  // capacity, budget, CPU slots
  if (!open_history()) return 125;                    // predictions and the known total
  if (!load_prior()) return 125;                      // --prior / MEMGATE_PRIOR, for this run only
  if (!start_server()) return 125;                    // socket in a private dir, the governor
  cgroups_ = Confinement::setup(cap_, budget_, !opt_.no_confine);  // confinement, job accounting
  ports_ = live_ports(*server_, *cgroups_);           // what the job steps reach the world through
  sigfd_ = block_and_watch_signals();                 // Ctrl-C, SIGTERM, children
  ::prctl(PR_SET_CHILD_SUBREAPER, 1);                 // orphans of the build stay ours
  if (!start_build()) {                               // the user's command
    finish();
    return exit_status_;
  }
  log::debug("memgate runs at nice {}", raise_own_priority());  // its ticks go before the build's processes
  main_loop();                                        // until the build and its jobs end
  end_leftovers();                                    // nothing of the build outlives it
  finish();                                           // history, summary, reports; cgroups, socket
  return exit_status_;
}

bool Runner::detect_machine() {
  cap_ = detect_capacity();
  auto budget = compute_budget(cap_, opt_.reserve, opt_.memory);
  if (!budget) {
    log::error("{}", budget.error());
    return false;
  }
  budget_ = *budget;
  slots_ = opt_.jobs.value_or(platform::detect_cores());
  if (slots_ < 1) {
    log::error("--jobs must be at least 1");
    return false;
  }
  log::debug("capacity {} ({}), reserve {} ({} rule), budget {}, {} slots", format_bytes(cap_.capacity),
             cap_.capacity_source, format_bytes(budget_.reserve), budget_.reserve_rule, format_bytes(budget_.budget),
             slots_);
  return true;
}

// The priors this copy ships (<parts>/priors/*.json, e.g. flash-attn 2.x
// kernels), before anything else that may replace them: imported
// profiles, then --prior. They are read only from a trusted directory, as
// the other parts are used (wrap/parts.hpp): whoever could write them
// would choose what root admits. A shipped file that cannot be read is
// this install's fault, not the user's: a warning, and the run goes on.
void Runner::load_shipped_priors() {
  const std::string dir = join_path(find_parts().dir, "priors");
  if (!path_exists(dir)) return;
  std::string real;
  auto fd = open_trusted_dir(dir, ::geteuid(), false, 0755, &real);
  auto names = fd ? list_entries(fd->get(), real) : Result<std::vector<std::string>>(Error{fd.error()});
  if (!names) {
    log::warn("shipped priors not used: {}", names.error());
    degraded_.push_back("shipped priors not used: " + names.error());
    return;
  }
  std::sort(names->begin(), names->end());
  for (const std::string& name : *names) {
    if (name.size() <= 5 || name.compare(name.size() - 5, 5, ".json") != 0) continue;
    auto file = open_trusted_file(join_path(real, name), ::geteuid());
    auto profiles = file ? read_profiles_fd(file->fd.get(), file->path, PredictionSource::prior)
                         : Result<std::vector<JobProfile>>(Error{file.error()});
    if (!profiles) {
      log::warn("shipped prior not used: {}", profiles.error());
      continue;
    }
    for (const JobProfile& p : *profiles) predictor_.add_profile(p);
  }
}

// A history the user named in a directory that does not exist is a typo
// to stop at; one that is locked, corrupt beyond repair or unwritable is
// not the build's problem: it runs without.
bool Runner::open_history() {
  load_shipped_priors();
  history_path_ = History::resolve_path(opt_.history);
  if (auto s = History::check_location(history_path_); !s) {
    log::error("{}", s.error());
    return false;
  }
  auto h = History::open(history_path_, kHistoryBusy_ms);
  if (!h) {
    log::warn("running without history: {}", h.error());
    return true;
  }
  history_ = std::move(*h);
  if (int n = merge_pending(*history_, history_path_))
    log::info("merged {} build record(s) saved beside the history while it was locked", n);
  for (const JobRecord& j : history_->jobs_for_prediction(20)) predictor_.add_history(j);
  for (const JobProfile& p : history_->imported_profiles()) predictor_.add_profile(p);
  // A failed or interrupted build stopped part way: its count is no total.
  // A configure step or a relink is a different job list from the build.
  History::BuildQuery ref{recorder_.cwd(), recorder_.command(), true};
  ref.succeeded = true;
  ref.full_only = true;
  if (auto last = history_->last_build_id(ref)) {
    if (auto b = history_->load_build(*last)) {
      progress_ref_.jobs = static_cast<int>(b->jobs.size());
      progress_ref_.wall_s = b->wall_s();
      for (const JobRecord& j : b->jobs) progress_ref_.job_s += std::max(0.0, j.wall_s());
    }
  }
  return true;
}

// A prior seeds the predictor and nothing else: it is never written to
// history (that is what `history import` is for). Named by --prior, else
// MEMGATE_PRIOR; a file that cannot be used stops the run before the
// build starts, since the user asked for it.
bool Runner::load_prior() {
  std::string path = opt_.prior;
  if (path.empty())
    if (const char* env = std::getenv("MEMGATE_PRIOR")) path = env;
  if (path.empty()) return true;
  auto profiles = read_profiles_file(path, PredictionSource::prior);
  if (!profiles) {
    log::error("--prior: {}", profiles.error());
    return false;
  }
  for (const JobProfile& p : *profiles) predictor_.add_profile(p);
  log::debug("prior {}: {} job profiles", path, profiles->size());
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
  if (server_->max_connections() < static_cast<std::size_t>(slots_))
    log::warn("the open-file limit lets memgate hold {} wrapper connections, fewer than --jobs {}: at most {} jobs "
              "run at once; raise the hard limit (ulimit -Hn, systemd LimitNOFILE=)",
              server_->max_connections(), slots_, server_->max_connections());

  GovernorConfig gc;
  gc.budget = budget_.budget;
  gc.hard_limit = budget_.capacity - budget_.reserve;
  gc.slots = slots_;
  gc.cores = platform::detect_cores();
  // Each engine's remote capacity, as its configuration says (distcc:
  // DISTCC_HOSTS). icecc's is its scheduler's to know: its jobs take
  // local slots.
  for (const std::string& name : engine_names())
    if (int n = find_engine(name)->remote_slots(std::getenv); n > 0) gc.remote_slots[name] = n;
  // --offload: at most --offload-jobs at once, else what the engine's own
  // configuration allows, else four per local slot.
  if (const Engine* engine = find_engine(opt_.offload)) {
    auto remote = gc.remote_slots.find(opt_.offload);
    gc.offload.engine = opt_.offload;
    gc.offload.slots = opt_.offload_jobs.value_or(remote != gc.remote_slots.end() ? remote->second : 4 * slots_);
    gc.offload.takes = [engine](const JobKey& key) { return engine->takes(key); };
  }
  gc.decline_after_s = opt_.decline_after_s;
  if (auto policy = parse_admission_policy(opt_.admission)) gc.admission = *policy;
  gov_ = std::make_unique<Governor>(
      gc, [this](const JobKey& k) { return predictor_.predict(k); },
      [this](const JobRecord& r) { predictor_.observe(r); });
  gov_->on_past_peak([this](const JobKey& k, Bytes peak) { predictor_.observe_peak(k, peak); });
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
    gated_nothing_ = true;
    log::warn("compilers run ungated: memgate's parts are not safe to hand to the build ({}); install memgate "
              "where only root (or you) can write",
              trusted.error());
  }
  in.env = current_environment();
  in.memgate_exe = parts.wrapper;
  in.socket_path = server_->path();
  in.slots = slots_;
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
  spec.cgroup_dirs = cgroups_->build_dirs();
  serve_tokens(spec.env_changes, spec.inherit_fds);
  SpawnFailure failure;
  machine_busy_at_start_ = platform::read_machine_busy_s();
  own_cpu_at_start_ = platform::self_and_children_cpu_s();
  build_pid_ = spawn_build(spec, &failure);
  if (build_pid_ < 0) {
    log::error("{}", failure.message);
    exit_status_ = failure.exit_code;
    return false;
  }
  status_ = std::make_unique<StatusLine>(STDERR_FILENO, std::nullopt, opt_.quiet, colour_wanted(STDERR_FILENO));
  return true;
}

// The loop: poll the socket, the signals and the clock; every tick
// measure, decide and act. It ends when the build process has exited and
// no wrapper is still connected.
void Runner::main_loop() {
  while (!(build_done_ && live_.empty())) {
    std::vector<pollfd> fds;
    fds.push_back(pollfd{sigfd_, POLLIN, 0});
    server_->append_pollfds(fds);
    stats_.loop_turn();
    double wait_s = std::max(0.0, std::min(next_tick_, next_ungated_scan_) - now());
    if (!schedule_due_ && prepare_jobs()) wait_s = 0;  // more idle work: back after a look at the sockets
    int timeout_ms = schedule_due_ ? 0 : static_cast<int>(wait_s * 1000.0) + 1;
    int n = ::poll(fds.data(), fds.size(), timeout_ms);
    if (n < 0 && errno != EINTR) {
      log::error("poll failed: {}", std::strerror(errno));
      begin_abort(SIGTERM);
    }
    if (n > 0) {
      if (fds[0].revents & POLLIN) handle_signals();
      server_->handle_ready(fds);
    }
    if (schedule_due_) schedule_now();
    if (now() >= next_tick_) tick();
    else scan_ungated(now());  // when due, and never in a tick's turn
    if (build_done_ && !live_.empty() && !abort_signal_) {
      // The build tool is gone but some wrappers live on (orphans of a
      // killed make): nobody waits for their output any more.
      log::warn("{} job(s) outlived the build; ending them", live_.size());
      begin_abort(SIGTERM);
      kill_everything();
    }
  }
}

void Runner::handle_signals() {
  signalfd_siginfo si;
  while (::read(sigfd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
    int sig = static_cast<int>(si.ssi_signo);
    if (sig == SIGCHLD) reap_children();
    else begin_abort(sig);
  }
}

// As a subreaper memgate also reaps orphans of the build; only the build
// process itself decides the exit status.
void Runner::reap_children() {
  for (;;) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid <= 0) return;
    if (pid == build_pid_) {
      build_done_ = true;
      build_wait_status_ = status;
    }
  }
}

void Runner::begin_abort(int sig) {
  if (abort_signal_) {
    kill_everything();  // a second Ctrl-C: no more grace
    return;
  }
  abort_signal_ = sig;
  abort_deadline_ = now() + kAbortGrace_s;
  if (status_) sig == SIGINT ? status_->interrupted() : status_->clear();
  log::info("{}: stopping the build", strsignal(sig));
  forward_signal(sig);
}

void Runner::forward_signal(int sig) {
  std::vector<pid_t> pids = cgroups_->processes();
  for (pid_t p : platform::process_tree(::getpid())) pids.push_back(p);
  std::sort(pids.begin(), pids.end());
  pids.erase(std::unique(pids.begin(), pids.end()), pids.end());
  for (pid_t p : pids)
    if (p != ::getpid()) ::kill(p, sig);
}

// Everything memgate started, by cgroup and by process tree: after an
// abort no build process is left running.
void Runner::kill_everything() {
  killed_all_ = true;
  for (int round = 0; round < 3; ++round) {
    cgroups_->kill_all();
    std::vector<pid_t> pids = platform::process_tree(::getpid());
    bool any = false;
    for (pid_t p : pids) {
      if (p == ::getpid()) continue;
      ::kill(p, SIGKILL);
      ::kill(p, SIGCONT);
      any = true;
    }
    if (!any) break;
  }
}

void Runner::end_leftovers() {
  reap_children();
  if (abort_signal_) return;
  if (std::size_t n = cgroups_->release_leftovers())
    log::info("{} process(es) the build started keep running outside memgate's cgroup", n);
}

// The end, whether the build ran or could not start: its record, the
// summary and reports, then the cgroups and the socket go.
void Runner::finish() {
  if (status_) status_->finish();
  if (build_pid_ >= 0) {
    exit_status_ = abort_signal_ ? 128 + abort_signal_ : shell_status(build_wait_status_);
    Recorder::Totals t;
    t.end_unix = recorder_.start_unix() + now();
    t.exit_status = exit_status_;
    t.capacity = budget_.capacity;
    t.budget = budget_.budget;
    t.slots = slots_;
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
    t.counters[Counter::ungated] = static_cast<std::int64_t>(ungated_.count());
    // A build given more CPU weight than its neighbours (bench/plan-accuracy
    // does) leaves them only what it does not use: not contention.
    if (auto busy = platform::read_machine_busy_s();
        busy && machine_busy_at_start_ && !platform::cgroup_cpu_weight_raised(platform::detect_cgroups())) {
      double own = platform::self_and_children_cpu_s() - own_cpu_at_start_;
      double others = std::max(0.0, *busy - *machine_busy_at_start_ - own);
      t.counters[Counter::other_cpu_ms] = std::llround(others * 1000);
    }
    t.counters[Counter::ungated_peak_bytes] = static_cast<std::int64_t>(ungated_.peak_together());
    BuildRecord b = recorder_.build_record(t);
    PublishOptions p;
    p.degraded = cgroups_->degraded();
    p.degraded.insert(p.degraded.end(), degraded_.begin(), degraded_.end());
    if (auto n = t.counters[Counter::unjoined])
      p.degraded.push_back(fmt::format("{} job attempt(s) outside their cgroup: measured through /proc", n));
    if (auto n = t.counters[Counter::refused_pid])
      p.degraded.push_back(fmt::format("{} reported pid(s) refused: not below their wrapper, never frozen or killed", n));
    p.notes = ungated_.summary_lines();
    p.quiet = opt_.quiet;
    p.verbose = opt_.verbose;
    p.history_path = history_path_;
    p.report_html = opt_.report_html;
    p.trace_json = opt_.trace_json;
    p.summary_json = opt_.summary_json;
    p.record_empty = opt_.record_empty;
    publish(b, history_.get(), p);
  }
  write_stats();
  cgroups_->remove(abort_signal_ != 0);
  guard_.disarm();  // the cgroups are gone: nothing is left for it to do
  ports_.reset();
  server_.reset();
  tokens_.reset();
  if (tokens_log_) std::fclose(tokens_log_), tokens_log_ = nullptr;
  if (socket_dir_)
    if (auto st = socket_dir_->remove(); !st) log::warn("{}", st.error());
}

// MEMGATE_RUN_STATS=FILE: memgate's own CPU, RSS, ticks and grant waits
// (run/run_stats.hpp), written where the user's other files go.
void Runner::write_stats() {
  const char* path = std::getenv("MEMGATE_RUN_STATS");
  if (!path || !*path) return;
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  auto secs = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6; };
  std::int64_t jobs = gov_ ? get(gov_->counters(), Counter::admitted) : 0;
  std::string text = stats_.json(secs(ru.ru_utime) + secs(ru.ru_stime), ru.ru_maxrss, now(), jobs);
  if (auto st = write_file_atomically(path, text); !st) log::warn("MEMGATE_RUN_STATS: {}", st.error());
}

}  // namespace memgate
