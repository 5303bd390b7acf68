#include "history/schema.hpp"

#include <string>

#include <fmt/core.h>

namespace memgate {
namespace {

// v1: builds and their jobs. Figures are bytes (INTEGER) and seconds
// (REAL); nested lists are JSON text (see codec.hpp).
constexpr std::string_view kV1 = R"sql(
CREATE TABLE builds (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  cwd            TEXT    NOT NULL,
  command        TEXT    NOT NULL,
  start_unix     REAL    NOT NULL,
  end_unix       REAL    NOT NULL,
  exit_status    INTEGER NOT NULL,
  capacity_bytes INTEGER NOT NULL,
  budget_bytes   INTEGER NOT NULL,
  slots          INTEGER NOT NULL,
  peak_bytes     INTEGER NOT NULL,
  job_count      INTEGER NOT NULL,
  wait_s         REAL    NOT NULL,
  counters       TEXT    NOT NULL,
  memory         TEXT    NOT NULL,
  events         TEXT    NOT NULL
);
CREATE INDEX builds_cwd_command ON builds (cwd, command);
CREATE TABLE jobs (
  build_id                   INTEGER NOT NULL REFERENCES builds (id) ON DELETE CASCADE,
  seq                        INTEGER NOT NULL,
  identity                   TEXT    NOT NULL,
  tool                       TEXT    NOT NULL,
  klass                      TEXT    NOT NULL,
  stem                       TEXT    NOT NULL,
  cpu_weight                 INTEGER NOT NULL,
  argv_digest                TEXT    NOT NULL,
  cwd                        TEXT    NOT NULL,
  submit_s                   REAL,
  start_s                    REAL,
  end_s                      REAL,
  wait_s                     REAL,
  frozen_s                   REAL,
  cpu_s                      REAL,
  peak_bytes                 INTEGER,
  predicted_peak_bytes       INTEGER,
  predicted_wall_s           REAL,
  predicted_cpu_s            REAL,
  predicted_peak_over_frac   REAL,
  predicted_after_peak_bytes INTEGER,
  predicted_confidence       REAL,
  predicted_source           TEXT,
  t_peak_s                   REAL,
  peak_over_frac             REAL,
  after_peak_bytes           INTEGER,
  exit_status                INTEGER,
  attempts                   INTEGER,
  attempt_log                TEXT,
  profile                    TEXT,
  PRIMARY KEY (build_id, seq)
);
CREATE INDEX jobs_identity ON jobs (identity);
CREATE INDEX jobs_klass ON jobs (klass);
)sql";

// v2: where each job ran: "local", "remote" (the build's own
// launcher sent it to a distributed engine), "offloaded" (memgate did),
// and the engine. Rows of older builds read as local.
constexpr std::string_view kV2 = R"sql(
ALTER TABLE jobs ADD COLUMN placement TEXT NOT NULL DEFAULT 'local';
ALTER TABLE jobs ADD COLUMN engine    TEXT NOT NULL DEFAULT '';
)sql";

// v3: profiles imported from other machines (`history import`), one per
// identity; a later import of an identity replaces it.
constexpr std::string_view kV3 = R"sql(
CREATE TABLE imported (
  identity       TEXT    PRIMARY KEY,
  tool           TEXT    NOT NULL,
  klass          TEXT    NOT NULL,
  stem           TEXT    NOT NULL,
  cpu_weight     INTEGER NOT NULL,
  peak_bytes     INTEGER NOT NULL,
  wall_s         REAL    NOT NULL,
  cpu_s          REAL    NOT NULL,
  peak_over_frac REAL    NOT NULL,
  after_peak_bytes INTEGER NOT NULL,
  runs           INTEGER NOT NULL,
  imported_unix  REAL    NOT NULL
);
)sql";

// v4: an imported profile's future-max envelope (core/job.hpp Envelope),
// its fractions comma-separated; '' (profiles imported before) reads as
// the step of peak_over_frac and after_peak_bytes.
constexpr std::string_view kV4 = R"sql(
ALTER TABLE imported ADD COLUMN envelope TEXT NOT NULL DEFAULT '';
)sql";

// v5: what each build was (core/job_class.hpp's classify_build: build,
// configure, relink, empty; '' for older rows, read as a build) and the
// usable cores of the machine it ran on (0: not recorded), which plan
// reads a build against whatever --jobs it had.
constexpr std::string_view kV5 = R"sql(
ALTER TABLE builds ADD COLUMN kind  TEXT    NOT NULL DEFAULT '';
ALTER TABLE builds ADD COLUMN cores INTEGER NOT NULL DEFAULT 0;
)sql";

// v6: an imported profile's fall (Envelope::fall_x; -1 for none), from
// which a job predicted from it is read once its memory has fallen too.
constexpr std::string_view kV6 = R"sql(
ALTER TABLE imported ADD COLUMN fall_x REAL NOT NULL DEFAULT -1;
)sql";

// Negative versions are refused here: memgate never writes one, and the
// migrations below index their list by it.
Result<int> user_version(sql::Db& db) {
  auto v = db.query_text("PRAGMA user_version");
  if (!v) return Error{v.error()};
  int n = v->empty() ? 0 : std::stoi(*v);
  if (n < 0) return Error{fmt::format("schema version {} was not written by memgate", n)};
  return n;
}

}  // namespace

const std::vector<std::string_view>& history_migrations() {
  static const std::vector<std::string_view> list = {kV1, kV2, kV3, kV4, kV5, kV6};
  return list;
}

int history_schema_version() { return static_cast<int>(history_migrations().size()); }

Status migrate_history(sql::Db& db) {
  const int target = history_schema_version();
  auto v = user_version(db);
  if (!v) return Error{v.error()};
  if (*v == target) return ok_status();
  if (*v > target)
    return Error{fmt::format("schema version {} is newer than this memgate understands ({})", *v, target)};
  if (auto s = db.exec("BEGIN IMMEDIATE"); !s) return s;
  // Someone may have migrated while we waited for the lock.
  v = user_version(db);
  Status result = v ? ok_status() : Status(Error{v.error()});
  for (int i = v ? *v : target; result && i < target; ++i) {
    result = db.exec(history_migrations()[static_cast<size_t>(i)]);
    if (result) result = db.exec(fmt::format("PRAGMA user_version = {}", i + 1));
  }
  if (!result) {
    (void)db.exec("ROLLBACK");
    return result;
  }
  return db.exec("COMMIT");
}

}  // namespace memgate
