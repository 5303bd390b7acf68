#include "platform/proc.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <deque>
#include <limits>
#include <unordered_map>
#include <utility>

#include "platform/text.hpp"
#include "util/clock.hpp"
#include "util/fs.hpp"

namespace memgate::platform {

namespace {

std::string pid_path(const std::string& proc_root, pid_t pid, const char* file) {
  return join_path(join_path(proc_root, std::to_string(pid)), file);
}

template <class T>
std::optional<T> narrow(std::optional<std::int64_t> v) {
  if (!v || *v < 0 || *v > static_cast<std::int64_t>(std::numeric_limits<T>::max())) return std::nullopt;
  return static_cast<T>(*v);
}

}  // namespace

std::optional<ProcStat> parse_proc_stat(std::string_view text) {
  size_t open = text.find('(');
  size_t close = text.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return std::nullopt;
  ProcStat st;
  auto pid = narrow<pid_t>(text::to_int(text.substr(0, open)));
  if (!pid) return std::nullopt;
  st.pid = *pid;
  st.comm = std::string(text.substr(open + 1, close - open - 1));
  // After ")" the fields are numbered from 3 (state) as in proc(5).
  auto f = text::words(text::trim(text.substr(close + 1)));
  auto field = [&](size_t n) { return n - 3 < f.size() ? f[n - 3] : std::string_view{}; };
  if (f.size() < 22 || field(3).size() != 1) return std::nullopt;
  st.state = field(3)[0];
  auto ppid = narrow<pid_t>(text::to_int(field(4)));
  auto pgrp = narrow<pid_t>(text::to_int(field(5)));
  auto session = narrow<pid_t>(text::to_int(field(6)));
  auto utime = text::to_uint(field(14));
  auto stime = text::to_uint(field(15));
  auto cutime = text::to_uint(field(16));
  auto cstime = text::to_uint(field(17));
  auto start = text::to_uint(field(22));
  auto rss = text::to_int(field(24));
  if (!ppid || !pgrp || !session || !utime || !stime || !cutime || !cstime || !start || !rss) return std::nullopt;
  st.ppid = *ppid;
  st.pgrp = *pgrp;
  st.session = *session;
  st.utime = *utime;
  st.stime = *stime;
  st.cutime = *cutime;
  st.cstime = *cstime;
  st.starttime = *start;
  st.rss_pages = *rss;
  return st;
}

std::optional<ProcStatus> parse_proc_status(std::string_view text) {
  ProcStatus s;
  bool name = false, state = false, ppid = false, uid = false;
  for (auto line : text::lines(text)) {
    size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    auto key = line.substr(0, colon);
    auto rest = text::trim(line.substr(colon + 1));
    auto w = text::words(rest);
    if (key == "Name") {
      s.name = std::string(rest);
      name = true;
    } else if (key == "State" && !w.empty() && w[0].size() == 1) {
      s.state = w[0][0];
      state = true;
    } else if (key == "PPid") {
      auto v = narrow<pid_t>(text::to_int(rest));
      if (v) s.ppid = *v, ppid = true;
    } else if (key == "Uid" && w.size() == 4) {
      auto v = narrow<uid_t>(text::to_int(w[0]));
      if (v) s.uid = *v, uid = true;
    } else if (key == "VmRSS" && w.size() == 2 && w[1] == "kB") {
      auto kb = text::to_int(w[0]);
      if (kb && *kb >= 0 && *kb <= INT64_MAX / 1024) s.vm_rss = *kb * 1024;
    }
  }
  if (!name || !state || !ppid || !uid) return std::nullopt;
  return s;
}

std::vector<std::string> parse_cmdline(std::string_view text) {
  std::vector<std::string> out;
  if (text.empty()) return out;
  if (text.back() == '\0') text.remove_suffix(1);
  for (auto part : text::split(text, '\0')) out.emplace_back(part);
  return out;
}

std::optional<ProcStat> read_proc_stat(pid_t pid, const std::string& proc_root) {
  auto text = read_kernel_file(pid_path(proc_root, pid, "stat"));
  if (!text) return std::nullopt;
  return parse_proc_stat(*text);
}

std::optional<ProcInfo> read_process(pid_t pid, const std::string& proc_root) {
  auto st = read_proc_stat(pid, proc_root);
  auto status_text = read_kernel_file(pid_path(proc_root, pid, "status"));
  if (!st || !status_text) return std::nullopt;
  auto status = parse_proc_status(*status_text);
  if (!status) return std::nullopt;
  ProcInfo p;
  p.pid = st->pid;
  p.ppid = st->ppid;
  p.comm = st->comm;
  p.state = st->state;
  p.uid = status->uid;
  p.starttime = st->starttime;
  p.utime = st->utime;
  p.stime = st->stime;
  p.cutime = st->cutime;
  p.cstime = st->cstime;
  p.rss = status->vm_rss.value_or(0);
  return p;
}

std::optional<std::vector<std::string>> read_cmdline(pid_t pid, const std::string& proc_root) {
  auto text = read_kernel_file(pid_path(proc_root, pid, "cmdline"));
  if (!text) return std::nullopt;
  return parse_cmdline(*text);
}

std::vector<pid_t> list_pids(const std::string& proc_root) {
  std::vector<pid_t> out;
  DIR* dir = ::opendir(proc_root.c_str());
  if (!dir) return out;
  while (const dirent* e = ::readdir(dir)) {
    auto pid = narrow<pid_t>(text::to_int(e->d_name));
    if (pid && *pid > 0 && e->d_name[0] >= '0' && e->d_name[0] <= '9') out.push_back(*pid);
  }
  ::closedir(dir);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<ProcInfo> read_all_processes(const std::string& proc_root) {
  std::vector<ProcInfo> out;
  for (pid_t pid : list_pids(proc_root)) {
    if (auto p = read_process(pid, proc_root)) out.push_back(std::move(*p));
  }
  return out;
}

std::vector<pid_t> descendants(pid_t root, const std::vector<ProcInfo>& all) {
  std::unordered_multimap<pid_t, pid_t> children;
  bool present = false;
  for (const auto& p : all) {
    if (p.pid == root) present = true;
    // A self-parented entry (only ever in a damaged snapshot) would loop.
    if (p.pid != p.ppid) children.emplace(p.ppid, p.pid);
  }
  std::vector<pid_t> out;
  if (!present) return out;
  std::deque<pid_t> queue{root};
  while (!queue.empty() && out.size() <= all.size()) {  // bound guards a ppid cycle
    pid_t pid = queue.front();
    queue.pop_front();
    out.push_back(pid);
    auto [b, e] = children.equal_range(pid);
    for (auto it = b; it != e; ++it) queue.push_back(it->second);
  }
  return out;
}

std::vector<pid_t> process_tree(pid_t root, const std::string& proc_root) {
  return descendants(root, read_all_processes(proc_root));
}

Bytes tree_rss(pid_t root, const std::vector<ProcInfo>& all) {
  std::unordered_map<pid_t, Bytes> rss;
  for (const auto& p : all) rss[p.pid] = p.rss;
  Bytes sum = 0;
  for (pid_t pid : descendants(root, all)) sum += rss[pid];
  return sum;
}

Bytes tree_rss(pid_t root, const std::string& proc_root) { return tree_rss(root, read_all_processes(proc_root)); }

std::uint64_t tree_cpu_ticks(pid_t root, const std::vector<ProcInfo>& all) {
  std::unordered_map<pid_t, std::uint64_t> ticks;
  for (const auto& p : all) ticks[p.pid] = p.utime + p.stime + p.cutime + p.cstime;
  std::uint64_t sum = 0;
  for (pid_t pid : descendants(root, all)) sum += ticks[pid];
  return sum;
}

double tree_cpu_s(pid_t root, const std::string& proc_root) {
  return ticks_to_seconds(tree_cpu_ticks(root, read_all_processes(proc_root)));
}

bool descends_from(pid_t pid, pid_t ancestor, const std::string& proc_root) {
  if (pid <= 0 || ancestor <= 0) return false;
  for (int depth = 0; depth < 64; ++depth) {
    if (pid == ancestor) return true;
    auto st = read_proc_stat(pid, proc_root);
    if (!st || st->ppid <= 0 || st->ppid == pid) return false;
    pid = st->ppid;
  }
  return false;
}

ProcSnapshot::ProcSnapshot(double max_age_s, std::string proc_root)
    : max_age_s_(max_age_s), proc_root_(std::move(proc_root)) {}

const std::vector<ProcInfo>& ProcSnapshot::all() {
  const double now = monotonic_s();
  if (taken_s_ < 0 || now - taken_s_ > max_age_s_) {
    all_ = read_all_processes(proc_root_);
    taken_s_ = now;
    ++scans_;
  }
  return all_;
}

double ticks_to_seconds(std::uint64_t ticks) {
  static const long hz = ::sysconf(_SC_CLK_TCK);
  return static_cast<double>(ticks) / static_cast<double>(hz > 0 ? hz : 100);
}

}  // namespace memgate::platform
