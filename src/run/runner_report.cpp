// What a finished build leaves behind: its record in history, the summary
// on stderr, and the report and trace files asked for.
#include <sys/wait.h>

#include <algorithm>
#include <chrono>

#include <fmt/core.h>
#include <fmt/format.h>

#include "predict/identity.hpp"
#include "predict/profile.hpp"
#include "report/files.hpp"
#include "report/summary.hpp"
#include "run/build_process.hpp"
#include "run/runner_impl.hpp"
#include "util/log.hpp"

namespace memgate {

namespace {
constexpr size_t kProfilePoints = 64;
constexpr size_t kSeriesPoints = 2000;
}  // namespace

JobRecord Runner::make_record(const LiveJob& job, const ExitMsg& exit) {
  const GovJob& g = gov_->job(job.id);
  JobRecord r;
  r.key = g.key;
  r.argv_digest = argv_digest(job.req.argv);
  r.cwd = job.req.cwd;
  r.predicted = g.first_pred;
  r.submit_s = g.submit_t;
  r.start_s = g.first_start_t;
  r.end_s = now();
  r.wait_s = g.wait_s;
  r.frozen_s = g.frozen_s;
  r.cpu_s = exit.cpu_s;
  r.peak_bytes = std::max(g.observed_peak, g.attempt_peak);
  r.exit_status = shell_status(exit.status);
  r.attempts = g.attempts;
  r.attempt_log = g.attempt_log;
  double wall = r.end_s - job.attempt_start;
  std::vector<MemSample> profile = job.profile;
  profile.push_back(MemSample{wall, 0});
  PeakTiming timing = peak_timing(profile, wall);
  r.t_peak_s = timing.t_peak_s;
  r.peak_over_frac = timing.peak_over_frac;
  r.after_peak_bytes = timing.after_peak_bytes;
  r.profile = downsample_profile(profile, kProfilePoints);
  return r;
}

void Runner::save_and_report() {
  if (status_) status_->finish();
  exit_status_ = abort_signal_ ? 128 + abort_signal_ : shell_status(build_wait_status_);

  BuildRecord b;
  b.cwd = cwd_;
  b.command = command_;
  b.start_unix = start_unix_;
  b.end_unix = start_unix_ + now();
  b.exit_status = exit_status_;
  b.capacity = budget_.capacity;
  b.budget = budget_.budget;
  b.slots = slots_;
  b.peak_bytes = peak_used_;
  if (confine_) b.peak_bytes = std::max(b.peak_bytes, confine_->peak().value_or(0));
  b.counters = gov_->counters();
  const ServerCounters& sc = server_->counters();
  b.counters["wrapper_connections"] = static_cast<std::int64_t>(sc.accepted);
  b.counters["refused_uid"] = static_cast<std::int64_t>(sc.refused_uid);
  b.counters["dropped_malformed"] = static_cast<std::int64_t>(sc.dropped_malformed);
  b.memory = downsample_profile(memory_series_, kSeriesPoints);
  for (const GovEvent& e : gov_->events()) {
    if (e.kind == "overshoot") continue;
    auto it = record_index_.find(e.job);
    b.events.push_back(BuildEvent{e.t, e.kind, it == record_index_.end() ? -1 : it->second, e.reason});
  }
  b.jobs = finished_;

  if (history_) {
    if (auto id = history_->save_build(b)) b.id = *id;
    else log::warn("could not save this build to history: {}", id.error());
  }
  if (!opt_.quiet) {
    std::string text = format_summary(b);
    if (!degraded_.empty()) text += fmt::format("memgate: degraded: {}\n", fmt::join(degraded_, "; "));
    ssize_t n = ::write(STDERR_FILENO, text.data(), text.size());
    (void)n;
  }
  if (auto st = write_reports(b, opt_.report_html, opt_.trace_json); !st) log::warn("{}", st.error());
}

}  // namespace memgate
