// Moving our cgroup's processes into a leaf so that its children can have a
// memory controller, and undoing that (see cgroup_v2.hpp).
#include "platform/cgroup_v2.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fmt/core.h>

#include "platform/cgroup_files.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"
#include "util/text.hpp"

namespace memgate::platform {

namespace {

// Processes fork while we move them; a few rounds catch the newcomers.
constexpr int kMoveRounds = 8;

std::string parent_of(const std::string& dir) {
  auto slash = dir.rfind('/');
  return slash == std::string::npos || slash == 0 ? std::string("/") : dir.substr(0, slash);
}

bool lists(const std::string& file, std::string_view controller) {
  auto names = parse_controllers(read_kernel_file(file).value_or(""));
  return std::find(names.begin(), names.end(), controller) != names.end();
}

// An exclusive flock on a cgroup directory for as long as it lives; an
// unlockable directory (a fake tree on an odd filesystem) is not fatal.
class DirLock {
 public:
  explicit DirLock(const std::string& dir) : fd_(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) {
    if (fd_ >= 0 && ::flock(fd_, LOCK_EX) != 0) log::debug("cannot lock {}: {}", dir, std::strerror(errno));
  }
  ~DirLock() {
    if (fd_ >= 0) ::close(fd_);
  }
  DirLock(const DirLock&) = delete;
  DirLock& operator=(const DirLock&) = delete;

 private:
  int fd_;
};

// Moves every process listed in from/cgroup.procs into to/. A process that
// exits meanwhile is simply gone.
void move_processes(const std::string& from, const std::string& to) {
  for (int round = 0; round < kMoveRounds; ++round) {
    auto pids = parse_cgroup_procs(read_kernel_file(join_path(from, "cgroup.procs")).value_or("")).value_or(std::vector<pid_t>{});
    if (pids.empty()) return;
    for (pid_t p : pids) (void)write_file(join_path(to, "cgroup.procs"), std::to_string(p));
  }
}

std::string mkdir_error(const std::string& dir) {
  int err = errno;
  return fmt::format("cannot create cgroup {}: {}{}", dir, std::strerror(err),
                     err == EACCES || err == EPERM ? not_delegated_hint(path_exists("/run/systemd/system")) : "");
}

// Under the lock: the leaf, every process into it, then the controllers.
// On failure the processes go back and the leaf goes away.
Status move_into_leaf(const std::string& base) {
  std::string leaf = join_path(base, kLeafName);
  if (::mkdir(leaf.c_str(), 0755) != 0 && errno != EEXIST) return Error{mkdir_error(leaf)};
  move_processes(base, leaf);
  auto st = write_file(join_path(base, "cgroup.subtree_control"), "+memory");
  if (!st) {
    move_processes(leaf, base);
    ::rmdir(leaf.c_str());
    return Error{fmt::format("cannot enable the memory controller below {} ({}); cgroup v2 allows it only in a "
                             "cgroup without processes of its own, and only with write access to it",
                             base, st.error())};
  }
  if (lists(join_path(base, "cgroup.controllers"), "cpu")) {
    (void)write_file(join_path(base, "cgroup.subtree_control"), "+cpu");  // CPU accounting only: optional
  }
  return ok_status();
}

// Is a memgate-* cgroup other than the leaf below `base`?
bool others_below(const std::string& base) {
  DIR* d = ::opendir(base.c_str());
  if (!d) return false;
  bool found = false;
  while (const dirent* e = ::readdir(d)) {
    std::string_view name(e->d_name);
    if (e->d_type == DT_DIR && name.starts_with("memgate-") && name != kLeafName) found = true;
  }
  ::closedir(d);
  return found;
}

}  // namespace

std::string not_delegated_hint(bool systemd) {
  if (!systemd) return " (the cgroup is not delegated to this user)";
  return " (the cgroup is not delegated to this user; systemd-run --user --scope -p Delegate=yes memgate run ... "
         "gives memgate one that is)";
}

Result<V2Plan> plan_v2_base(const V2Facts& f) {
  V2Plan plan;
  if (base_name(f.self) == kLeafName && f.parent_memory_enabled) {
    plan.base = parent_of(f.self);  // an earlier memgate moved us here
    plan.via_leaf = true;
    return plan;
  }
  plan.base = f.self;
  if (f.self_is_root || f.memory_enabled) return plan;
  if (!f.memory_offered) {
    return Error{fmt::format("the memory controller is not available in {} (its parent does not enable it in "
                             "cgroup.subtree_control)",
                             f.self)};
  }
  plan.move_to_leaf = true;
  plan.via_leaf = true;
  return plan;
}

Result<V2Base> prepare_v2_base(const std::string& self_dir) {
  V2Facts f;
  f.self = self_dir;
  f.self_is_root = !path_exists(join_path(self_dir, "cgroup.type"));
  f.memory_offered = lists(join_path(self_dir, "cgroup.controllers"), "memory");
  f.memory_enabled = lists(join_path(self_dir, "cgroup.subtree_control"), "memory");
  f.parent_memory_enabled = lists(join_path(parent_of(self_dir), "cgroup.subtree_control"), "memory");
  auto plan = plan_v2_base(f);
  if (!plan) return Error{plan.error()};
  V2Base base{plan->base, self_dir, plan->via_leaf};
  if (plan->via_leaf) base.own = join_path(plan->base, kLeafName);
  if (f.self_is_root && !f.memory_enabled) {
    auto st = write_file(join_path(self_dir, "cgroup.subtree_control"), "+memory");
    if (!st) return Error{fmt::format("cannot enable the memory controller below {}: {}", self_dir, st.error())};
  }
  if (!plan->move_to_leaf) return base;
  DirLock lock(plan->base);
  // Another memgate may have done it while we waited for the lock.
  if (lists(join_path(plan->base, "cgroup.subtree_control"), "memory")) return base;
  auto st = move_into_leaf(plan->base);
  if (!st) return Error{st.error()};
  log::debug("moved the processes of {} into {} to give its children a memory controller", plan->base, base.own);
  return base;
}

Status release_v2_base(const std::string& base) {
  std::string leaf = join_path(base, kLeafName);
  DirLock lock(base);
  if (others_below(base) || !path_exists(leaf)) return ok_status();
  std::string control = join_path(base, "cgroup.subtree_control");
  // Before the move this cgroup held processes, so only the move can have
  // enabled these.
  for (const char* c : {"cpu", "memory"}) {
    if (!lists(control, c)) continue;
    auto st = write_file(control, fmt::format("-{}", c));
    if (!st) return Error{fmt::format("cannot undo the move into {}: {}", leaf, st.error())};
  }
  move_processes(leaf, base);
  if (::rmdir(leaf.c_str()) != 0 && errno != ENOENT) {
    return Error{fmt::format("cannot remove cgroup {}: {}", leaf, std::strerror(errno))};
  }
  return ok_status();
}

}  // namespace memgate::platform
