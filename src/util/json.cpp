#include "util/json.hpp"

#include <fmt/core.h>

namespace memgate {
namespace {

using json = nlohmann::json;

// Counts and refuses; keeps nothing (nlohmann::json_sax's interface).
class LimitCounter {
 public:
  explicit LimitCounter(const JsonLimits& limits) : limits_(limits) {}

  bool null() { return value(); }
  bool boolean(bool) { return value(); }
  bool number_integer(json::number_integer_t) { return value(); }
  bool number_unsigned(json::number_unsigned_t) { return value(); }
  bool number_float(json::number_float_t, const json::string_t&) { return value(); }
  bool string(json::string_t&) { return value(); }
  bool binary(json::binary_t&) { return value(); }
  bool key(json::string_t&) { return value(); }
  bool start_object(std::size_t) { return open(); }
  bool start_array(std::size_t) { return open(); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }
  bool parse_error(std::size_t, const std::string&, const json::exception& e) {
    why_ = fmt::format("not valid JSON ({})", e.what());
    return false;
  }

  const std::string& why() const { return why_; }

 private:
  bool value() {
    if (++values_ <= limits_.max_values) return true;
    why_ = fmt::format("more than {} values", limits_.max_values);
    return false;
  }
  bool open() {
    if (!value()) return false;
    if (++depth_ <= limits_.max_depth) return true;
    why_ = fmt::format("nested deeper than {} levels", limits_.max_depth);
    return false;
  }
  bool close() {
    --depth_;
    return true;
  }

  JsonLimits limits_;
  std::size_t values_ = 0;
  int depth_ = 0;
  std::string why_;
};

}  // namespace

Result<json> parse_json_bounded(std::string_view text, const JsonLimits& limits) {
  LimitCounter counter(limits);
  if (!json::sax_parse(text.begin(), text.end(), &counter))
    return Error{counter.why().empty() ? std::string("not valid JSON") : counter.why()};
  json j = json::parse(text.begin(), text.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return Error{"not valid JSON"};
  return j;
}

}  // namespace memgate
