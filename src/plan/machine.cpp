#include "plan/machine.hpp"

#include <algorithm>

#include "core/capacity.hpp"
#include "platform/cpu.hpp"

namespace memgate::plan {

Machine machine_with(int cores, Bytes capacity) {
  Machine m;
  m.cores = std::max(1, cores);
  m.capacity = std::max<Bytes>(0, capacity);
  m.reserve = default_reserve(compute_capacity(m.capacity, std::nullopt));  // a whole machine
  return m;
}

Machine this_machine() {
  const Capacity cap = detect_capacity();
  Machine m = machine_with(platform::detect_cores(), cap.capacity);
  m.reserve = default_reserve(cap);  // the cgroup rule where a limit binds
  return m;
}

}  // namespace memgate::plan
