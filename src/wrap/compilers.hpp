// The C++ face of src/preload/compilers.h, the one table of what memgate
// gates: the shim names come from it, the ungated detector and the tests
// ask it, and the preload library compiles the very same functions.
#pragma once

#include <array>
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "preload/compilers.h"

namespace memgate {

enum class ToolKind { none = MG_NOT_A_TOOL, compiler = MG_COMPILER, linker = MG_LINKER, launcher = MG_LAUNCHER };

struct ToolEntry {
  std::string_view name;
  int kind;
  int flags;
};

#define MEMGATE_TOOL_ENTRY_(name, kind, flags) ToolEntry{name, kind, flags},
inline constexpr ToolEntry kToolTable[] = {MEMGATE_TOOL_TABLE(MEMGATE_TOOL_ENTRY_)};
#undef MEMGATE_TOOL_ENTRY_

namespace detail {
constexpr std::size_t shim_count() {
  std::size_t n = 0;
  for (const auto& t : kToolTable) n += (t.flags & MG_SHIM) ? 1 : 0;
  return n;
}
}  // namespace detail

// The names of the fallback PATH shims (the MG_SHIM entries): what a build
// looks up in PATH.
inline constexpr auto kShimNames = [] {
  std::array<std::string_view, detail::shim_count()> names{};
  std::size_t i = 0;
  for (const auto& t : kToolTable)
    if (t.flags & MG_SHIM) names[i++] = t.name;
  return names;
}();

// The kind of the program at `path` (only its basename counts), with
// `extra_launchers` (':'-separated, as in MEMGATE_LAUNCHERS) as launchers.
ToolKind classify_program(std::string_view path, std::string_view extra_launchers = {});

// Whether this command line is a job memgate gates: a compiler or linker,
// or a launcher followed by one (see mg_is_job).
bool is_gated_command(const std::vector<std::string>& argv, std::string_view extra_launchers = {});

}  // namespace memgate
