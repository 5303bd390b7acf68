#include "history/sqlite_history.hpp"

#include <cmath>
#include <cstdlib>
#include <ctime>

#include <fmt/core.h>

#include "core/job_class.hpp"
#include "history/codec.hpp"
#include "predict/envelope.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace memgate {
namespace {

constexpr std::string_view kInsertBuild =
    "INSERT INTO builds (cwd, command, start_unix, end_unix, exit_status, capacity_bytes, budget_bytes, slots, "
    "peak_bytes, job_count, wait_s, counters, memory, events, kind, cores) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";

constexpr std::string_view kInsertJob =
    "INSERT INTO jobs (build_id, seq, identity, tool, klass, stem, cpu_weight, argv_digest, cwd, submit_s, start_s, "
    "end_s, wait_s, frozen_s, cpu_s, peak_bytes, predicted_peak_bytes, predicted_wall_s, predicted_cpu_s, "
    "predicted_peak_over_frac, predicted_after_peak_bytes, predicted_confidence, predicted_source, t_peak_s, "
    "peak_over_frac, after_peak_bytes, exit_status, attempts, attempt_log, profile, placement, engine) "
    "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)";

// The columns read_job() expects, in order; PROFILE is the last one.
#define MEMGATE_JOB_COLUMNS(PROFILE)                                                                              \
  "identity, tool, klass, stem, cpu_weight, argv_digest, cwd, submit_s, start_s, end_s, wait_s, frozen_s, cpu_s, " \
  "peak_bytes, predicted_peak_bytes, predicted_wall_s, predicted_cpu_s, predicted_peak_over_frac, "               \
  "predicted_after_peak_bytes, predicted_confidence, predicted_source, t_peak_s, peak_over_frac, "                \
  "after_peak_bytes, exit_status, attempts, attempt_log, placement, engine, " PROFILE

constexpr std::string_view kSelectBuildJobs =
    "SELECT " MEMGATE_JOB_COLUMNS("profile") " FROM jobs WHERE build_id = ? ORDER BY seq";
// With profiles (at most 64 points a job): the predictor learns each
// run's envelope from its profile (predict/envelope.hpp).
constexpr std::string_view kSelectRecentJobs =
    "SELECT " MEMGATE_JOB_COLUMNS("profile") " FROM jobs WHERE build_id IN "
    "(SELECT id FROM builds ORDER BY id DESC LIMIT ?) ORDER BY build_id, seq";

constexpr std::string_view kSelectBuild =
    "SELECT id, cwd, command, start_unix, end_unix, exit_status, capacity_bytes, budget_bytes, slots, peak_bytes, "
    "counters, memory, events, kind, cores FROM builds WHERE id = ?";

constexpr std::string_view kSelectSummaries =
    "SELECT id, cwd, command, start_unix, end_unix, exit_status, peak_bytes, budget_bytes, job_count, wait_s "
    "FROM builds ORDER BY id DESC LIMIT ?";

void bind_job(sql::Stmt& st, std::int64_t build_id, int seq, const JobRecord& j) {
  const Prediction& p = j.predicted;
  st.bind(1, build_id).bind(2, seq).bind(3, j.key.identity).bind(4, j.key.tool).bind(5, j.key.klass);
  st.bind(6, j.key.stem).bind(7, j.key.cpu_weight).bind(8, j.argv_digest).bind(9, j.cwd);
  st.bind(10, j.submit_s).bind(11, j.start_s).bind(12, j.end_s).bind(13, j.wait_s).bind(14, j.frozen_s);
  st.bind(15, j.cpu_s).bind(16, j.peak_bytes);
  st.bind(17, p.peak).bind(18, p.wall_s).bind(19, p.cpu_s).bind(20, p.peak_over_frac).bind(21, p.after_peak);
  st.bind(22, p.confidence).bind(23, name(p.source));
  st.bind(24, j.t_peak_s).bind(25, j.peak_over_frac).bind(26, j.after_peak_bytes).bind(27, j.exit_status);
  st.bind(28, j.attempts).bind(29, codec::encode_attempts(j.attempt_log)).bind(30, codec::encode_series(j.profile));
  st.bind(31, name(j.where)).bind(32, j.engine);
}

JobRecord read_job(const sql::Stmt& st) {
  JobRecord j;
  j.key.identity = st.text(0);
  j.key.tool = st.text(1);
  j.key.klass = st.text(2);
  j.key.stem = st.text(3);
  j.key.cpu_weight = static_cast<int>(st.int64(4));
  j.argv_digest = st.text(5);
  j.cwd = st.text(6);
  j.submit_s = st.real(7);
  j.start_s = st.real(8);
  j.end_s = st.real(9);
  j.wait_s = st.real(10);
  j.frozen_s = st.real(11);
  j.cpu_s = st.real(12);
  j.peak_bytes = st.int64(13);
  j.predicted.peak = st.int64(14);
  j.predicted.wall_s = st.real(15);
  j.predicted.cpu_s = st.real(16);
  j.predicted.peak_over_frac = st.real(17);
  j.predicted.after_peak = st.int64(18);
  j.predicted.confidence = st.real(19);
  j.predicted.source = parse_prediction_source(st.text(20)).value_or(PredictionSource::fallback);
  j.t_peak_s = st.real(21);
  j.peak_over_frac = st.real(22);
  j.after_peak_bytes = st.int64(23);
  j.exit_status = static_cast<int>(st.int64(24));
  j.attempts = static_cast<int>(st.int64(25));
  j.attempt_log = codec::decode_attempts(st.text(26));
  j.where = parse_placement(st.text(27)).value_or(Placement::local);
  j.engine = st.text(28);
  j.profile = codec::decode_series(st.text(29));
  return j;
}

}  // namespace

