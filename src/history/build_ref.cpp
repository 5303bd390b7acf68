#include "history/build_ref.hpp"

#include <charconv>

#include <fmt/core.h>

namespace memgate {

namespace {

std::optional<std::int64_t> parse_id(std::string_view s) {
  std::int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || v <= 0) return std::nullopt;
  return v;
}

}  // namespace

bool is_build_ref(std::string_view ref) { return ref == "last" || parse_id(ref).has_value(); }

Result<BuildChoice> load_build_ref(History& h, std::string_view ref, const std::string& cwd, const std::string& where) {
  std::optional<std::int64_t> id;
  std::string description;
  if (ref != "last") {
    id = parse_id(ref);
    if (!id) return Error{fmt::format("--build wants a build id or 'last', not '{}'", ref)};
    description = fmt::format("build #{}", *id);
  } else if ((id = h.last_build_id({cwd, std::nullopt, true}))) {
    description = fmt::format("build #{}, the last in this directory", *id);
  } else if ((id = h.last_build_id({std::nullopt, std::nullopt, true}))) {
    description = fmt::format("build #{}, the last anywhere (none in {})", *id, cwd);
  } else {
    return Error{fmt::format(
        "no build with gated jobs is recorded in {} yet: run 'memgate run -- <build command>' first", where)};
  }
  auto build = h.load_build(*id);
  if (!build) return Error{fmt::format("no build #{} in {} (see 'memgate history')", *id, where)};
  return BuildChoice{std::move(*build), std::move(description)};
}

}  // namespace memgate
