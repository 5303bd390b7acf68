// What a memgate that died (SIGKILL, a crash) leaves in the cgroup tree:
// memgate-<pid> cgroups whose pid is no longer a running memgate, perhaps
// with frozen jobs inside. The next `memgate run` and `memgate doctor
// --kill-stale` find them, thaw them, end what is left in them and remove
// them, so no build stays frozen for ever and no limit lingers.
//
// Where they are: beside the cgroup memgate is in (v1: in the memory and
// the freezer hierarchy; v2: beside memgate-leaf, in its parent, when
// memgate is in the leaf). A memgate in another cgroup leaves them
// elsewhere; a memgate run from there cleans them up.
//
// Whose they are: a live memgate holds an flock on each directory of its
// memgate-<pid> cgroup for its whole run (OwnerLock), and the kernel drops
// it when the process ends, however it ends. So a held lock means a live
// run, wherever it was started: the pid alone cannot tell, since from
// another pid namespace (a container, `unshare --pid`) a live memgate's pid
// is invisible or names another process, and on v1 the freezer hierarchy
// is often shared by every run on the machine. A cgroup counts as stale
// only when nobody holds its lock AND its pid is gone (the second keeps
// the cgroups of memgates too old to take the lock).
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

#include "platform/cgroup.hpp"
#include "util/trusted_dir.hpp"

namespace memgate::platform {

class OwnerLock {
 public:
  OwnerLock() = default;
  // Locks every directory of `cg` (memory and, on v1, freezer), held until
  // this object goes. A directory that cannot be locked is left out: its
  // cgroup is then judged by its pid alone, as before locks.
  static OwnerLock take(const Cgroup& cg);
  std::size_t held() const { return fds_.size(); }

 private:
  std::vector<UniqueFd> fds_;
};

// Whether some open file other than ours holds the owner lock of `dir`
// (false when it cannot be opened: gone, or not a directory).
bool owner_lock_held(const std::string& dir);

struct StaleCgroup {
  pid_t pid = 0;                // the memgate that made it
  Cgroup cgroup;                // memory (and v1 freezer) dirs
  std::vector<pid_t> processes; // still inside it
};

// Whether any process has this pid. A memgate-<pid> cgroup counts as
// stale only when its pid is gone: a memgate under another name, or one
// whose pid was reused, is left alone (a reused pid only delays the
// clean-up; killing a live build would be far worse).
bool pid_exists(pid_t pid, const std::string& proc_root = "/proc");

// memgate-<pid> directories beside our own cgroups that no one holds the
// owner lock of and whose pid fails `alive`.
std::vector<StaleCgroup> find_stale_cgroups(const CgroupLayout& layout,
                                            const std::function<bool(pid_t)>& alive = [](pid_t p) {
                                              return pid_exists(p);
                                            });

// Thaws, kills what is inside, removes (and, on v2, undoes the leaf move
// when it was the last). The error names what could not be removed.
Status clean_stale_cgroup(const StaleCgroup& stale);

}  // namespace memgate::platform
