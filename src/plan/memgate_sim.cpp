// memgate's policy in simulated time: the real Governor decides, and
// SimulatedRun plays the runner (start, sample, freeze, thaw, kill, reap) and the
// machine (CPU sharing, memory along each job's profile).
#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "governor/governor.hpp"
#include "plan/simulate.hpp"

namespace memgate::plan {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

enum class SimState { waiting, running, frozen, done };

// The simulated machine's side of one job (the governor keeps its own
// GovJob): where its current attempt has got to and how fast it moves.
struct JobProgress {
  int job = 0;  // index into the PlanJobs
  SimState state = SimState::waiting;
  double p = 0;
  double rate = -1;  // -1: not set in this attempt
  size_t trace = 0;
  Bytes attempt_peak = 0;
};

class SimulatedRun {
 public:
  SimulatedRun(const std::vector<PlanJob>& jobs, const Machine& machine, const MemgateSimOptions& options)
      : jobs_(jobs), machine_(machine), options_(options), gov_(config(machine, options), [this](const JobKey& k) {
          return jobs_[std::stoi(k.identity)].predicted;
        }) {}

  MemgateRun run();

 private:
  static GovernorConfig config(const Machine& m, const MemgateSimOptions& o) {
    GovernorConfig cfg;
    cfg.admission = o.admission;
    cfg.budget = m.budget();
    cfg.hard_limit = cfg.budget;
    cfg.slots = std::max(1, m.cores);
    return cfg;
  }
  Bytes current(const JobProgress& s) const { return memory_at(jobs_[s.job].profile, s.p); }
  MemoryView view() const;
  void sample_all(double t);
  void oom_check(double t);
  void apply(const Decisions& d, double t);
  void end_attempt(JobId id, ExitKind how, double t);
  void update_rates(double t);
  double advance(double until);

