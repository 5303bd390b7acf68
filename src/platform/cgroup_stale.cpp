#include "platform/cgroup_stale.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>

#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstring>
#include <map>
#include <thread>

#include "platform/cgroup_v2.hpp"
#include "platform/proc.hpp"
#include "util/fs.hpp"
#include "util/text.hpp"

namespace memgate::platform {

namespace {

constexpr std::string_view kPrefix = "memgate-";

// memgate-<pid> directories directly in `dir`, by pid.
std::map<pid_t, std::string> memgate_dirs(const std::string& dir) {
  std::map<pid_t, std::string> out;
  if (dir.empty()) return out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (e->d_type != DT_DIR || !name.starts_with(kPrefix)) continue;
    std::string_view num = name.substr(kPrefix.size());
    pid_t pid = 0;
    auto [end, ec] = std::from_chars(num.data(), num.data() + num.size(), pid);
    if (ec != std::errc() || end != num.data() + num.size() || pid <= 0) continue;  // memgate-leaf, memgate-test-...
    out[pid] = join_path(dir, std::string(name));
  }
  ::closedir(d);
  return out;
}

// Where memgate-<pid> cgroups of memgates started from our cgroup live.
std::string parent_of_ours(const std::string& own) {
  if (base_name(own) != kLeafName) return own;
  auto slash = own.rfind('/');
  return slash == std::string::npos ? own : own.substr(0, slash);
}

}  // namespace

bool pid_exists(pid_t pid, const std::string& proc_root) { return read_proc_stat(pid, proc_root).has_value(); }

namespace {

UniqueFd open_dir(const std::string& dir) {
  return UniqueFd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
}

// A probe (owner_lock_held, from a doctor or another run) holds the lock
// for microseconds, so a few short retries get past it; never a blocking
// wait, which anyone who can open the directory could make last for ever.
bool lock_exclusive(int fd) {
  for (int tries = 0; tries < 50; ++tries) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return true;
    if (errno != EWOULDBLOCK) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return false;
}

}  // namespace

OwnerLock OwnerLock::take(const Cgroup& cg) {
  OwnerLock lock;
  std::vector<std::string> dirs{cg.memory_dir()};
  if (cg.freezer_dir() != cg.memory_dir()) dirs.push_back(cg.freezer_dir());  // v2: one dir
  for (const auto& dir : dirs) {
    if (dir.empty()) continue;
    UniqueFd fd = open_dir(dir);
    if (fd && lock_exclusive(fd.get())) lock.fds_.push_back(std::move(fd));
  }
  return lock;
}

bool owner_lock_held(const std::string& dir) {
  if (dir.empty()) return false;
  UniqueFd fd = open_dir(dir);
  if (!fd) return false;
  // Shared, and dropped at once (closing the fd releases it): a probe, not
  // a claim, so two doctors probing together do not see each other.
  return ::flock(fd.get(), LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
}

std::vector<StaleCgroup> find_stale_cgroups(const CgroupLayout& layout, const std::function<bool(pid_t)>& alive) {
  std::vector<StaleCgroup> out;
  if (layout.version == CgroupVersion::none) return out;
  std::map<pid_t, std::string> mem, frz;
  if (layout.version == CgroupVersion::v1) {
    mem = memgate_dirs(layout.memory_dir);
    frz = memgate_dirs(layout.freezer_dir);
  } else {
    mem = memgate_dirs(parent_of_ours(layout.memory_dir));
  }
  for (const auto& [pid, dir] : frz) mem.try_emplace(pid, "");  // a freezer cgroup without its memory twin
  for (const auto& [pid, dir] : mem) {
    auto f = frz.find(pid);
    std::string freezer = f == frz.end() ? "" : f->second;
    if (owner_lock_held(dir) || owner_lock_held(freezer) || alive(pid)) continue;
    StaleCgroup s;
    s.pid = pid;
    s.cgroup = Cgroup::open(layout.version, dir, freezer);
    s.processes = s.cgroup.all_processes();
    out.push_back(std::move(s));
  }
  return out;
}

Status clean_stale_cgroup(const StaleCgroup& s) {
  s.cgroup.thaw_all();
  (void)s.cgroup.kill_all();
  s.cgroup.thaw_all();  // a v1 task frozen again mid-kill cannot die
  auto st = s.cgroup.remove();
  if (!st) return st;
  if (s.cgroup.version() == CgroupVersion::v2) {
    std::string base = s.cgroup.memory_dir().substr(0, s.cgroup.memory_dir().rfind('/'));
    if (path_exists(join_path(base, kLeafName))) return release_v2_base(base);
  }
  return ok_status();
}

}  // namespace memgate::platform
