#include "plan/machine.hpp"

#include <algorithm>

#include "core/capacity.hpp"
#include "platform/cpu.hpp"

namespace memgate::plan {

Machine machine_with(int cores, Bytes capacity) {
  Machine m;
  m.cores = std::max(1, cores);
  m.capacity = std::max<Bytes>(0, capacity);
  m.reserve = default_reserve(m.capacity);
  return m;
}

Machine this_machine() { return machine_with(platform::detect_cores(), detect_capacity().capacity); }

}  // namespace memgate::plan
