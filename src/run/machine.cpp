#include "run/machine.hpp"

#include <cstdlib>

#include "engine/engine.hpp"
#include "platform/cpu.hpp"
#include "util/log.hpp"

namespace memgate {

Result<RunMachine> RunMachine::detect(const RunOptions& opt) {
  RunMachine m;
  m.cap = detect_capacity();
  auto budget = compute_budget(m.cap, opt.reserve, opt.memory);
  if (!budget) return Error{budget.error()};
  m.budget = *budget;
  m.slots = opt.jobs.value_or(platform::detect_cores());
  if (m.slots < 1) return Error{"--jobs must be at least 1"};
  log::debug("capacity {} ({}), reserve {} ({} rule), budget {}, {} slots", format_bytes(m.cap.capacity),
             m.cap.capacity_source, format_bytes(m.budget.reserve), m.budget.reserve_rule,
             format_bytes(m.budget.budget), m.slots);
  return m;
}

GovernorConfig governor_config(const RunMachine& machine, const RunOptions& opt) {
  GovernorConfig gc;
  gc.budget = machine.budget.budget;
  gc.hard_limit = machine.budget.capacity - machine.budget.reserve;
  gc.slots = machine.slots;
  gc.cores = platform::detect_cores();
  // Each engine's remote capacity, as its configuration says (distcc:
  // DISTCC_HOSTS). icecc's is its scheduler's to know: its jobs take
  // local slots.
  for (const std::string& name : engine_names())
    if (int n = find_engine(name)->remote_slots(std::getenv); n > 0) gc.remote_slots[name] = n;
  // --offload: at most --offload-jobs at once, else what the engine's own
  // configuration allows, else four per local slot.
  if (const Engine* engine = find_engine(opt.offload)) {
    auto remote = gc.remote_slots.find(opt.offload);
    gc.offload.engine = opt.offload;
    gc.offload.slots =
        opt.offload_jobs.value_or(remote != gc.remote_slots.end() ? remote->second : 4 * machine.slots);
    gc.offload.takes = [engine](const JobKey& key) { return engine->takes(key); };
  }
  gc.decline_after_s = opt.decline_after_s;
  if (auto policy = parse_admission_policy(opt.admission)) gc.admission = *policy;
  return gc;
}

}  // namespace memgate
