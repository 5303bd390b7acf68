// The bounded JSON parser (src/util/json.hpp) that every JSON input memgate
// reads goes through (the wire, profile files, the history's stored lists),
// and the profile decoder on top of it (src/history/profiles.hpp: `history
// import`, `run --prior`).
//
// Input: byte 0 picks the limits: depth 1 + (bits 0-2), values 1 << (bits
// 3-7); then the text. Small limits make the fuzzer cross them often. What
// it checks:
// - against a reference that counts the same text's SAX events with no
//   limit: a parse that succeeds is valid and within both limits (and is
//   what an unlimited parse gives); one refused for depth or size really
//   crosses that limit before any syntax error; one refused as invalid
//   has a syntax error before it crosses either;
// - decode_profiles (with the real limits) returns profiles or an error,
//   and whatever it accepts survives encode -> decode unchanged.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "fuzz_input.hpp"
#include "history/profiles.hpp"
#include "util/json.hpp"

using namespace memgate;
using nlohmann::json;

namespace {

// The reference: nlohmann's SAX events counted with no limit, up to the
// first syntax error (what the text holds before it).
struct Reference {
  int depth = 0, max_depth = 0;
  std::size_t values = 0;
  bool valid = true;

  bool value() { return ++values, true; }
  bool null() { return value(); }
  bool boolean(bool) { return value(); }
  bool number_integer(json::number_integer_t) { return value(); }
  bool number_unsigned(json::number_unsigned_t) { return value(); }
  bool number_float(json::number_float_t, const json::string_t&) { return value(); }
  bool string(json::string_t&) { return value(); }
  bool binary(json::binary_t&) { return value(); }
  bool key(json::string_t&) { return value(); }
  bool open() {
    max_depth = std::max(max_depth, ++depth);
    return value();
  }
  bool start_object(std::size_t) { return open(); }
  bool start_array(std::size_t) { return open(); }
  bool end_object() { return --depth, true; }
  bool end_array() { return --depth, true; }
  bool parse_error(std::size_t, const std::string&, const json::exception&) { return valid = false; }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0 || size > 64 * 1024) return 0;
  const JsonLimits limits{1 + (data[0] & 7), std::size_t{1} << (data[0] >> 3)};
  std::string_view text = fuzz::as_text(data + 1, size - 1);

  auto bounded = parse_json_bounded(text, limits);
  Reference ref;
  json::sax_parse(text.begin(), text.end(), &ref);
  const bool too_deep = ref.max_depth > limits.max_depth, too_big = ref.values > limits.max_values;
  if (bounded) {
    FUZZ_CHECK(ref.valid && !too_deep && !too_big);
    json plain = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
    FUZZ_CHECK(!plain.is_discarded() && plain == *bounded);
  } else if (bounded.error().rfind("nested deeper than ", 0) == 0) {
    FUZZ_CHECK(too_deep);
  } else if (bounded.error().rfind("more than ", 0) == 0) {
    FUZZ_CHECK(too_big);
  } else {
    FUZZ_CHECK(bounded.error().rfind("not valid JSON", 0) == 0);
    FUZZ_CHECK(!ref.valid && !too_deep && !too_big);
  }

  if (auto profiles = decode_profiles(text, PredictionSource::imported)) {
    std::string again = encode_profiles(*profiles);
    auto back = decode_profiles(again, PredictionSource::imported);
    FUZZ_CHECK(back.ok());
    FUZZ_CHECK(encode_profiles(*back) == again);
  }
  return 0;
}
