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

// The reserve fits what it protects (README "Capacity and budget"):
//
// - Capacity is physical memory: the reserve protects the rest of the
//   machine (sshd, the desktop, other users, the kernel) from the build.
//   5% of capacity, clamped to [512 MiB, 8 GiB].
// - Capacity is a cgroup or container limit below physical memory: the
//   machine outside is already protected by that limit, which the kernel
//   enforces whatever the build does. The reserve then only has to keep
//   the confined build off its own hard limit: memory the governor does
//   not see as a job's (memgate itself, kernel memory and page cache
//   charged to the cgroup) and how far jobs grow between two measurements
//   (0.1 s, 0.02 s near the limit) before a freeze takes effect. 2% of
//   capacity, clamped to [128 MiB, 2 GiB]. The build tool, the waiting
//   wrappers and anything ungated are measured live and count against
//   the budget as overhead, and everything outside the build in that
//   cgroup is subtracted from the budget live too (Governor: E =
//   min(budget, capacity - reserve - outside)); the governor freezes at
//   92% and kills at 98.5% of E, so the margin to the hard limit is the
//   reserve plus those 8%.
//
// Either way never more than half the capacity, so a tiny container (say
// 768 MiB) still leaves its build some memory.
Bytes default_reserve(const Capacity& capacity);

struct Budget {
  Bytes capacity = 0;
  Bytes reserve = 0;
  std::string reserve_rule;  // why the reserve is what it is: "machine", "cgroup" or "--reserve"
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
Result<Budget> compute_budget(const Capacity& capacity, const std::optional<std::string>& reserve_flag,
                              const std::optional<std::string>& memory_flag);

// This machine: physical = MemTotal (sysconf if /proc/meminfo is
// unreadable), cgroup limit = the effective v1/v2 limit of our own memory
// cgroup walking up to its hierarchy's root.
Capacity detect_capacity();

}  // namespace memgate
