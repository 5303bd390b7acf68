// Parsing JSON that someone else wrote (the wire, a profile file, the
// history's stored lists) with its memory bounded by the input's size.
//
// nlohmann's DOM costs tens of bytes per value, whatever the value: a
// 60 MB file of "[" is 60 million nested arrays and gigabytes of heap,
// and a flat list of zeros is not much better. So every input has a depth
// limit and a limit on its values (keys count as values: each is a map
// node), checked by a first pass over nlohmann's SAX interface, which
// keeps no value and only a bit per open level; only an input within
// both limits is then parsed into a DOM. That costs a second pass over
// the text, which is cheap next to building the tree.
#pragma once

#include <cstddef>
#include <string_view>

#include <nlohmann/json.hpp>

#include "util/result.hpp"

namespace memgate {

struct JsonLimits {
  int max_depth = 16;                 // objects and arrays open at once
  std::size_t max_values = 1u << 20;  // values and keys, all levels together
};

// The JSON in `text`, or why not: "not valid JSON (...)", "nested deeper
// than N levels", "more than N values".
Result<nlohmann::json> parse_json_bounded(std::string_view text, const JsonLimits& limits);

}  // namespace memgate
