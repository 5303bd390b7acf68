#include "core/build_summary.hpp"

#include <algorithm>

namespace memgate {

BuildSummary summarize_build(const BuildRecord& b) {
  BuildSummary s;
  s.id = b.id;
  s.cwd = b.cwd;
  s.command = b.command;
  s.start_unix = b.start_unix;
  s.wall_s = b.wall_s();
  if (s.wall_s <= 0)
    for (const JobRecord& j : b.jobs) s.wall_s = std::max(s.wall_s, j.end_s);
  s.exit_status = b.exit_status;
  s.peak_bytes = b.peak_bytes;
  for (const MemSample& m : b.memory) s.peak_bytes = std::max(s.peak_bytes, m.bytes);
  s.budget = b.budget;
  s.capacity = b.capacity;
  s.job_count = b.jobs.empty() ? static_cast<int>(get(b.counters, Counter::jobs)) : static_cast<int>(b.jobs.size());
  s.failed = b.jobs.empty() ? static_cast<int>(get(b.counters, Counter::failed))
                            : static_cast<int>(std::count_if(b.jobs.begin(), b.jobs.end(),
                                                             [](const JobRecord& j) { return j.exit_status != 0; }));
  // Older records have no counters: the jobs' own figures then.
  if (auto it = b.counters.find(Counter::wait_memory_ms); it != b.counters.end()) s.wait_s = it->second / 1000.0;
  else
    for (const JobRecord& j : b.jobs) s.wait_s += j.wait_s;
  if (auto it = b.counters.find(Counter::frozen_ms); it != b.counters.end()) s.frozen_s = it->second / 1000.0;
  else
    for (const JobRecord& j : b.jobs) s.frozen_s += j.frozen_s;
  return s;
}

const std::vector<Counter>& action_counters() {
  static const std::vector<Counter> actions = {Counter::frozen, Counter::requeued, Counter::retried,
                                               Counter::oom_killed, Counter::ran_alone};
  return actions;
}

bool memgate_acted(const Counters& counters) {
  const auto& a = action_counters();
  return std::any_of(a.begin(), a.end(), [&](Counter c) { return get(counters, c) > 0; });
}

}  // namespace memgate