void SqliteHistory::warn_once(const std::string& what, const std::string& why) {
  if (warned_) return;
  warned_ = true;
  log::warn("cannot {} history database {}: {}", what, path_, why);
}

Status SqliteHistory::insert_jobs(std::int64_t build_id, const std::vector<JobRecord>& jobs) {
  auto st = db_.prepare(kInsertJob);
  if (!st) return Error{st.error()};
  for (size_t i = 0; i < jobs.size(); ++i) {
    bind_job(*st, build_id, static_cast<int>(i), jobs[i]);
    if (auto s = st->run(); !s) return s;
    st->reset();
  }
  return ok_status();
}

Result<std::int64_t> SqliteHistory::save_build(const BuildRecord& b) {
  auto fail = [&](const std::string& why) -> Result<std::int64_t> {
    (void)db_.exec("ROLLBACK");
    return Error{fmt::format("cannot save the build to history database {}: {}", path_, why)};
  };
  // IMMEDIATE takes the write lock up front (waiting up to the busy
  // timeout), so a concurrent build's write cannot make this one fail halfway.
  if (auto s = db_.exec("BEGIN IMMEDIATE"); !s)
    return Error{fmt::format("cannot save the build to history database {}: {}", path_, s.error())};
  auto st = db_.prepare(kInsertBuild);
  if (!st) return fail(st.error());
  st->bind(1, b.cwd).bind(2, b.command).bind(3, b.start_unix).bind(4, b.end_unix).bind(5, b.exit_status);
  // The list shows what the build's own view shows: the one summary.
  const BuildSummary sum = summarize_build(b);
  st->bind(6, b.capacity).bind(7, b.budget).bind(8, b.slots).bind(9, sum.peak_bytes);
  st->bind(10, sum.job_count).bind(11, sum.wait_s);
  st->bind(12, codec::encode_counters(b.counters)).bind(13, codec::encode_series(b.memory));
  st->bind(14, codec::encode_events(b.events));
  st->bind(15, b.kind.empty() ? classify_build(b.jobs) : b.kind).bind(16, b.cores);
  if (auto s = st->run(); !s) return fail(s.error());
  const std::int64_t id = db_.last_insert_rowid();
  if (auto s = insert_jobs(id, b.jobs); !s) return fail(s.error());
  if (auto s = db_.exec("COMMIT"); !s) return fail(s.error());
  return id;
}

std::vector<BuildSummary> SqliteHistory::list_builds(int limit) {
  std::vector<BuildSummary> out;
  auto st = db_.prepare(kSelectSummaries);
  if (!st) {
    warn_once("read", st.error());
    return out;
  }
  st->bind(1, static_cast<std::int64_t>(limit > 0 ? limit : -1));
  std::string err;
  while (st->step(&err)) {
    BuildSummary s;
    s.id = st->int64(0);
    s.cwd = st->text(1);
    s.command = st->text(2);
    s.start_unix = st->real(3);
    s.wall_s = st->real(4) - s.start_unix;
    s.exit_status = static_cast<int>(st->int64(5));
    s.peak_bytes = st->int64(6);
    s.budget = st->int64(7);  // (a list row: capacity, failed and frozen_s are not stored)
    s.job_count = static_cast<int>(st->int64(8));
    s.wait_s = st->real(9);
    out.push_back(std::move(s));
  }
  if (!err.empty()) warn_once("read", err);
  return out;
}

