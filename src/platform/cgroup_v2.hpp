// cgroup v2's "no internal processes" rule, and how memgate lives with it.
//
// On v2 a cgroup that holds processes cannot give its children a memory
// controller (only the root may). memgate started from a login shell, a CI
// step or a container's entrypoint sits in such a cgroup, beside the shell.
// So before it creates memgate-<pid> there, memgate moves every process of
// its cgroup (itself, the shell) into one leaf child, kLeafName, and enables
// +memory (and +cpu where offered) in the cgroup's subtree_control:
//
//   <our cgroup>/                 subtree_control: memory cpu
//   ├── memgate-leaf/             the shell and memgate itself (no limit)
//   └── memgate-<pid>/            the build: limit, build/, job-*/
//
// Every memgate started from that shell later finds itself in memgate-leaf
// and uses its parent at once. The last memgate out (no memgate-* cgroup
// left beside the leaf) undoes it: controllers off, processes back, leaf
// gone. Both steps hold a flock on the cgroup's directory, so concurrent
// runs agree (tests/lib/cgroup.sh takes the same lock).
//
// The same steps work for an ordinary user in a delegated subtree (a cgroup
// the user owns, with its cgroup.procs and cgroup.subtree_control); where
// the cgroup is not delegated the first mkdir fails with EACCES, and the
// error says so.
#pragma once

#include <string>

#include "util/result.hpp"

namespace memgate::platform {

inline constexpr const char* kLeafName = "memgate-leaf";

// What is known about our own cgroup, read by prepare_v2_base.
struct V2Facts {
  std::string self;                    // our cgroup's directory
  bool self_is_root = false;           // the real root (no cgroup.type): it may hold processes
  bool memory_offered = false;         // "memory" in self's cgroup.controllers
  bool memory_enabled = false;         // "memory" in self's cgroup.subtree_control
  bool parent_memory_enabled = false;  // ...in the parent's subtree_control
};

// What to do about it (pure).
struct V2Plan {
  std::string base;           // where memgate-<pid> goes
  bool move_to_leaf = false;  // move base's processes into base/kLeafName, enable controllers
  bool via_leaf = false;      // base's processes live in its leaf: undo when the last memgate leaves
};
Result<V2Plan> plan_v2_base(const V2Facts& facts);

// What an EACCES on our own cgroup means, for the degraded: line: where
// systemd runs, how to get a delegated scope from it.
std::string not_delegated_hint(bool systemd);

// Where memgate's cgroups can be created, after doing what plan_v2_base
// says. `own` is the cgroup memgate is in afterwards.
struct V2Base {
  std::string dir;
  std::string own;
  bool via_leaf = false;
};
Result<V2Base> prepare_v2_base(const std::string& self_dir);

// The last memgate out undoes a leaf move of `base`; while another
// memgate-* cgroup is left beside the leaf, nothing happens.
Status release_v2_base(const std::string& base);

}  // namespace memgate::platform
