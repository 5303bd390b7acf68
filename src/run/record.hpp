// Shell-style quoting of a command line, for display and for matching the
// same command across builds in history.
#pragma once

#include <string>
#include <vector>

namespace memgate {

std::string quote_command(const std::vector<std::string>& argv);

}  // namespace memgate