std::vector<JobRecord> SqliteHistory::query_jobs(std::string_view sql, std::int64_t param) {
  std::vector<JobRecord> out;
  auto st = db_.prepare(sql);
  if (!st) {
    warn_once("read", st.error());
    return out;
  }
  st->bind(1, param);
  std::string err;
  while (st->step(&err)) out.push_back(read_job(*st));
  if (!err.empty()) warn_once("read", err);
  return out;
}

std::optional<BuildRecord> SqliteHistory::load_build(std::int64_t id) {
  auto st = db_.prepare(kSelectBuild);
  if (!st) {
    warn_once("read", st.error());
    return std::nullopt;
  }
  st->bind(1, id);
  std::string err;
  if (!st->step(&err)) {
    if (!err.empty()) warn_once("read", err);
    return std::nullopt;
  }
  BuildRecord b;
  b.id = st->int64(0);
  b.cwd = st->text(1);
  b.command = st->text(2);
  b.start_unix = st->real(3);
  b.end_unix = st->real(4);
  b.exit_status = static_cast<int>(st->int64(5));
  b.capacity = st->int64(6);
  b.budget = st->int64(7);
  b.slots = static_cast<int>(st->int64(8));
  b.peak_bytes = st->int64(9);
  b.counters = codec::decode_counters(st->text(10));
  b.memory = codec::decode_series(st->text(11));
  b.events = codec::decode_events(st->text(12));
  b.kind = st->text(13);
  b.cores = static_cast<int>(st->int64(14));
  b.jobs = query_jobs(kSelectBuildJobs, id);
  return b;
}

std::optional<std::int64_t> SqliteHistory::last_build_id(const BuildQuery& q) {
  const auto& cwd = q.cwd;
  const auto& command = q.command;
  std::string sql = "SELECT id FROM builds WHERE 1";
  if (cwd) sql += " AND cwd = ?1";
  if (command) sql += " AND command = ?2";
  if (q.with_jobs) sql += " AND job_count > 0";
  if (q.succeeded) sql += " AND exit_status = 0";
  if (q.full_only) sql += " AND kind IN ('', 'build')";
  sql += " ORDER BY id DESC LIMIT 1";
  auto st = db_.prepare(sql);
  if (!st) {
    warn_once("read", st.error());
    return std::nullopt;
  }
  if (cwd) st->bind(1, *cwd);
  if (command) st->bind(2, *command);
  std::string err;
  if (st->step(&err)) return st->int64(0);
  if (!err.empty()) warn_once("read", err);
  return std::nullopt;
}

std::vector<JobRecord> SqliteHistory::jobs_for_prediction(int max_builds) {
  return query_jobs(kSelectRecentJobs, max_builds > 0 ? max_builds : -1);
}

namespace {

constexpr std::string_view kSelectImported =
    "SELECT identity, tool, klass, stem, cpu_weight, peak_bytes, wall_s, cpu_s, peak_over_frac, after_peak_bytes, "
    "runs, envelope, fall_x FROM imported ORDER BY identity";
constexpr std::string_view kUpsertImported =
    "INSERT INTO imported (identity, tool, klass, stem, cpu_weight, peak_bytes, wall_s, cpu_s, peak_over_frac, "
    "after_peak_bytes, runs, imported_unix, envelope, fall_x) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?) "
    "ON CONFLICT (identity) DO UPDATE SET tool = excluded.tool, klass = excluded.klass, stem = excluded.stem, "
    "cpu_weight = excluded.cpu_weight, peak_bytes = excluded.peak_bytes, wall_s = excluded.wall_s, "
    "cpu_s = excluded.cpu_s, peak_over_frac = excluded.peak_over_frac, after_peak_bytes = excluded.after_peak_bytes, "
    "runs = excluded.runs, imported_unix = excluded.imported_unix, envelope = excluded.envelope, "
    "fall_x = excluded.fall_x";

// The envelope column: fractions, comma-separated, rounded up (what the
// file reader checked, or '' for none).
std::string fractions_text(const std::vector<double>& v) {
  std::string out;
  for (double x : v) out += (out.empty() ? "" : ",") + fmt::format("{:.4f}", std::min(1.0, std::ceil(x * 1e4 - 1e-6) / 1e4));
  return out;
}

std::vector<double> fractions_from_text(const std::string& text) {
  std::vector<double> at;
  for (std::string_view part : split(text, ',')) {
    std::string s(part);
    char* end = nullptr;
    double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size()) return {};
    at.push_back(v);
  }
  return at;
}

}  // namespace

