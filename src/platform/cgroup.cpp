// The Cgroup handle: create, limit, measure, freeze, kill, remove.
#include "platform/cgroup.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <thread>

#include <fmt/core.h>

#include "platform/cgroup_v2.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"

namespace memgate::platform {

namespace {

using namespace std::chrono_literals;

// The kernel needs a moment after a cgroup's last process exits before
// rmdir succeeds, and a moment between SIGKILL and exit; no event tells us
// either on v1, so these bounded polls are the only option.
constexpr auto poll_step = 10ms;
constexpr int remove_tries = 100;  // ~1 s
constexpr int kill_rounds = 200;   // ~2 s

std::optional<std::string> read(const std::string& dir, std::string_view file) {
  return read_kernel_file(join_path(dir, file));
}

// Child cgroup directories of `dir` (v1 and v2 alike show them as subdirs).
// kernfs keeps a directory's link count at 2 plus its subdirectories, so
// a cgroup without children (most job cgroups) is told by one stat, not a
// listing past all its control files. Any other count (1: a file system
// that does not keep it) lists.
std::vector<std::string> child_dirs(const std::string& dir) {
  std::vector<std::string> out;
  struct stat st {};
  if (::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_nlink == 2) return out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_type != DT_DIR || std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    out.push_back(join_path(dir, e->d_name));
  }
  ::closedir(d);
  return out;
}

Status make_dir(const std::string& path) {
  if (::mkdir(path.c_str(), 0755) == 0) return ok_status();
  return Error{fmt::format("cannot create cgroup {}: {}", path, std::strerror(errno))};
}

// rmdir `dir` after its children; ENOENT counts as done. EBUSY is tried
// again `tries` times, poll_step apart. A job's cgroup seldom has
// children, so rmdir is tried before the directory is listed (a listing
// of a cgroup reads past every control file: at 2000 jobs that was a
// tenth of removing them).
Status remove_tree(const std::string& dir, int tries = remove_tries) {
  if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return ok_status();
  for (const auto& child : child_dirs(dir)) {
    auto st = remove_tree(child, tries);
    if (!st) return st;
  }
  for (int i = 0; i < tries; ++i) {
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return ok_status();
    if (errno != EBUSY || i + 1 == tries) break;
    std::this_thread::sleep_for(poll_step);
  }
  return Error{fmt::format("cannot remove cgroup {}: {}", dir, std::strerror(errno))};
}

// v2 lets a cgroup's children have the memory controller only once the
// cgroup lists it in subtree_control.
Status enable_memory_for_children(const std::string& dir) {
  auto current = parse_controllers(read(dir, "cgroup.subtree_control").value_or(""));
  for (const auto& c : current) {
    if (c == "memory") return ok_status();
  }
  auto st = write_file(join_path(dir, "cgroup.subtree_control"), "+memory");
  if (st) return st;
  return Error{fmt::format(
      "cannot enable the memory controller below {} ({}); cgroup v2 allows that only in a cgroup "
      "that holds no processes itself, and only with write access to it",
      dir, st.error())};
}

Result<Cgroup> create_in(CgroupVersion v, const std::string& mem_parent, const std::string& frz_parent,
                         const std::string& name) {
  if (v == CgroupVersion::none || mem_parent.empty()) return Error{"no memory cgroup to create " + name + " in"};
  if (name.empty() || name.find('/') != std::string::npos || name == "." || name == "..") {
    return Error{fmt::format("invalid cgroup name '{}'", name)};
  }
  if (v == CgroupVersion::v2) {
    auto st = enable_memory_for_children(mem_parent);
    if (!st) return Error{st.error()};
  }
  std::string mem = join_path(mem_parent, name);
  auto st = make_dir(mem);
  if (!st) return Error{st.error()};
  if (v == CgroupVersion::v2) {
    if (!path_exists(join_path(mem, "memory.max"))) {
      remove_tree(mem);
      return Error{fmt::format("cgroup {} has no memory controller", mem)};
    }
    return Cgroup::open(v, mem, mem);
  }
  std::string frz;
  if (!frz_parent.empty()) {
    frz = join_path(frz_parent, name);
    if (auto fs = make_dir(frz); !fs) {
      log::debug("{}; continuing without a freezer", fs.error());
      frz.clear();
    }
  }
  return Cgroup::open(v, mem, frz);
}

// A v1 child frozen on its own stays frozen when its parent thaws, so
// every level is thawed explicitly.
void thaw_tree(const std::string& freezer_dir) {
  for (const auto& child : child_dirs(freezer_dir)) thaw_tree(child);
  auto t = read(freezer_dir, "freezer.state");
  auto s = t ? parse_freezer_state(*t) : std::nullopt;
  if (s && *s != FreezerState::thawed) (void)write_file(join_path(freezer_dir, "freezer.state"), "THAWED");
}

}  // namespace

