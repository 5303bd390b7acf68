#include "history/codec.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "util/json.hpp"

namespace memgate::codec {
namespace {

using nlohmann::json;

// The stored lists are 2 deep; a long build's memory series has a few
// hundred thousand numbers. A damaged column beyond either is not worth
// gigabytes of parse tree (at most about 240 MiB within these).
constexpr JsonLimits kStoredLimits{8, std::size_t{1} << 21};

// nullopt-free parsing: anything unparsable is an empty value.
json parse_or_null(const std::string& text) {
  if (text.empty()) return json();
  auto j = parse_json_bounded(text, kStoredLimits);
  return j ? std::move(*j) : json();
}

// A stored number as T, if it is one and T can hold it. nlohmann's get<T>
// of a float is a plain cast, undefined beyond T's range (a damaged or
// hand-edited file may hold 1e300 where a count belongs).
template <class T>
std::optional<T> number_as(const json& v) {
  static_assert(std::is_floating_point_v<T> || std::is_signed_v<T>);
  if constexpr (std::is_floating_point_v<T>) {
    if (v.is_number()) return v.get<T>();
  } else if (v.is_number_unsigned()) {
    auto u = v.get<std::uint64_t>();
    if (u <= static_cast<std::uint64_t>(std::numeric_limits<T>::max())) return static_cast<T>(u);
  } else if (v.is_number_integer()) {
    auto i = v.get<std::int64_t>();
    if (i >= std::numeric_limits<T>::min() && i <= std::numeric_limits<T>::max()) return static_cast<T>(i);
  } else if (v.is_number_float()) {
    // [min, -min): T's range for a signed T, exact in double (max is not:
    // INT64_MAX as a double is 2^63, which does not fit).
    const double d = v.get<double>(), lo = static_cast<double>(std::numeric_limits<T>::min());
    if (d >= lo && d < -lo) return static_cast<T>(d);
  }
  return std::nullopt;
}

template <class T>
T get_or(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if constexpr (std::is_same_v<T, std::string>) {
    return it->is_string() ? it->template get<std::string>() : fallback;
  } else {
    return number_as<T>(*it).value_or(fallback);
  }
}

}  // namespace

std::string encode_counters(const Counters& counters) { return json(by_name(counters)).dump(); }

Counters decode_counters(const std::string& text) {
  Counters out;
  json j = parse_or_null(text);
  if (!j.is_object()) return out;
  for (const auto& [k, v] : j.items())
    if (auto c = parse_counter(k)) {
      if (auto n = number_as<std::int64_t>(v)) out[*c] = *n;
    }
  return out;
}

std::string encode_series(const std::vector<MemSample>& series) {
  json j = json::array();
  for (const auto& s : series) {
    if (s.cpu_s >= 0) j.push_back(json::array({s.t_s, s.bytes, s.cpu_s}));
    else j.push_back(json::array({s.t_s, s.bytes}));
  }
  return j.dump();
}

std::vector<MemSample> decode_series(const std::string& text) {
  std::vector<MemSample> out;
  json j = parse_or_null(text);
  if (!j.is_array()) return out;
  for (const auto& p : j) {
    // [t, bytes], or [t, bytes, cpu] for a point on the job's CPU clock.
    if (!p.is_array() || p.size() < 2 || p.size() > 3) continue;
    auto t = number_as<double>(p[0]);
    auto bytes = number_as<Bytes>(p[1]);
    if (!t || !bytes) continue;
    double cpu = -1;
    if (p.size() == 3) {
      auto c = number_as<double>(p[2]);
      if (!c || !std::isfinite(*c) || *c < 0) continue;
      cpu = *c;
    }
    out.push_back({*t, *bytes, cpu});
  }
  return out;
}

std::string encode_events(const std::vector<BuildEvent>& events) {
  json j = json::array();
  for (const auto& e : events) j.push_back({{"t_s", e.t_s}, {"kind", name(e.kind)}, {"job", e.job}, {"reason", e.reason}});
  return j.dump();
}

std::vector<BuildEvent> decode_events(const std::string& text) {
  std::vector<BuildEvent> out;
  json j = parse_or_null(text);
  if (!j.is_array()) return out;
  for (const auto& e : j) {
    if (!e.is_object()) continue;
    auto kind = parse_event_kind(get_or<std::string>(e, "kind", ""));
    if (!kind) continue;
    out.push_back({get_or<double>(e, "t_s", 0), *kind, get_or<int>(e, "job", -1), get_or<std::string>(e, "reason", "")});
  }
  return out;
}

std::string encode_attempts(const std::vector<Attempt>& attempts) {
  json j = json::array();
  for (const auto& a : attempts)
    j.push_back({{"start_s", a.start_s},
                 {"end_s", a.end_s},
                 {"outcome", name(a.outcome)},
                 {"peak_bytes", a.peak_bytes},
                 {"cpu_s", a.cpu_s}});
  return j.dump();
}

std::vector<Attempt> decode_attempts(const std::string& text) {
  std::vector<Attempt> out;
  json j = parse_or_null(text);
  if (!j.is_array()) return out;
  for (const auto& a : j) {
    if (!a.is_object()) continue;
    out.push_back({get_or<double>(a, "start_s", 0), get_or<double>(a, "end_s", 0),
                   parse_outcome(get_or<std::string>(a, "outcome", "")).value_or(Outcome::lost),
                   get_or<Bytes>(a, "peak_bytes", 0), get_or<double>(a, "cpu_s", 0)});
  }
  return out;
}

}  // namespace memgate::codec
