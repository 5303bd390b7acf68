// A recorded build as JSON: what `memgate history --build ID --json`
// prints and `memgate run --summary-json FILE` writes, from this one
// function, so the keys of the two cannot drift apart (CI dashboards read
// either). The keys are part of the contract; see README.
#pragma once

#include <string>

#include <nlohmann/json_fwd.hpp>

#include "core/job.hpp"
#include "history/history.hpp"

namespace memgate {

// One entry of `memgate history --json`'s "builds" list.
nlohmann::json build_summary_json(const BuildSummary& summary);

// {"build": {...}, "jobs": [...]}, jobs heaviest first, indented, with a
// final newline. A build not (yet) in history (id 0) has "id": null.
std::string build_record_json(const BuildRecord& build);

}  // namespace memgate