std::vector<JobProfile> SqliteHistory::imported_profiles() {
  std::vector<JobProfile> out;
  auto st = db_.prepare(kSelectImported);
  if (!st) {
    warn_once("read", st.error());
    return out;
  }
  std::string err;
  while (st->step(&err)) {
    JobProfile p;
    p.key.identity = st->text(0);
    p.key.tool = st->text(1);
    p.key.klass = st->text(2);
    p.key.stem = st->text(3);
    p.key.cpu_weight = static_cast<int>(st->int64(4));
    p.peak = st->int64(5);
    p.wall_s = st->real(6);
    p.cpu_s = st->real(7);
    p.peak_over_frac = st->real(8);
    p.after_peak = st->int64(9);
    p.runs = static_cast<int>(st->int64(10));
    p.envelope = sanitized_envelope(fractions_from_text(st->text(11)), st->real(12));
    if (p.envelope.empty() && p.peak > 0)
      p.envelope = step_envelope(p.peak_over_frac, static_cast<double>(p.after_peak) / static_cast<double>(p.peak));
    p.origin = PredictionSource::imported;
    out.push_back(std::move(p));
  }
  if (!err.empty()) warn_once("read", err);
  return out;
}

Result<int> SqliteHistory::import_profiles(const std::vector<JobProfile>& profiles) {
  auto fail = [&](const std::string& why) -> Result<int> {
    (void)db_.exec("ROLLBACK");
    return Error{fmt::format("cannot import into history database {}: {}", path_, why)};
  };
  if (auto s = db_.exec("BEGIN IMMEDIATE"); !s)
    return Error{fmt::format("cannot import into history database {}: {}", path_, s.error())};
  auto count = db_.query_text("SELECT count(*) FROM imported");
  if (!count) return fail(count.error());
  const int before = count->empty() ? 0 : std::stoi(*count);
  auto st = db_.prepare(kUpsertImported);
  if (!st) return fail(st.error());
  const double now = static_cast<double>(std::time(nullptr));
  for (const JobProfile& p : profiles) {
    st->bind(1, p.key.identity).bind(2, p.key.tool).bind(3, p.key.klass).bind(4, p.key.stem);
    st->bind(5, p.key.cpu_weight).bind(6, p.peak).bind(7, p.wall_s).bind(8, p.cpu_s).bind(9, p.peak_over_frac);
    st->bind(10, p.after_peak).bind(11, p.runs).bind(12, now).bind(13, fractions_text(p.envelope.at));
    st->bind(14, p.envelope.fall_x);
    if (auto s = st->run(); !s) return fail(s.error());
    st->reset();
  }
  count = db_.query_text("SELECT count(*) FROM imported");
  if (!count) return fail(count.error());
  if (auto s = db_.exec("COMMIT"); !s) return fail(s.error());
  return (count->empty() ? 0 : std::stoi(*count)) - before;
}

// Jobs first: the schema's ON DELETE CASCADE needs foreign keys switched
// on, which older databases never had, so nothing relies on it.
Result<History::Forgotten> SqliteHistory::forget(const ForgetQuery& q) {
  auto fail = [&](const std::string& why) -> Result<Forgotten> {
    (void)db_.exec("ROLLBACK");
    return Error{fmt::format("cannot remove builds from history database {}: {}", path_, why)};
  };
  const std::string where = q.id ? "id = ?1" : q.started_before ? "start_unix < ?1" : "1";
  auto bind = [&](sql::Stmt& st) {
    if (q.id) st.bind(1, *q.id);
    else if (q.started_before) st.bind(1, *q.started_before);
  };
  if (auto s = db_.exec("BEGIN IMMEDIATE"); !s) return fail(s.error());
  Forgotten out;
  auto jobs = db_.prepare("DELETE FROM jobs WHERE build_id IN (SELECT id FROM builds WHERE " + where + ")");
  if (!jobs) return fail(jobs.error());
  bind(*jobs);
  if (auto s = jobs->run(); !s) return fail(s.error());
  out.jobs = db_.changes();
  auto builds = db_.prepare("DELETE FROM builds WHERE " + where);
  if (!builds) return fail(builds.error());
  bind(*builds);
  if (auto s = builds->run(); !s) return fail(s.error());
  out.builds = db_.changes();
  auto left = db_.query_text("SELECT count(*) FROM builds");
  if (!left) return fail(left.error());
  out.builds_left = left->empty() ? 0 : std::stoi(*left);
  if (auto s = db_.exec("COMMIT"); !s) return fail(s.error());
  return out;
}

}  // namespace memgate