Cgroup Cgroup::open(CgroupVersion version, std::string memory_dir, std::string freezer_dir) {
  if (version == CgroupVersion::v2 && freezer_dir.empty()) freezer_dir = memory_dir;
  return Cgroup(version, std::move(memory_dir), std::move(freezer_dir));
}

Cgroup Cgroup::self(const CgroupLayout& layout) {
  return open(layout.version, layout.memory_dir, layout.version == CgroupVersion::v1 ? layout.freezer_dir : "");
}

Result<Cgroup> Cgroup::create_under(CgroupLayout& parent, const std::string& name) {
  if (parent.version != CgroupVersion::v2 || parent.memory_dir.empty()) {
    return create_in(parent.version, parent.memory_dir, parent.version == CgroupVersion::v1 ? parent.freezer_dir : "",
                     name);
  }
  auto base = prepare_v2_base(parent.memory_dir);
  if (!base) return Error{base.error()};
  auto cg = create_in(CgroupVersion::v2, base->dir, "", name);
  if (!cg) {
    if (base->via_leaf) (void)release_v2_base(base->dir);
    return cg;
  }
  if (base->via_leaf) cg->release_base_ = base->dir;
  parent.memory_dir = parent.freezer_dir = base->own;
  return cg;
}

void Cgroup::thaw_all() const {
  if (version_ == CgroupVersion::v1) {
    if (!freezer_dir_.empty()) thaw_tree(freezer_dir_);
    return;
  }
  if (version_ != CgroupVersion::v2 || memory_dir_.empty()) return;
  std::vector<std::string> todo{memory_dir_};
  while (!todo.empty()) {
    std::string d = todo.back();
    todo.pop_back();
    if (path_exists(join_path(d, "cgroup.freeze"))) (void)write_file(join_path(d, "cgroup.freeze"), "0");
    for (auto& c : child_dirs(d)) todo.push_back(std::move(c));
  }
}

Result<Cgroup> Cgroup::create_child(const std::string& name) const {
  auto child = create_in(version_, memory_dir_, version_ == CgroupVersion::v1 ? freezer_dir_ : "", name);
  if (child && at_) {  // create_in took only a plain name
    child->at_ = at_;
    child->at_rel_ = at_rel_.empty() ? name : join_path(at_rel_, name);
  }
  return child;
}

Cgroup::OpenDir::~OpenDir() {
  if (fd >= 0) ::close(fd);
}

