// The one name table for each of core/job.hpp's enums: what history
// stores, JSON carries and the summary prints.
#include <algorithm>
#include <array>
#include <utility>

#include "core/job.hpp"

namespace memgate {
namespace {

template <class E, std::size_t N>
std::string_view lookup(const std::array<std::pair<E, std::string_view>, N>& table, E e) {
  for (const auto& [k, v] : table)
    if (k == e) return v;
  return "?";
}

template <class E, std::size_t N>
std::vector<E> keys(const std::array<std::pair<E, std::string_view>, N>& table) {
  std::vector<E> out;
  for (const auto& [k, v] : table) out.push_back(k);
  return out;
}

template <class E, std::size_t N>
std::optional<E> reverse(const std::array<std::pair<E, std::string_view>, N>& table, std::string_view s) {
  for (const auto& [k, v] : table)
    if (v == s) return k;
  return std::nullopt;
}

constexpr std::array<std::pair<PredictionSource, std::string_view>, 8> kSources{{
    {PredictionSource::history, "history"},
    {PredictionSource::imported, "imported"},
    {PredictionSource::prior, "prior"},
    {PredictionSource::similar, "similar"},
    {PredictionSource::build, "build"},
    {PredictionSource::profile, "profile"},
    {PredictionSource::fallback, "default"},
    {PredictionSource::profile, "measured"},  // read only: an older plan's name
}};

constexpr std::array<std::pair<Outcome, std::string_view>, 5> kOutcomes{{
    {Outcome::ok, "ok"},
    {Outcome::failed, "failed"},
    {Outcome::requeued, "requeued"},
    {Outcome::oom, "oom"},
    {Outcome::lost, "lost"},
}};

constexpr std::array<std::pair<EventKind, std::string_view>, 13> kEvents{{
    {EventKind::freeze, "freeze"},
    {EventKind::thaw, "thaw"},
    {EventKind::kill, "kill"},
    {EventKind::requeue, "requeue"},
    {EventKind::oom_kill, "oom_kill"},
    {EventKind::retry, "retry"},
    {EventKind::gave_up, "gave_up"},
    {EventKind::alone, "alone"},
    {EventKind::overshoot, "overshoot"},
    {EventKind::pressure, "pressure"},
    {EventKind::offload, "offload"},
    {EventKind::decline, "decline"},
    {EventKind::fallback, "fallback"},
}};

constexpr std::array<std::pair<Placement, std::string_view>, 3> kPlacements{{
    {Placement::local, "local"},
    {Placement::remote, "remote"},
    {Placement::offloaded, "offloaded"},
}};

constexpr std::array<std::pair<Counter, std::string_view>, 37> kCounters{{
    {Counter::submitted, "submitted"},
    {Counter::admitted, "admitted"},
    {Counter::jobs, "jobs"},
    {Counter::failed, "failed"},
    {Counter::cancelled, "cancelled"},
    {Counter::waited_for_memory, "waited_for_memory"},
    {Counter::ran_alone, "ran_alone"},
    {Counter::frozen, "frozen"},
    {Counter::thawed, "thawed"},
    {Counter::freeze_failed, "freeze_failed"},
    {Counter::requeued, "requeued"},
    {Counter::oom_killed, "oom_killed"},
    {Counter::retried, "retried"},
    {Counter::overshoot, "overshoot"},
    {Counter::wait_memory_ms, "wait_memory_ms"},
    {Counter::memory_bound_ms, "memory_bound_ms"},
    {Counter::cpu_bound_ms, "cpu_bound_ms"},
    {Counter::slots_bound_ms, "slots_bound_ms"},
    {Counter::frozen_ms, "frozen_ms"},
    {Counter::wrapper_connections, "wrapper_connections"},
    {Counter::refused_uid, "refused_uid"},
    {Counter::dropped_malformed, "dropped_malformed"},
    {Counter::dropped_idle, "dropped_idle"},
    {Counter::refused_pid, "refused_pid"},
    {Counter::unjoined, "unjoined"},
    {Counter::oom_killed_ungated, "oom_killed_ungated"},
    {Counter::ungated, "ungated"},
    {Counter::ungated_peak_bytes, "ungated_peak_bytes"},
    {Counter::other_cpu_ms, "other_cpu_ms"},
    {Counter::remote, "remote"},
    {Counter::offloaded, "offloaded"},
    {Counter::declined, "declined"},
    {Counter::fell_back, "fell_back"},
    {Counter::requeued_cpu_ms, "requeued_cpu_ms"},
    {Counter::released_mib_s, "released_mib_s"},
    {Counter::timed_starts, "timed_starts"},
    {Counter::room_starts, "room_starts"},
}};

}  // namespace

std::map<std::string, std::int64_t> by_name(const Counters& c) {
  std::map<std::string, std::int64_t> out;
  for (const auto& [k, v] : c) out.emplace(name(k), v);
  return out;
}

Counters from_names(const std::map<std::string, std::int64_t>& named) {
  Counters out;
  for (const auto& [k, v] : named)
    if (auto c = parse_counter(k)) out[*c] = v;
  return out;
}

std::string_view name(PredictionSource s) { return lookup(kSources, s); }
std::string_view name(Outcome o) { return lookup(kOutcomes, o); }
std::string_view name(EventKind k) { return lookup(kEvents, k); }
std::string_view name(Counter c) { return lookup(kCounters, c); }
std::string_view name(Placement p) { return lookup(kPlacements, p); }
std::optional<Placement> parse_placement(std::string_view s) { return reverse(kPlacements, s); }
std::optional<PredictionSource> parse_prediction_source(std::string_view s) { return reverse(kSources, s); }
std::optional<Outcome> parse_outcome(std::string_view s) { return reverse(kOutcomes, s); }
std::optional<EventKind> parse_event_kind(std::string_view s) { return reverse(kEvents, s); }
std::optional<Counter> parse_counter(std::string_view s) { return reverse(kCounters, s); }

const std::vector<Counter>& all_counters() {
  static const std::vector<Counter> all = keys(kCounters);
  return all;
}

const std::vector<EventKind>& all_event_kinds() {
  static const std::vector<EventKind> all = keys(kEvents);
  return all;
}

std::int64_t get(const Counters& c, Counter which) {
  auto it = c.find(which);
  return it == c.end() ? 0 : it->second;
}

}  // namespace memgate
