#include "history/profiles.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <map>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "core/job_class.hpp"
#include "predict/envelope.hpp"
#include "util/atomic_file.hpp"
#include "util/json.hpp"
#include "util/text.hpp"

namespace memgate {
namespace {

using nlohmann::json;

constexpr const char* kFormat = "memgate-profiles";
constexpr std::size_t kMaxFileBytes = 64u << 20;
// A profile is 23 values and its envelope up to 65 more: this is about
// 24,000 of them, more than any build has compile jobs. The costliest
// file within it (2 Mi empty objects) takes about 240 MiB to parse, under
// 4x the file limit.
constexpr JsonLimits kProfileLimits{16, std::size_t{1} << 21};
constexpr std::size_t kMaxText = 4096;
constexpr int kRunsPerProfile = 3;

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

bool complete(const JobRecord& j) {
  if (j.exit_status != 0 || j.peak_bytes <= 0 || j.key.identity.empty()) return false;
  if (!j.attempt_log.empty()) {
    Outcome o = j.attempt_log.back().outcome;
    if (o == Outcome::requeued || o == Outcome::oom || o == Outcome::lost) return false;
  }
  return !is_probe_klass(j.key.klass);
}

// The strict readers: a value of the wrong type is an error, not a default.
Result<std::string> text_of(const json& p, const char* key) {
  auto it = p.find(key);
  if (it == p.end() || !it->is_string()) return Error{fmt::format("'{}' is missing or not a string", key)};
  auto s = it->get<std::string>();
  if (s.empty() || s.size() > kMaxText) return Error{fmt::format("'{}' is empty or too long", key)};
  return s;
}

Result<double> number_of(const json& p, const char* key, double lo, double hi) {
  auto it = p.find(key);
  if (it == p.end() || !it->is_number()) return Error{fmt::format("'{}' is missing or not a number", key)};
  double v = it->get<double>();
  if (!std::isfinite(v) || v < lo || v > hi) return Error{fmt::format("'{}' is out of range ({})", key, v)};
  return v;
}

// Version 2's envelope: 2 to 64 numbers in [0, 1]; a missing one is the
// step of the two numbers (as in version 1). With it, optionally, the
// job's fall ("fall_x"), which files written before it was added do not
// have (a reader that does not know it skips it: the version stays 2).
// The climb (Envelope::rise) is not written: it times a start on the
// recording machine's clock, which this machine's speed and contention
// bend.
Result<Envelope> envelope_of_json(const json& p, const JobProfile& out, int version) {
  auto it = p.find("envelope");
  if (version < 2 || it == p.end())
    return step_envelope(out.peak_over_frac, static_cast<double>(out.after_peak) / static_cast<double>(out.peak));
  if (!it->is_array() || it->size() < static_cast<std::size_t>(kEnvelopeMinPoints) ||
      it->size() > static_cast<std::size_t>(kEnvelopeMaxPoints))
    return Error{fmt::format("'envelope' is not a list of {} to {} numbers", kEnvelopeMinPoints, kEnvelopeMaxPoints)};
  std::vector<double> at;
  for (const auto& v : *it) {
    if (!v.is_number()) return Error{"'envelope' holds something that is not a number"};
    double x = v.get<double>();
    if (!std::isfinite(x) || x < 0 || x > 1) return Error{fmt::format("'envelope' value {} is not in [0, 1]", x)};
    at.push_back(x);
  }
  double fall_x = -1;
  if (p.contains("fall_x")) {
    auto v = number_of(p, "fall_x", 0, 1);
    if (!v) return Error{v.error()};
    fall_x = *v;
  }
  return sanitized_envelope(at, fall_x);
}

Result<JobProfile> decode_one(const json& p, PredictionSource origin, int version) {
  if (!p.is_object()) return Error{"not an object"};
  JobProfile out;
  out.origin = origin;
  std::string err;
  auto text = [&](const char* key, std::string* to) {
    if (!err.empty()) return;
    auto v = text_of(p, key);
    if (v) *to = *v;
    else err = v.error();
  };
  auto number = [&](const char* key, double lo, double hi) {
    if (!err.empty()) return 0.0;
    auto v = number_of(p, key, lo, hi);
    if (!v) err = v.error();
    return v ? *v : 0.0;
  };
  text("identity", &out.key.identity);
  text("tool", &out.key.tool);
  text("klass", &out.key.klass);
  text("stem", &out.key.stem);
  out.key.cpu_weight = static_cast<int>(number("cpu_weight", 1, 4096));
  out.peak = static_cast<Bytes>(number("peak_bytes", 1, 1e15));
  out.wall_s = number("wall_s", 0, 1e7);
  out.cpu_s = number("cpu_s", 0, 1e9);
  out.peak_over_frac = number("peak_over_frac", 0, 1);
  out.after_peak = std::min(out.peak, static_cast<Bytes>(number("after_peak_bytes", 0, 1e15)));
  out.runs = static_cast<int>(number("runs", 1, 1e9));
  if (!err.empty()) return Error{err};
  auto envelope = envelope_of_json(p, out, version);
  if (!envelope) return Error{envelope.error()};
  out.envelope = std::move(*envelope);
  return out;
}

}  // namespace

std::vector<JobProfile> summarize_profiles(const std::vector<JobRecord>& jobs) {
  std::map<std::string, std::vector<const JobRecord*>> newest_first;
  for (auto it = jobs.rbegin(); it != jobs.rend(); ++it) {
    if (!complete(*it)) continue;
    auto& runs = newest_first[it->key.identity];
    if (runs.size() < kRunsPerProfile) runs.push_back(&*it);
  }
  std::vector<JobProfile> out;
  for (const auto& [identity, runs] : newest_first) {
    const JobRecord& newest = *runs.front();
    JobProfile p;
    p.key = newest.key;
    std::vector<double> walls, cpus;
    std::vector<Envelope> envelopes;
    double pof = 0;
    for (const JobRecord* r : runs) {
      // The profile is the last attempt's, t from its start.
      const double attempt_s =
          r->attempt_log.empty() ? r->wall_s() : r->attempt_log.back().end_s - r->attempt_log.back().start_s;
      Envelope e = envelope_of(r->profile, attempt_s);
      if (e.empty())
        e = step_envelope(r->peak_over_frac, static_cast<double>(r->after_peak_bytes) / static_cast<double>(r->peak_bytes));
      if (e.empty()) e.at.assign(kEnvelopePoints, 1.0);  // high to the end
      envelopes.push_back(std::move(e));
      // Peaks scale with the CPU weight (nvcc --threads) the run had.
      double scale = static_cast<double>(std::max(1, newest.key.cpu_weight)) / std::max(1, r->key.cpu_weight);
      p.peak = std::max(p.peak, static_cast<Bytes>(static_cast<double>(r->peak_bytes) * scale));
      p.after_peak = std::max(p.after_peak, static_cast<Bytes>(static_cast<double>(r->after_peak_bytes) * scale));
      pof = std::max(pof, r->peak_over_frac);  // the latest peak of the runs: released no earlier
      if (r->wall_s() > 0) walls.push_back(r->wall_s());
      if (r->cpu_s > 0) cpus.push_back(r->cpu_s);
    }
    p.peak_over_frac = pof > 0 ? std::min(pof, 1.0) : 1.0;
    p.after_peak = std::min(p.after_peak, p.peak);
    p.envelope = combine_envelopes(envelopes);
    p.wall_s = median(walls);
    p.cpu_s = median(cpus);
    p.runs = static_cast<int>(runs.size());
    p.origin = PredictionSource::history;
    out.push_back(std::move(p));
  }
  return out;
}

bool is_portable(std::string_view identity, const std::vector<std::string>& words) {
  const JobIdentity id = parse_job_identity(identity);
  if (id.names_absolute_path()) return false;
  for (const std::string& part : id.words())
    if (std::find(words.begin(), words.end(), part) != words.end()) return false;
  return true;
}

std::vector<std::string> private_words() {
  std::vector<std::string> words;
  auto add = [&](std::string_view w) {
    if (!w.empty() && w != "home" && w != "root" && w != "." && std::find(words.begin(), words.end(), w) == words.end())
      words.emplace_back(w);
  };
  for (const char* var : {"USER", "LOGNAME"})
    if (const char* v = std::getenv(var)) add(v);
  std::string home;
  if (const char* h = std::getenv("HOME")) home = h;
  if (const passwd* pw = ::getpwuid(::getuid())) {
    if (pw->pw_name) add(pw->pw_name);
    if (home.empty() && pw->pw_dir) home = pw->pw_dir;
  }
  for (std::string_view part : split(home, '/')) add(part);
  return words;
}

std::string encode_profiles(const std::vector<JobProfile>& profiles) {
  json list = json::array();
  for (const JobProfile& p : profiles) {
    Envelope e = p.envelope.empty() && p.peak > 0
                     ? step_envelope(p.peak_over_frac, static_cast<double>(p.after_peak) / static_cast<double>(p.peak))
                     : p.envelope;
    if (e.empty()) e.at.assign(kEnvelopePoints, 1.0);
    json envelope = json::array();
    // Three decimals, rounded up: never below what was learned.
    for (double v : e.at) envelope.push_back(std::min(1.0, std::ceil(v * 1000 - 1e-6) / 1000));
    json item = {{"identity", p.key.identity},
                  {"tool", p.key.tool},
                  {"klass", p.key.klass},
                  {"stem", p.key.stem},
                  {"cpu_weight", p.key.cpu_weight},
                  {"peak_bytes", p.peak},
                  {"wall_s", p.wall_s},
                  {"cpu_s", p.cpu_s},
                  {"peak_over_frac", p.peak_over_frac},
                  {"after_peak_bytes", p.after_peak},
                  {"envelope", envelope},
                  {"runs", p.runs}};
    // Rounded down: an earlier fall is read as less progress.
    if (e.fall_x >= 0) item["fall_x"] = std::floor(e.fall_x * 1000 + 1e-6) / 1000;
    list.push_back(std::move(item));
  }
  return json{{"format", kFormat}, {"version", kProfilesVersion}, {"profiles", list}}.dump(1) + "\n";
}

Result<std::vector<JobProfile>> decode_profiles(std::string_view text, PredictionSource origin) {
  auto parsed = parse_json_bounded(text, kProfileLimits);
  if (!parsed) return Error{parsed.error()};
  const json& j = *parsed;
  if (!j.is_object() || j.value("format", json()) != kFormat)
    return Error{fmt::format("not a memgate profile file (no \"format\": \"{}\")", kFormat)};
  auto version = j.find("version");
  if (version == j.end() || !version->is_number_integer())
    return Error{"the file has no format version"};
  const long long v = version->get<long long>();
  if (v < kProfilesOldestVersion || v > kProfilesVersion)
    return Error{fmt::format("format version {} is not one this memgate reads (it reads versions {} to {})",
                             version->dump(), kProfilesOldestVersion, kProfilesVersion)};
  auto list = j.find("profiles");
  if (list == j.end() || !list->is_array()) return Error{"no \"profiles\" list"};
  std::vector<JobProfile> out;
  std::map<std::string, std::size_t> seen;
  for (std::size_t i = 0; i < list->size(); ++i) {
    auto p = decode_one((*list)[i], origin, static_cast<int>(v));
    if (!p) return Error{fmt::format("profile {}: {}", i + 1, p.error())};
    if (auto it = seen.find(p->key.identity); it != seen.end()) {
      out[it->second] = std::move(*p);  // the later one wins
      continue;
    }
    seen[p->key.identity] = out.size();
    out.push_back(std::move(*p));
  }
  return out;
}

Result<std::vector<JobProfile>> read_profiles_file(const std::string& path, PredictionSource origin) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return Error{fmt::format("cannot open {}: {}", path, std::strerror(errno))};
  auto profiles = read_profiles_fd(fd, path, origin);
  ::close(fd);
  return profiles;
}

Result<std::vector<JobProfile>> read_profiles_fd(int fd, const std::string& path, PredictionSource origin) {
  struct stat st{};
  std::string text;
  std::string err;
  if (::fstat(fd, &st) != 0) err = std::strerror(errno);
  else if (!S_ISREG(st.st_mode)) err = "not a regular file";
  else if (static_cast<std::size_t>(st.st_size) > kMaxFileBytes) err = "larger than 64 MiB";
  while (err.empty()) {
    char buf[65536];
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) err = std::strerror(errno);
    if (n <= 0) break;
    text.append(buf, static_cast<std::size_t>(n));
    if (text.size() > kMaxFileBytes) err = "larger than 64 MiB";
  }
  if (!err.empty()) return Error{fmt::format("cannot read {}: {}", path, err)};
  auto profiles = decode_profiles(text, origin);
  if (!profiles) return Error{fmt::format("{}: {}", path, profiles.error())};
  return profiles;
}

Status write_profiles_file(const std::string& path, const std::vector<JobProfile>& profiles) {
  return write_file_atomically(path, encode_profiles(profiles));
}

}  // namespace memgate