Cgroup Cgroup::with_open_dir() const {
  Cgroup c = *this;
  if (memory_dir_.empty()) return c;
  const int fd = ::open(memory_dir_.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return c;
  c.at_ = std::make_shared<const OpenDir>(fd);
  c.at_rel_.clear();
  return c;
}

std::optional<std::string> Cgroup::read_mem(std::string_view name) const {
  if (at_) return read_kernel_file_at(at_->fd, at_rel_.empty() ? std::string(name) : join_path(at_rel_, name));
  return read_kernel_file(mem_file(name));
}

std::vector<std::string> Cgroup::dirs() const {
  std::vector<std::string> out;
  if (!memory_dir_.empty()) out.push_back(memory_dir_);
  if (!freezer_dir_.empty() && freezer_dir_ != memory_dir_) out.push_back(freezer_dir_);
  return out;
}

std::string Cgroup::mem_file(std::string_view name) const { return join_path(memory_dir_, name); }

Status Cgroup::remove() const { return remove_trying(remove_tries); }

Status Cgroup::remove_now() const { return remove_trying(1); }

Status Cgroup::remove_trying(int tries) const {
  std::string errors;
  for (const auto& d : dirs()) {
    auto st = remove_tree(d, tries);
    if (!st) errors += (errors.empty() ? "" : "; ") + st.error();
  }
  if (!errors.empty()) return Error{errors};
  if (!release_base_.empty()) return release_v2_base(release_base_);
  return ok_status();
}

Status Cgroup::set_memory_limit(Bytes hard, std::optional<Bytes> high) const {
  if (hard <= 0) return Error{fmt::format("invalid memory limit {} for {}", hard, memory_dir_)};
  if (version_ == CgroupVersion::v1) return write_file(mem_file("memory.limit_in_bytes"), std::to_string(hard));
  if (version_ != CgroupVersion::v2) return Error{"no memory cgroup"};
  auto st = write_file(mem_file("memory.high"), high ? std::to_string(*high) : "max");
  if (!st) return st;
  return write_file(mem_file("memory.max"), std::to_string(hard));
}

std::optional<LimitValue> Cgroup::memory_limit() const {
  if (version_ == CgroupVersion::v1) {
    auto t = read_kernel_file(mem_file("memory.limit_in_bytes"));
    return t ? parse_v1_limit(*t) : std::nullopt;
  }
  auto t = read_kernel_file(mem_file("memory.max"));
  return t ? parse_v2_limit(*t) : std::nullopt;
}

std::optional<Bytes> Cgroup::usage() const {
  auto t = read_mem(version_ == CgroupVersion::v1 ? "memory.usage_in_bytes" : "memory.current");
  return t ? parse_bytes_file(*t) : std::nullopt;
}

std::optional<Bytes> Cgroup::peak() const {
  auto t = read_mem(version_ == CgroupVersion::v1 ? "memory.max_usage_in_bytes" : "memory.peak");
  return t ? parse_bytes_file(*t) : std::nullopt;
}

std::optional<double> Cgroup::cpu_s() const {
  if (version_ == CgroupVersion::v1) {
    auto t = read_mem("cpuacct.usage");
    return t ? parse_cpuacct_usage(*t) : std::nullopt;
  }
  auto t = read_mem("cpu.stat");
  return t ? parse_cpu_stat_usage(*t) : std::nullopt;
}

std::optional<Bytes> Cgroup::inactive_file() const {
  auto t = read_kernel_file(mem_file("memory.stat"));
  return t ? parse_inactive_file(*t, version_) : std::nullopt;
}

Status Cgroup::reset_peak() const {
  if (version_ == CgroupVersion::v1) return write_file(mem_file("memory.max_usage_in_bytes"), "0");
  return Error{"memory.peak on cgroup v2 resets only for the writer's file descriptor; use a new cgroup"};
}

std::optional<std::int64_t> Cgroup::oom_kills() const {
  if (version_ == CgroupVersion::v2) {
    auto t = read_kernel_file(mem_file("memory.events"));
    auto ev = t ? parse_memory_events(*t) : std::nullopt;
    if (!ev) return std::nullopt;
    return ev->oom_kill;
  }
  if (version_ != CgroupVersion::v1) return std::nullopt;
  auto t = read_kernel_file(mem_file("memory.oom_control"));
  auto oc = t ? parse_oom_control(*t) : std::nullopt;
  if (!oc || !oc->oom_kill) return std::nullopt;
  std::int64_t sum = *oc->oom_kill;
  for (const auto& child : child_dirs(memory_dir_)) {
    // A child that vanished meanwhile took its count with it; skip it.
    if (auto n = open(version_, child).oom_kills()) sum += *n;
  }
  return sum;
}

std::optional<bool> Cgroup::under_oom() const {
  if (version_ != CgroupVersion::v1) return std::nullopt;
  auto t = read_kernel_file(mem_file("memory.oom_control"));
  auto oc = t ? parse_oom_control(*t) : std::nullopt;
  if (!oc) return std::nullopt;
  return oc->under_oom;
}

Status Cgroup::add_process(pid_t pid) const {
  if (dirs().empty()) return Error{"no cgroup to add a process to"};
  for (const auto& d : dirs()) {
    auto st = write_file(join_path(d, "cgroup.procs"), std::to_string(pid));
    if (!st) return st;
  }
  return ok_status();
}

std::vector<pid_t> Cgroup::processes() const {
  auto t = read_mem("cgroup.procs");
  auto pids = t ? parse_cgroup_procs(*t) : std::nullopt;
  return pids.value_or(std::vector<pid_t>{});
}

std::vector<pid_t> Cgroup::all_processes() const { return all_processes_except({}); }

std::vector<pid_t> Cgroup::all_processes_except(std::string_view skip) const {
  auto out = processes();
  for (const auto& child : child_dirs(memory_dir_)) {
    if (!skip.empty() && std::string_view(child).substr(child.rfind('/') + 1).starts_with(skip)) continue;
    auto more = open(version_, child).all_processes_except(skip);
    out.insert(out.end(), more.begin(), more.end());
  }
  return out;
}

bool freezer_forced_off() {
  const char* v = std::getenv("MEMGATE_NO_FREEZER");
  return v && *v && std::string_view(v) != "0";
}

bool Cgroup::can_freeze() const {
  if (freezer_forced_off()) return false;
  if (version_ == CgroupVersion::v1) return !freezer_dir_.empty() && path_exists(join_path(freezer_dir_, "freezer.state"));
  if (version_ == CgroupVersion::v2) return path_exists(join_path(freezer_dir_, "cgroup.freeze"));
  return false;
}

Status Cgroup::freeze(bool frozen) const {
  if (version_ == CgroupVersion::v1 && !freezer_dir_.empty()) {
    return write_file(join_path(freezer_dir_, "freezer.state"), frozen ? "FROZEN" : "THAWED");
  }
  if (version_ == CgroupVersion::v2) return write_file(join_path(freezer_dir_, "cgroup.freeze"), frozen ? "1" : "0");
  return Error{fmt::format("no freezer for cgroup {}", memory_dir_)};
}

std::optional<bool> Cgroup::frozen() const {
  if (version_ == CgroupVersion::v1 && !freezer_dir_.empty()) {
    auto t = read_kernel_file(join_path(freezer_dir_, "freezer.state"));
    auto s = t ? parse_freezer_state(*t) : std::nullopt;
    if (!s) return std::nullopt;
    return *s == FreezerState::frozen;
  }
  if (version_ == CgroupVersion::v2) {
    auto t = read_kernel_file(join_path(freezer_dir_, "cgroup.events"));
    return t ? parse_events_frozen(*t) : std::nullopt;
  }
  return std::nullopt;
}

std::optional<Psi> Cgroup::pressure() const {
  if (!valid()) return std::nullopt;
  return read_psi(mem_file("memory.pressure"));
}

BuildPressure build_memory_pressure(const Cgroup* build) {
  if (build) {
    if (auto p = build->pressure()) return {p, "build cgroup"};
  }
  if (auto p = read_psi()) return {p, "machine"};
  return {};
}

Status Cgroup::kill_all() const {
  if (!valid()) return Error{"no cgroup to kill"};
  bool used_kill_file = version_ == CgroupVersion::v2 && path_exists(mem_file("cgroup.kill")) &&
                        write_file(mem_file("cgroup.kill"), "1").ok();
  size_t left = 0;
  for (int round = 0; round < kill_rounds; ++round) {
    auto pids = all_processes();
    left = pids.size();
    if (pids.empty()) return ok_status();
    // Pids come from cgroup.procs a moment ago; a pid that exited and was
    // recycled in that moment is the accepted (kernel-wide) race here.
    if (!used_kill_file || round % 20 == 19) {
      for (pid_t pid : pids) ::kill(pid, SIGKILL);
    }
    // v2 delivers fatal signals to frozen tasks; v1 does not.
    if (version_ == CgroupVersion::v1 && !freezer_dir_.empty()) thaw_tree(freezer_dir_);
    std::this_thread::sleep_for(poll_step);
  }
  return Error{fmt::format("{} process(es) in {} survived SIGKILL (stuck in the kernel?)", left, memory_dir_)};
}

}  // namespace memgate::platform
