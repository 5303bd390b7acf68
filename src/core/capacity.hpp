// How much memory a build on this machine may use (README "memgate run"). Capacity is the smaller of physical memory and the cgroup limit that
// binds us; the reserve is never handed to jobs; the budget is what is
// left, lowered further by --memory. Pure functions, plus one reader.
#pragma once

#include <optional>
#include <string>
#include <utility>

#include "util/result.hpp"
#include "util/size.hpp"

namespace memgate {

struct Capacity {
  Bytes physical = 0;                  // MemTotal
  std::optional<Bytes> cgroup_limit;   // effective limit of our memory cgroup, if any
  std::string cgroup_limit_source;     // the cgroup directory that sets it
  Bytes capacity = 0;                  // min(physical, cgroup_limit)
  std::string capacity_source;         // exactly "physical" or "cgroup"
};

// A cgroup limit equal to physical memory counts as "physical": it binds
// nothing the hardware does not already bind.
Capacity compute_capacity(Bytes physical, std::optional<std::pair<Bytes, std::string>> cgroup_limit);

// 5% of capacity, clamped to [512 MiB, 8 GiB]; but never more than half the
// capacity, so a tiny container (say 768 MiB) still leaves its build some
// memory instead of a 512 MiB reserve eating two thirds of it.
Bytes default_reserve(Bytes capacity);

struct Budget {
  Bytes capacity = 0;
  Bytes reserve = 0;
  Bytes budget = 0;      // what the build may use
  bool clamped = false;  // --memory asked for more than capacity - reserve
};

// The one rule: the build may use what the reserve leaves of the capacity
// (never negative). `run` and `plan` both come through here.
Budget budget_for(Bytes capacity, Bytes reserve);

// The least --memory may give a build. Below it the flag was almost
// certainly mistyped (`--memory 1` meant 1 GiB, not a 1-byte budget).
constexpr Bytes kMinBuildMemory = 64 * MiB;

// Why `text` cannot be a --memory value before the capacity is known ("" if
// it can): not a SIZE, or an absolute size under kMinBuildMemory. The CLI
// checks it at parse time, so a typo is a usage error (exit 2).
std::string memory_flag_problem(const std::string& text);

// `reserve_flag` and `memory_flag` are SIZEs as typed (--reserve,
// --memory); percentages are of the capacity. --memory above capacity -
// reserve is lowered to it with a warning: staying out of OOM is the
// promise, so no flag can buy into the reserve. A bad SIZE, a reserve that
// leaves nothing, or a budget under kMinBuildMemory (a percentage can
// still come to that) is an error that says which.
Result<Budget> compute_budget(Bytes capacity, const std::optional<std::string>& reserve_flag,
                              const std::optional<std::string>& memory_flag);

// This machine: physical = MemTotal (sysconf if /proc/meminfo is
// unreadable), cgroup limit = the effective v1/v2 limit of our own memory
// cgroup walking up to its hierarchy's root.
Capacity detect_capacity();

}  // namespace memgate
