// Finding our own cgroups, and the memory limit that really binds us.
#include <algorithm>

#include "platform/cgroup.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"

namespace memgate::platform {

namespace {

bool has(const std::vector<std::string>& v, std::string_view x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// Is `path` equal to `root` or below it? Both are cgroup paths ("/a/b").
bool is_under(std::string_view path, std::string_view root) {
  if (root == "/" || path == root) return true;
  return path.size() > root.size() && path.substr(0, root.size()) == root && path[root.size()] == '/';
}

// The directory of cgroup `path` inside mount `m`. The mount may show only a
// subtree (m.root, e.g. a container's bind mount of /docker/ID); paths
// outside it cannot be reached and fall back to the mount point itself.
std::string dir_in_mount(const CgroupMount& m, const std::string& path, const std::string& fs_prefix) {
  std::string base = fs_prefix + m.mount_point;
  if (!is_under(path, m.root) || path.find("/..") != std::string::npos) return base;
  std::string_view rel(path);
  if (m.root != "/") rel.remove_prefix(m.root.size());
  return join_path(base, rel);
}

// The mount of the v1 hierarchy carrying `controller`, preferring one that
// shows the part of the tree where `path` lies.
const CgroupMount* v1_mount(const std::vector<CgroupMount>& mounts, std::string_view controller,
                            const std::string& path) {
  const CgroupMount* any = nullptr;
  for (const auto& m : mounts) {
    if (m.version != CgroupVersion::v1 || !has(m.controllers, controller)) continue;
    if (is_under(path, m.root)) return &m;
    if (!any) any = &m;
  }
  return any;
}

const CgroupMembership* membership(const std::vector<CgroupMembership>& all, std::string_view controller) {
  for (const auto& m : all) {
    if (controller.empty() ? m.hierarchy_id == 0 : has(m.controllers, controller)) return &m;
  }
  return nullptr;
}

// v1: fills *dir and *root for `controller`; false if it is not mounted.
bool find_v1(const std::vector<CgroupMembership>& cg, const std::vector<CgroupMount>& mounts,
             std::string_view controller, const std::string& fs_prefix, std::string* dir, std::string* root) {
  const auto* mem = membership(cg, controller);
  if (!mem) return false;
  const auto* mount = v1_mount(mounts, controller, mem->path);
  if (!mount) return false;
  *dir = dir_in_mount(*mount, mem->path, fs_prefix);
  *root = fs_prefix + mount->mount_point;
  return true;
}

}  // namespace

CgroupLayout detect_cgroups(std::string_view proc_self_cgroup, std::string_view mountinfo,
                            const std::string& fs_prefix) {
  CgroupLayout layout;
  auto cg = parse_proc_cgroup(proc_self_cgroup);
  auto mounts = parse_cgroup_mounts(mountinfo);
  if (!cg || !mounts) return layout;

  std::string v2_dir, v2_root;
  std::vector<std::string> v2_controllers;
  const auto* unified = membership(*cg, "");
  for (const auto& m : *mounts) {
    if (m.version != CgroupVersion::v2 || !unified) continue;
    v2_dir = dir_in_mount(m, unified->path, fs_prefix);
    v2_root = fs_prefix + m.mount_point;
    v2_controllers = parse_controllers(read_file(join_path(v2_root, "cgroup.controllers")).value_or(""));
    break;
  }

  if (find_v1(*cg, *mounts, "memory", fs_prefix, &layout.memory_dir, &layout.memory_root)) {
    layout.version = CgroupVersion::v1;
    find_v1(*cg, *mounts, "freezer", fs_prefix, &layout.freezer_dir, &layout.freezer_root);
  } else if (!v2_dir.empty() && has(v2_controllers, "memory")) {
    layout.version = CgroupVersion::v2;
    layout.memory_dir = layout.freezer_dir = v2_dir;
    layout.memory_root = layout.freezer_root = v2_root;
  }

  if (find_v1(*cg, *mounts, "cpu", fs_prefix, &layout.cpu_dir, &layout.cpu_root)) {
    layout.cpu_version = CgroupVersion::v1;
  } else if (!v2_dir.empty() && has(v2_controllers, "cpu")) {
    layout.cpu_version = CgroupVersion::v2;
    layout.cpu_dir = v2_dir;
    layout.cpu_root = v2_root;
  }
  return layout;
}

CgroupLayout detect_cgroups() {
  auto cg = read_file("/proc/self/cgroup");
  auto mi = read_file("/proc/self/mountinfo");
  if (!cg || !mi) {
    log::debug("cannot read /proc/self/cgroup or /proc/self/mountinfo; no cgroup support");
    return {};
  }
  return detect_cgroups(*cg, *mi, "");
}

std::vector<std::string> walk_up(const std::string& dir, const std::string& root) {
  auto strip = [](std::string s) {
    while (s.size() > 1 && s.back() == '/') s.pop_back();
    return s;
  };
  std::string d = strip(dir);
  std::string r = strip(root);
  std::vector<std::string> out{d};
  std::string prefix = r == "/" ? "" : r;
  if (d == r || d.size() <= prefix.size() || d.compare(0, prefix.size(), prefix) != 0 || d[prefix.size()] != '/') {
    return out;
  }
  for (;;) {
    d.resize(d.rfind('/'));
    out.push_back(d.empty() ? "/" : d);
    if (d.size() <= prefix.size()) break;
  }
  return out;
}

std::optional<MemoryLimit> effective_memory_limit(CgroupVersion version, const std::string& dir,
                                                  const std::string& root) {
  if (version == CgroupVersion::none || dir.empty()) return std::nullopt;
  std::optional<MemoryLimit> best;
  auto consider = [&](const std::optional<LimitValue>& v, const std::string& d) {
    if (v && v->bytes && (!best || *v->bytes < best->bytes)) best = MemoryLimit{*v->bytes, d};
  };
  for (const auto& d : walk_up(dir, root)) {
    if (version == CgroupVersion::v1) {
      if (auto t = read_file(join_path(d, "memory.limit_in_bytes"))) consider(parse_v1_limit(*t), d);
      continue;
    }
    for (const char* f : {"memory.max", "memory.high"}) {
      if (auto t = read_file(join_path(d, f))) consider(parse_v2_limit(*t), d);
    }
  }
  return best;
}

std::optional<MemoryLimit> effective_memory_limit(const CgroupLayout& layout) {
  return effective_memory_limit(layout.version, layout.memory_dir, layout.memory_root);
}

}  // namespace memgate::platform
