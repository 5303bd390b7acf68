// The history database's schema, as an ordered list of migrations.
// PRAGMA user_version holds how many have been applied; a new version is
// one more entry at the end of the list, never an edit of an old one.
#pragma once

#include <string_view>
#include <vector>

#include "history/sqlite.hpp"
#include "util/result.hpp"

namespace memgate {

// Migration i takes the schema from version i to version i + 1.
const std::vector<std::string_view>& history_migrations();

// The version this memgate writes.
int history_schema_version();

// Brings the schema up to date inside one BEGIN IMMEDIATE transaction, so
// that two memgates opening a new file at once migrate it once. A file
// from a newer memgate is an error (it is left alone).
Status migrate_history(sql::Db& db);

}  // namespace memgate
