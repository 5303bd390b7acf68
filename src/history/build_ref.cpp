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

// "; #14 after it was a relink, not taken by default" when a newer build
// than `chosen` was a configure step, a relink or an empty build.
std::string skipped_after(History& h, std::int64_t chosen, std::optional<std::int64_t> newest) {
  if (!newest || *newest == chosen) return "";
  auto b = h.load_build(*newest);
  if (!b) return "";
  return fmt::format(" (#{} after it was a {} step, not taken by default; --build {} takes it)", *newest,
                     b->kind, *newest);
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
  } else if ((id = h.last_build_id({cwd, std::nullopt, true, false, true}))) {
    description = fmt::format("build #{}, the last in this directory that compiled", *id);
    description += skipped_after(h, *id, h.last_build_id({cwd, std::nullopt, true}));
  } else if ((id = h.last_build_id({std::nullopt, std::nullopt, true, false, true}))) {
    description = fmt::format("build #{}, the last anywhere that compiled (none in {})", *id, cwd);
    description += skipped_after(h, *id, h.last_build_id({std::nullopt, std::nullopt, true}));
  } else if ((id = h.last_build_id({cwd, std::nullopt, true}))) {
    description = fmt::format("build #{}, the last in this directory (no build here compiled)", *id);
  } else {
    return Error{fmt::format(
        "no build with gated jobs is recorded in {} yet: run 'memgate run -- <build command>' first", where)};
  }
  auto build = h.load_build(*id);
  if (!build) return Error{fmt::format("no build #{} in {} (see 'memgate history')", *id, where)};
  return BuildChoice{std::move(*build), std::move(description)};
}

}  // namespace memgate
