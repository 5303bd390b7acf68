// A build record that could not go into the history database (locked by
// another process past the short wait `memgate run` allows, or unusable)
// is not lost: it is saved to a side database beside it,
// `<db>.pending-<pid>-<n>`, and the next `memgate run` that opens the
// database merges every such file and removes it: a locked history
// never stalls a build, nor loses its record.
//
// The side file is an ordinary history database, written by the same code,
// so nothing new has to be parsed. It is created O_CREAT|O_EXCL|O_NOFOLLOW
// (mode 0600) in the database's own directory, so it has the database's
// trust and cannot be a planted link. A merge first renames it to
// `...merging-<pid>`: of two runs merging at once, one gets each file.
#pragma once

#include <string>

#include "core/job.hpp"
#include "history/history.hpp"
#include "util/result.hpp"

namespace memgate {

// Saves `build` to a new side file beside `db_path`; returns its path.
Result<std::string> save_pending(const std::string& db_path, const BuildRecord& build);

// Moves every build of every side file beside `db_path` into `history`,
// oldest file first, and removes the files that were merged whole (a file
// that could not be read is left for a later run). Returns how many builds
// were merged.
int merge_pending(History& history, const std::string& db_path);

}  // namespace memgate