  const std::vector<PlanJob>& jobs_;
  Machine machine_;
  MemgateSimOptions options_;
  Governor gov_;
  std::map<JobId, JobProgress> sim_;
  MemgateRun out_;
  int done_ = 0;
};

MemoryView SimulatedRun::view() const {
  MemoryView v;
  for (const auto& [id, s] : sim_)
    if (s.state == SimState::running || s.state == SimState::frozen) v.build_used += current(s);
  return v;
}

void SimulatedRun::sample_all(double t) {
  for (auto& [id, s] : sim_) {
    if (s.state != SimState::running && s.state != SimState::frozen) continue;
    // CPU is even over a job's life (workload.hpp): what it has spent is
    // its progress times its CPU time, so the governor reads progress as
    // the runner does, by CPU.
    const double cpu = jobs_[s.job].cpu_s;
    gov_.sample(id, current(s), s.attempt_peak, t, cpu > 0 ? s.p * cpu : -1);
  }
}

// Above the confinement limit the kernel kills the largest process tree.
void SimulatedRun::oom_check(double t) {
  if (view().build_used <= gov_.config().hard_limit) return;
  JobId victim = -1;
  Bytes most = -1;
  for (const auto& [id, s] : sim_) {
    if (s.state != SimState::running && s.state != SimState::frozen) continue;
    if (current(s) > most) most = current(s), victim = id;
  }
  if (victim >= 0) end_attempt(victim, ExitKind::oom_killed, t);
}

void SimulatedRun::end_attempt(JobId id, ExitKind how, double t) {
  JobProgress& s = sim_.at(id);
  out_.traces[s.trace].path.push_back({t, s.p});
  // CPU is even over a job's life (workload.hpp): an attempt at progress
  // p has spent p of the job's CPU time.
  bool again = gov_.exited(id, how, 0, t, s.p * jobs_[s.job].cpu_s);
  s.p = 0;
  s.rate = -1;
  s.attempt_peak = 0;
  if (again) {
    s.state = SimState::waiting;
    return;
  }
  s.state = SimState::done;
  ++done_;
  if (how != ExitKind::finished) ++out_.failed;
}

void SimulatedRun::apply(const Decisions& d, double t) {
  for (JobId id : d.kill) end_attempt(id, ExitKind::killed_by_us, t);
  for (JobId id : d.freeze) sim_.at(id).state = SimState::frozen;
  for (JobId id : d.thaw) sim_.at(id).state = SimState::running;
  for (JobId id : d.admit) {
    JobProgress& s = sim_.at(id);
    s.state = SimState::running;
    s.p = 0;
    s.rate = -1;
    s.attempt_peak = current(s);
    out_.traces.push_back(Trace{s.job, {{t, 0.0}}});
    s.trace = out_.traces.size() - 1;
  }
}

void SimulatedRun::update_rates(double t) {
  double demand = 0;
  for (const auto& [id, s] : sim_)
    if (s.state == SimState::running) demand += jobs_[s.job].cpu_demand();
  double share = cpu_share(demand, machine_.cores);
  for (auto& [id, s] : sim_) {
    if (s.state != SimState::running && s.state != SimState::frozen) continue;
    double rate = s.state == SimState::running ? progress_rate(jobs_[s.job], share) : 0.0;
    if (rate != s.rate && s.rate >= 0) out_.traces[s.trace].path.push_back({t, s.p});
    s.rate = rate;
  }
}

// Moves every running job forward to `until` or to the first finish,
// whichever comes first; returns the time reached.
double SimulatedRun::advance(double until) {
  double dt = until;
  for (const auto& [id, s] : sim_)
    if (s.state == SimState::running && s.rate > 0) dt = std::min(dt, (1.0 - s.p) / s.rate);
  double tol = dt * 1e-9 + 1e-12;
  for (auto& [id, s] : sim_) {
    if (s.state != SimState::running || s.rate <= 0) continue;
    double before = s.p;
    s.p = (1.0 - s.p) / s.rate <= dt + tol ? 1.0 : s.p + s.rate * dt;
    s.attempt_peak = std::max(s.attempt_peak, max_between(jobs_[s.job].profile, before, s.p));
  }
  return dt;
}

// Main loop, one pass per event (a tick or a job's end): sample and
// check memory on ticks, let the governor decide, carry out its
// decisions, then run the machine until the next event.
MemgateRun SimulatedRun::run() {
  for (size_t i = 0; i < jobs_.size(); ++i) {
    JobKey key = jobs_[i].key;
    key.identity = std::to_string(i);  // unique, and how the prediction is found
    JobId id = gov_.submit(key, 0);
    sim_[id] = JobProgress{static_cast<int>(i)};
  }
  double total_work = 0;
  for (const PlanJob& j : jobs_) total_work += j.work_s;
  const double give_up_at = 100 * total_work + 3600;
  const double tick = std::max(options_.tick_s, 1e-3);
  double t = 0, next_tick = 0;
  while (done_ < static_cast<int>(jobs_.size())) {
    if (t >= next_tick) {
      sample_all(t);
      oom_check(t);
      next_tick = t + tick;
    }
    apply(gov_.step(view(), t), t);
    if (t > give_up_at) {
      out_.finished = false;
      break;
    }
    update_rates(t);
    double until = next_tick - t;
    double dt = advance(until);
    t = dt >= until ? next_tick : t + dt;  // land on the tick exactly
    for (auto& [id, s] : sim_)
      if (s.state == SimState::running && s.p >= 1.0) end_attempt(id, ExitKind::finished, t);
  }
  out_.wall_s = t;
  out_.counters = gov_.counters();
  out_.peak = peak_memory(jobs_, out_.traces);
  return out_;
}

}  // namespace

MemgateRun simulate_memgate(const std::vector<PlanJob>& jobs, const Machine& machine,
                            const MemgateSimOptions& options) {
  if (jobs.empty()) return {};
  SimulatedRun sim(jobs, machine, options);
  return sim.run();
}

}  // namespace memgate::plan
