// What a compiler command line says about the job it starts: the tool, a
// stable identity, its class for online learning, and its CPU weight.
#pragma once

#include <string>
#include <vector>

#include "core/job.hpp"

namespace memgate {

struct CommandInfo {
  JobKey key;                      // tool, identity, klass, stem, cpu_weight
  std::string output;              // -o argument as given, "" if none
  std::vector<std::string> archs;  // normalised target archs, e.g. {"sm_80", "sm_90"}
};

// `argv[0]` is the program as invoked (a path or a bare name); `cwd` is
// the directory it runs in. Never fails: unknown shapes still get a usable
// identity.
CommandInfo analyze_command(const std::vector<std::string>& argv, const std::string& cwd);

}  // namespace memgate
