// Which recorded build `--build REF` means, the same for every subcommand
// (history, report, plan). REF is a build id, or "last": the newest build
// that gated jobs in this directory, else the newest that gated jobs
// anywhere (a `memgate run -- true` or an up-to-date rebuild is never
// "the last build" of anything). The choice says which build it is, so
// every command can tell the user what it drew on.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "history/history.hpp"
#include "util/result.hpp"

namespace memgate {

struct BuildChoice {
  BuildRecord build;        // loaded whole
  std::string description;  // "build #12, the last in this directory"
};

// "last", or a positive decimal id.
bool is_build_ref(std::string_view ref);

// Finds and loads the build. Errors (exit status 1): no build recorded
// yet, no such id, a malformed REF. `where` names the history file in
// messages.
Result<BuildChoice> load_build_ref(History& history, std::string_view ref, const std::string& cwd,
                                   const std::string& where);

}  // namespace memgate
