#include "run/recorder.hpp"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <string_view>

#include <fmt/core.h>
#include <fmt/format.h>

#include "core/job_class.hpp"
#include "history/history.hpp"
#include "history/pending.hpp"
#include "history/record_json.hpp"
#include "predict/identity.hpp"
#include "predict/profile.hpp"
#include "report/files.hpp"
#include "report/summary.hpp"
#include "util/atomic_file.hpp"
#include "util/log.hpp"

namespace memgate {

namespace {
constexpr size_t kProfilePoints = 64;     // per job, in history
constexpr size_t kSeriesPoints = 2000;    // the build's memory, in history
constexpr size_t kLiveSeriesMax = 20000;  // thinned to half when reached
}  // namespace

std::string quote_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    bool plain = !a.empty() && std::all_of(a.begin(), a.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("-_./=:,+@%").find(c) != std::string_view::npos;
    });
    if (plain) {
      out += a;
      continue;
    }
    out += '\'';
    for (char c : a) {
      if (c == '\'') out += "'\\''";
      else out += c;
    }
    out += '\'';
  }
  return out;
}

Recorder::Recorder(std::string cwd, std::string command, double start_unix)
    : cwd_(std::move(cwd)), command_(std::move(command)), start_unix_(start_unix) {}

void Recorder::sample_memory(double t, Bytes used) {
  peak_used_ = std::max(peak_used_, used);
  memory_.push_back(MemSample{t, used});
  if (memory_.size() > kLiveSeriesMax) memory_ = downsample_profile(memory_, kLiveSeriesMax / 2);
}

void Recorder::observe(const JobFact& f) {
  Ledger& l = ledgers_[f.job];
  auto thaw = [&] {
    if (l.frozen_since >= 0) l.frozen_s += std::max(0.0, f.t - l.frozen_since);
    l.frozen_since = -1;
  };
  auto name = [&] {
    l.key = f.key;
    l.placement = f.placement;
    l.engine = f.engine;
  };
  switch (f.kind) {
    case JobFact::Kind::submitted:
      name();
      l.submit_t = f.t;
      break;
    case JobFact::Kind::started:
      ++l.started;
      if (l.first_start_t < 0) {
        l.first_start_t = f.t;
        l.first_pred = f.pred;
      }
      l.wait_s += f.waited_s;
      break;
    case JobFact::Kind::frozen: l.frozen_since = f.t; break;
    case JobFact::Kind::thawed: thaw(); break;
    case JobFact::Kind::ended:
      name();
      thaw();
      l.attempts.push_back(f.attempt);
      break;
    case JobFact::Kind::left:
      name();
      l.wait_s += f.waited_s;
      break;
  }
}

JobRecord Recorder::make_record(JobId id, const AttemptReport& a, double now) const {
  static const Ledger kNone;
  auto it = ledgers_.find(id);
  const Ledger& l = it == ledgers_.end() ? kNone : it->second;
  JobRecord r;
  r.key = l.key;
  r.argv_digest = argv_digest(a.argv);
  r.cwd = a.cwd;
  r.predicted = l.first_pred;
  r.submit_s = l.submit_t;
  r.start_s = l.first_start_t;
  r.end_s = now;
  r.wait_s = l.wait_s;
  r.frozen_s = l.frozen_s;
  r.cpu_s = a.cpu_s;
  for (const Attempt& at : l.attempts) r.peak_bytes = std::max(r.peak_bytes, at.peak_bytes);
  r.exit_status = a.exit_status;
  r.attempts = l.started;
  r.attempt_log = l.attempts;
  r.where = l.placement;
  r.engine = l.engine;
  double wall = now - a.attempt_start;
  std::vector<MemSample> profile = a.profile;
  profile.push_back(MemSample{wall, 0, a.cpu_s > 0 ? a.cpu_s : -1});
  interpolate_cpu_clock(profile);  // every point on the job's CPU clock, if it was read
  PeakTiming timing = peak_timing(profile, wall);
  r.t_peak_s = timing.t_peak_s;
  r.peak_over_frac = timing.peak_over_frac;
  r.after_peak_bytes = timing.after_peak_bytes;
  r.profile = downsample_profile(profile, kProfilePoints);
  return r;
}

void Recorder::finish(JobId id, JobRecord record) {
  ledgers_.erase(id);
  index_of_[id] = static_cast<int>(jobs_.size());
  finished_job_s_ += std::max(0.0, record.wall_s());
  jobs_.push_back(std::move(record));
}

BuildRecord Recorder::build_record(const Totals& t) const {
  BuildRecord b;
  b.cwd = cwd_;
  b.command = command_;
  b.start_unix = start_unix_;
  b.end_unix = t.end_unix;
  b.exit_status = t.exit_status;
  b.capacity = t.capacity;
  b.budget = t.budget;
  b.slots = t.slots;
  b.cores = t.cores;
  b.peak_bytes = std::max(peak_used_, t.cgroup_peak);
  b.counters = t.counters;
  b.memory = downsample_profile(memory_, kSeriesPoints);
  for (const GovEvent& e : t.events) {
    auto it = index_of_.find(e.job);
    b.events.push_back(BuildEvent{e.t, e.kind, it == index_of_.end() ? -1 : it->second, e.reason});
  }
  b.jobs = jobs_;
  b.kind = classify_build(b.jobs);
  return b;
}

void publish(BuildRecord& b, History* history, const PublishOptions& o) {
  const bool record = !b.jobs.empty() || o.record_empty;
  std::string why = history ? "" : "the history database could not be opened";
  if (history && record) {
    if (auto id = history->save_build(b)) b.id = *id;
    else why = id.error();
  }
  if (!record) log::debug("no job was gated: the build is not recorded (--record-empty keeps it)");
  if (record && !why.empty() && !o.history_path.empty()) {
    if (auto side = save_pending(o.history_path, b))
      log::warn("{}; this build's record went to {} (the next memgate run merges it)", why, *side);
    else
      log::warn("could not save this build to history: {}; nor beside it: {}", why, side.error());
  }
  // Even --quiet says when memory, not the compiler, failed the build:
  // "Killed" / "Error 137" is misread all the time.
  std::string text = o.quiet ? format_memory_failure(b) : format_summary(b, o.degraded, o.notes, o.verbose);
  ssize_t n = ::write(STDERR_FILENO, text.data(), text.size());
  (void)n;
  if (auto st = write_reports(b, o.report_html, o.trace_json); !st) log::warn("{}", st.error());
  if (!o.summary_json.empty())
    if (auto st = write_file_atomically(o.summary_json, build_record_json(b)); !st)
      log::warn("the summary JSON was not written: {}", st.error());
}

}  // namespace memgate
