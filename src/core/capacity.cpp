#include "core/capacity.hpp"

#include <unistd.h>

#include <algorithm>

#include <fmt/core.h>

#include "platform/cgroup.hpp"
#include "platform/meminfo.hpp"
#include "util/log.hpp"

namespace memgate {

Capacity compute_capacity(Bytes physical, std::optional<std::pair<Bytes, std::string>> cgroup_limit) {
  Capacity c;
  c.physical = physical;
  c.capacity = physical;
  c.capacity_source = "physical";
  if (cgroup_limit) {
    c.cgroup_limit = cgroup_limit->first;
    c.cgroup_limit_source = cgroup_limit->second;
    if (cgroup_limit->first < physical || physical <= 0) {
      c.capacity = cgroup_limit->first;
      c.capacity_source = "cgroup";
    }
  }
  return c;
}

// The rule and why: capacity.hpp.
Bytes default_reserve(const Capacity& c) {
  if (c.capacity <= 0) return 0;
  Bytes r = c.capacity_source == "cgroup" ? std::clamp<Bytes>(c.capacity / 50, 128 * MiB, 2 * GiB)
                                          : std::clamp<Bytes>(c.capacity / 20, 512 * MiB, 8 * GiB);
  return std::min(r, c.capacity / 2);
}

Budget budget_for(Bytes capacity, Bytes reserve) {
  Budget b;
  b.capacity = capacity;
  b.reserve = reserve;
  b.budget = std::max<Bytes>(0, capacity - reserve);
  return b;
}

Result<Budget> compute_budget(const Capacity& cap, const std::optional<std::string>& reserve_flag,
                              const std::optional<std::string>& memory_flag) {
  const Bytes capacity = cap.capacity;
  if (capacity <= 0) return Error{"cannot tell how much memory this machine has"};
  Bytes reserve = default_reserve(cap);
  std::string rule = cap.capacity_source == "cgroup" ? "cgroup" : "machine";
  if (reserve_flag) {
    auto r = parse_size(*reserve_flag, capacity);
    if (!r) return Error{fmt::format("--reserve: {}", r.error())};
    reserve = *r;
    rule = "--reserve";
  }
  if (reserve >= capacity) {
    return Error{fmt::format("--reserve {} leaves nothing of the capacity ({}) for the build",
                             format_bytes(reserve), format_bytes(capacity))};
  }
  Budget b = budget_for(capacity, reserve);
  b.reserve_rule = rule;
  Bytes most = b.budget;
  if (memory_flag) {
    auto m = parse_size(*memory_flag, capacity);
    if (!m) return Error{fmt::format("--memory: {}", m.error())};
    if (*m < kMinBuildMemory)
      return Error{fmt::format("--memory {} is {}, less than the {} a build needs at least (sizes take a unit: 8G, 2560M)",
                               *memory_flag, format_bytes(*m), format_bytes(kMinBuildMemory))};
    if (*m > most) {
      log::warn("--memory {} is more than the capacity ({}) minus the reserve ({}); using {}", *memory_flag,
                format_bytes(capacity), format_bytes(b.reserve), format_bytes(most));
      b.clamped = true;
    } else {
      b.budget = *m;
    }
  }
  return b;
}

std::string memory_flag_problem(const std::string& text) {
  // Any base will do for a percentage here: its bytes are known only later.
  auto m = parse_size(text, 100 * GiB);
  if (!m) return m.error();
  if (!text.empty() && text.back() == '%') return *m > 0 ? "" : "a build needs some memory";
  if (*m < kMinBuildMemory)
    return fmt::format("{} is {}, less than the {} a build needs at least (sizes take a unit: 8G, 2560M)", text,
                       format_bytes(*m), format_bytes(kMinBuildMemory));
  return "";
}

Capacity detect_capacity() {
  Bytes physical = 0;
  if (auto mi = platform::read_meminfo(); mi && mi->total) physical = *mi->total;
  if (physical <= 0) {
    long pages = ::sysconf(_SC_PHYS_PAGES);
    long page = ::sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0) physical = static_cast<Bytes>(pages) * page;
  }
  std::optional<std::pair<Bytes, std::string>> limit;
  if (auto l = platform::effective_memory_limit(platform::detect_cgroups())) limit = std::make_pair(l->bytes, l->dir);
  return compute_capacity(physical, limit);
}

}  // namespace memgate
