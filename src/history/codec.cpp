#include "history/codec.hpp"

#include <nlohmann/json.hpp>

namespace memgate::codec {
namespace {

using nlohmann::json;

// nullopt-free parsing: anything unparsable is an empty value.
json parse_or_null(const std::string& text) {
  if (text.empty()) return json();
  return json::parse(text, nullptr, /*allow_exceptions=*/false);
}

template <class T>
T get_or(const json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  if constexpr (std::is_same_v<T, std::string>) {
    return it->is_string() ? it->template get<std::string>() : fallback;
  } else {
    return it->is_number() ? it->template get<T>() : fallback;
  }
}

}  // namespace

std::string encode_counters(const Counters& counters) { return json(by_name(counters)).dump(); }

Counters decode_counters(const std::string& text) {
  Counters out;
  json j = parse_or_null(text);
  if (!j.is_object()) return out;
  for (const auto& [k, v] : j.items())
    if (auto c = parse_counter(k); c && v.is_number()) out[*c] = v.get<std::int64_t>();
  return out;
}

std::string encode_series(const std::vector<MemSample>& series) {
  json j = json::array();
  for (const auto& s : series) j.push_back(json::array({s.t_s, s.bytes}));
  return j.dump();
}

std::vector<MemSample> decode_series(const std::string& text) {
  std::vector<MemSample> out;
  json j = parse_or_null(text);
  if (!j.is_array()) return out;
  for (const auto& p : j) {
    if (p.is_array() && p.size() == 2 && p[0].is_number() && p[1].is_number())
      out.push_back({p[0].get<double>(), p[1].get<Bytes>()});
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
    j.push_back({{"start_s", a.start_s}, {"end_s", a.end_s}, {"outcome", name(a.outcome)}, {"peak_bytes", a.peak_bytes}});
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
                   get_or<Bytes>(a, "peak_bytes", 0)});
  }
  return out;
}

}  // namespace memgate::codec
