// The build history: a SQLite file that remembers every build and every
// job, so the next build of the same tree is scheduled from knowledge.
// Safe for concurrent builds (WAL, busy timeout). A corrupt file is moved
// aside with a warning and recreated; history never fails a build.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/build_summary.hpp"
#include "core/job.hpp"
#include "util/result.hpp"

namespace memgate {

class History {
 public:
  // The path used when neither --history nor MEMGATE_HISTORY is given:
  // $XDG_CACHE_HOME/memgate/history.db, else ~/.cache/memgate/history.db.
  static std::string default_path();
  // --history if given, else MEMGATE_HISTORY, else default_path(). (The
  // config file's `history` reaches here as the flag: cli/config.hpp.)
  static std::string resolve_path(const std::string& flag_value);
  // Whether `path` may be used: the default location always (open()
  // creates its directories, 0700); any other path only in a directory
  // that exists, so a typo in --history is an error, not a new tree.
  static Status check_location(const std::string& path);

  // Opens or creates the database, migrating the schema; the directory
  // only for the default path (check_location). A corrupt file is renamed
  // to PATH.corrupt-<time> with a warning and a fresh one is created.
  // Errors when no usable database can be had at all (the caller then
  // runs without history) or the location is refused, which includes a
  // directory that is not trusted (util/trusted_dir.hpp: anyone but root
  // or the user could write it or one above it), since everything done
  // there is done by path, often as root.
  static Result<std::unique_ptr<History>> open(const std::string& path);
  // The same with another lock wait than the default 10 s (tests; tools
  // that would rather skip history than wait).
  static Result<std::unique_ptr<History>> open(const std::string& path, int busy_timeout_ms);

  virtual ~History() = default;

  // Stores a finished build and all its jobs in one transaction; returns its id.
  virtual Result<std::int64_t> save_build(const BuildRecord& build) = 0;

  // Newest first.
  virtual std::vector<BuildSummary> list_builds(int limit) = 0;
  // The whole build with its jobs, events and memory series.
  virtual std::optional<BuildRecord> load_build(std::int64_t id) = 0;
  // The newest build matching every field that is set.
  struct BuildQuery {
    std::optional<std::string> cwd;
    std::optional<std::string> command;
    bool with_jobs = false;  // at least one gated job
    bool succeeded = false;  // exit status 0: ran to the end
    bool full_only = false;  // a "build", not a configure step, relink or empty one (classify_build)
  };
  virtual std::optional<std::int64_t> last_build_id(const BuildQuery& query) = 0;
  // Jobs of recent builds, oldest first, for seeding the predictor. Only
  // the fields the predictor needs are guaranteed to be filled.
  virtual std::vector<JobRecord> jobs_for_prediction(int max_builds) = 0;

  // Profiles imported from other machines (`history import`), one per
  // identity, origin imported.
  virtual std::vector<JobProfile> imported_profiles() = 0;
  // Merges profiles into the imported ones in one transaction: a profile
  // replaces the imported one of its identity. Returns how many identities
  // were new. On error nothing is changed.
  virtual Result<int> import_profiles(const std::vector<JobProfile>& profiles) = 0;

  // Removes builds with all their jobs, in one transaction: the build
  // `id`, else every build that started before `started_before` (unix
  // seconds), else all of them. What the predictor learned from them goes
  // too, since it is recomputed from the remaining jobs on every run;
  // imported profiles (`history import`) are not builds and stay. Ids are
  // never reused, so a forgotten build's id never names another build.
  struct ForgetQuery {
    std::optional<std::int64_t> id;
    std::optional<double> started_before;
  };
  struct Forgotten {
    int builds = 0;
    int jobs = 0;
    int builds_left = 0;
  };
  virtual Result<Forgotten> forget(const ForgetQuery& query) = 0;
};

}  // namespace memgate
