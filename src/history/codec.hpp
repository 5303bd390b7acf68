// The JSON columns of the history database: small nested lists that are
// always read and written whole (counters, memory series, events, attempt
// logs, job profiles). Decoding is forgiving: a malformed value decodes
// as empty rather than failing a whole build's load.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/job.hpp"

namespace memgate::codec {

// {"name": value, ...}; unknown names are dropped.
std::string encode_counters(const Counters& counters);
Counters decode_counters(const std::string& json);

// [[t_s, bytes], ...]
std::string encode_series(const std::vector<MemSample>& series);
std::vector<MemSample> decode_series(const std::string& json);

// [{"t_s", "kind", "job", "reason"}, ...]; events of an unknown kind are dropped.
std::string encode_events(const std::vector<BuildEvent>& events);
std::vector<BuildEvent> decode_events(const std::string& json);

// [{"start_s", "end_s", "outcome", "peak_bytes"}, ...]; an unknown outcome reads as "lost".
std::string encode_attempts(const std::vector<Attempt>& attempts);
std::vector<Attempt> decode_attempts(const std::string& json);

}  // namespace memgate::codec
