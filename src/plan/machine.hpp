// The machine `memgate plan` simulates: this one unless --cores or
// --memory say otherwise. The reserve is the spec's default
// (core/capacity.hpp) unless --reserve sets it.
#pragma once

#include "plan/workload.hpp"
#include "util/size.hpp"

namespace memgate::plan {

// A whole machine with this physical memory and its default reserve.
Machine machine_with(int cores, Bytes capacity);

// This machine: the cores this process may use (affinity and CPU quota)
// and its capacity (physical memory or the memory cgroup's limit).
Machine this_machine();

}  // namespace memgate::plan
