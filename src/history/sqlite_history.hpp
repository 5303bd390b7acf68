// History on an open, migrated SQLite connection. Made by History::open;
// used from one thread at a time.
#pragma once

#include <string>

#include "history/history.hpp"
#include "history/sqlite.hpp"

namespace memgate {

class SqliteHistory final : public History {
 public:
  SqliteHistory(sql::Db db, std::string path) : db_(std::move(db)), path_(std::move(path)) {}

  Result<std::int64_t> save_build(const BuildRecord& build) override;
  std::vector<BuildSummary> list_builds(int limit) override;
  std::optional<BuildRecord> load_build(std::int64_t id) override;
  std::optional<std::int64_t> last_build_id(const BuildQuery& query) override;
  std::vector<JobRecord> jobs_for_prediction(int max_builds) override;
  std::vector<JobProfile> imported_profiles() override;
  Result<int> import_profiles(const std::vector<JobProfile>& profiles) override;
  Result<Forgotten> forget(const ForgetQuery& query) override;

 private:
  Status insert_jobs(std::int64_t build_id, const std::vector<JobRecord>& jobs);
  std::vector<JobRecord> query_jobs(std::string_view sql, std::int64_t param);
  void warn_once(const std::string& what, const std::string& why);

  sql::Db db_;
  std::string path_;
  bool warned_ = false;
};

}  // namespace memgate
