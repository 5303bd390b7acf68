#include "run/ungated.hpp"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <set>
#include <string_view>

#include <fmt/core.h>

#include "platform/elf.hpp"
#include "platform/proc.hpp"
#include "util/fs.hpp"
#include "wrap/compilers.hpp"
#include "wrap/parts.hpp"
#include "wrap/wrapper.hpp"

namespace memgate {
namespace {

std::string base_of(std::string_view p) {
  auto slash = p.find_last_of('/');
  return std::string(slash == std::string_view::npos ? p : p.substr(slash + 1));
}

std::string pid_file(const std::string& root, pid_t pid, const char* name) {
  return join_path(join_path(root, std::to_string(pid)), name);
}

std::string read_link(const std::string& path) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

// VAR's value in a NUL-separated environ; *found says whether it is there.
std::string env_value(std::string_view environ, std::string_view var, bool* found) {
  *found = false;
  std::size_t i = 0;
  while (i < environ.size()) {
    std::size_t end = environ.find('\0', i);
    if (end == std::string_view::npos) end = environ.size();
    std::string_view kv = environ.substr(i, end - i);
    if (kv.size() > var.size() && kv.substr(0, var.size()) == var && kv[var.size()] == '=') {
      *found = true;
      return std::string(kv.substr(var.size() + 1));
    }
    i = end + 1;
  }
  return "";
}

bool preload_has_ours(const std::string& value) {
  for (std::size_t i = 0; i <= value.size();) {
    std::size_t end = value.find_first_of(" :", i);
    if (end == std::string::npos) end = value.size();
    if (base_of(std::string_view(value).substr(i, end - i)) == kPreloadName) return true;
    i = end + 1;
  }
  return false;
}

// The name that makes this process a job: argv[0]'s basename if that is a
// compiler, linker or a launcher in front of one, else the executable's;
// "" for anything else and for memgate's own wrapper.
std::string job_tool(const std::vector<std::string>& argv, const std::string& exe) {
  // memgate's own wrapper, as a PATH shim, is named like a compiler.
  std::string exe_base = base_of(exe);
  if (exe_base == kWrapperName || exe_base == "memgate") return "";
  if (!argv.empty() && is_gated_command(argv)) return base_of(argv[0]);
  auto kind = classify_program(exe);
  if (!exe.empty() && (kind == ToolKind::compiler || kind == ToolKind::linker)) return base_of(exe);
  return "";
}

std::string short_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    std::string part = out.empty() ? base_of(a) : a;
    if (out.size() + part.size() > 80) return out + " ...";
    out += (out.empty() ? "" : " ") + part;
  }
  return out;
}

}  // namespace

std::string ungated_reason(const std::string& environ, bool exe_static, const std::string& parent) {
  if (environ.empty()) return "its environment could not be read, so how it escaped is unknown";
  bool found = false;
  std::string disable = env_value(environ, "MEMGATE_DISABLE", &found);
  if (found && !disable.empty() && disable != "0") return "MEMGATE_DISABLE is set in its environment";
  std::string job = env_value(environ, "MEMGATE_JOB", &found);
  if (found && job == kJobFailOpen) return "its wrapper could not reach the governor and ran it ungated";
  if (found)
    return fmt::format("it carries MEMGATE_JOB={} but runs outside that job: it was started inside a job and "
                       "outlived it (a compiler cache server?)",
                       job);
  bool socket = false;
  env_value(environ, "MEMGATE_SOCKET", &socket);
  std::string preload = env_value(environ, "LD_PRELOAD", &found);
  if (!preload_has_ours(preload)) {
    if (socket)
      return fmt::format("{} started it with LD_PRELOAD removed (env -u LD_PRELOAD, a setuid program, or a tool "
                         "that clears LD_PRELOAD); keep LD_PRELOAD in its environment to gate it",
                         parent);
    return fmt::format("{} started it with none of memgate's variables in its environment", parent);
  }
  if (exe_static)
    return fmt::format("it is statically linked and {} started it without the preload library seeing the call (a "
                       "statically linked or raw-syscall caller); MEMGATE_NO_PRELOAD=1 gates it through PATH shims "
                       "if it is called by name",
                       parent);
  return fmt::format("{} started it in a way the preload library does not intercept", parent);
}

std::vector<UngatedProcess> find_ungated(const std::vector<pid_t>& build_pids, const std::vector<pid_t>& job_pids,
                                         const std::string& proc_root, std::vector<pid_t>* wrappers) {
  std::set<pid_t> in_job(job_pids.begin(), job_pids.end());
  std::vector<platform::ProcInfo> snapshot;
  for (pid_t pid : build_pids) {
    if (in_job.count(pid)) continue;
    // A wrapper still waiting to connect (past the open-file limit, there
    // can be thousands) is never a job: one readlink, not a read of its
    // stat and status. One that gave up and exec'd its compiler has that
    // compiler's executable, and is read.
    if (base_of(read_link(pid_file(proc_root, pid, "exe"))) == kWrapperName) {
      if (wrappers) wrappers->push_back(pid);
      continue;
    }
    if (auto p = platform::read_process(pid, proc_root)) snapshot.push_back(*p);
  }

  std::map<pid_t, UngatedProcess> found;
  for (const auto& p : snapshot) {
    if (p.state == 'Z' || in_job.count(p.ppid)) continue;
    UngatedProcess u;
    u.pid = p.pid;
    u.ppid = p.ppid;
    u.starttime = p.starttime;
    u.argv = platform::read_cmdline(p.pid, proc_root).value_or(std::vector<std::string>{});
    u.exe = read_link(pid_file(proc_root, p.pid, "exe"));
    u.tool = job_tool(u.argv, u.exe);
    if (u.tool.empty()) continue;
    std::string environ = read_kernel_file(pid_file(proc_root, p.pid, "environ")).value_or("");
    // Neither arguments nor environment: its memory is gone, it is exiting
    // (a compiler sccache's server had just run, seen between its exit and
    // its zombie state). It says nothing of how it started, and a compiler
    // with no arguments compiles nothing.
    if (u.argv.empty() && environ.empty()) continue;
    bool has_job = false;
    if (env_value(environ, "MEMGATE_JOB", &has_job) == kJobProbe && has_job) continue;
    auto facts = platform::inspect_executable(pid_file(proc_root, p.pid, "exe"));
    bool is_static = facts && facts->linkage == platform::Linkage::static_elf;
    u.parent = read_link(pid_file(proc_root, p.ppid, "exe"));
    if (u.parent.empty()) {
      auto parent = std::find_if(snapshot.begin(), snapshot.end(), [&](const auto& q) { return q.pid == p.ppid; });
      u.parent = parent != snapshot.end() ? parent->comm : fmt::format("process {}", p.ppid);
    }
    u.how = ungated_reason(environ, is_static, u.parent);
    u.rss = platform::tree_rss(p.pid, snapshot);
    found.emplace(p.pid, std::move(u));
  }

  // Only the topmost: a g++ below an ungated make-less g++ is its child.
  std::map<pid_t, pid_t> parent_of;
  for (const auto& p : snapshot) parent_of[p.pid] = p.ppid;
  std::vector<UngatedProcess> out;
  for (auto& [pid, u] : found) {
    bool nested = false;
    std::set<pid_t> seen;
    for (pid_t a = u.ppid; parent_of.count(a) && seen.insert(a).second; a = parent_of[a])
      if (found.count(a)) nested = true;
    if (!nested) out.push_back(std::move(u));
  }
  return out;
}

void UngatedTracker::observe(const std::vector<UngatedProcess>& now, double t_s) {
  Bytes together = 0;
  for (const auto& u : now) {
    together += u.rss;
    auto key = std::pair{u.pid, u.starttime};
    auto it = index_.find(key);
    if (it == index_.end()) {
      index_.emplace(key, entries_.size());
      entries_.push_back(Entry{u, u.rss, t_s, t_s});
      continue;
    }
    Entry& e = entries_[it->second];
    e.peak = std::max(e.peak, u.rss);
    e.last_seen_s = t_s;
  }
  peak_together_ = std::max(peak_together_, together);
}

std::vector<std::string> UngatedTracker::summary_lines(std::size_t max_lines) const {
  std::vector<std::string> out;
  if (entries_.empty()) return out;
  out.push_back(fmt::format("ungated: {} compiler process{} ran outside memgate's gate (peak {} together)",
                            entries_.size(), entries_.size() == 1 ? "" : "es", format_bytes(peak_together_)));
  std::vector<const Entry*> by_peak;
  for (const auto& e : entries_) by_peak.push_back(&e);
  std::stable_sort(by_peak.begin(), by_peak.end(), [](const Entry* a, const Entry* b) { return a->peak > b->peak; });
  std::size_t shown = 0;
  for (const Entry* e : by_peak) {
    if (shown == max_lines) break;
    const auto& p = e->process;
    out.push_back(fmt::format("  {} ({}): peak {}; {}", p.exe.empty() ? p.tool : p.exe, short_command(p.argv),
                              format_bytes(e->peak), p.how));
    ++shown;
  }
  if (shown < by_peak.size()) out.push_back(fmt::format("  ... and {} more", by_peak.size() - shown));
  return out;
}

bool UngatedScan::due(double t) {
  if (t < next_scan_) return false;
  next_scan_ = t + kScan_s;
  return true;
}

void UngatedScan::scan(std::vector<pid_t> build, const std::vector<pid_t>& known, double t) {
  const std::uint64_t scan = ++scans_;
  std::unordered_map<pid_t, std::uint64_t> still_waiting;
  std::erase_if(build, [&](pid_t p) {
    auto it = waiting_wrappers_.find(p);
    if (it == waiting_wrappers_.end() || scan - it->second >= kWrapperRecheck) return false;
    still_waiting.emplace(p, it->second);
    return true;
  });
  std::vector<pid_t> wrappers;
  auto found = find_ungated(build, known, proc_root_, &wrappers);
  for (pid_t p : wrappers) still_waiting[p] = scan;
  waiting_wrappers_ = std::move(still_waiting);  // the gone ones drop out
  if (gated_nothing_)
    for (UngatedProcess& p : found) p.how = "memgate gated no compiler in this run (see degraded:)";
  tracker_.observe(found, t);
}

}  // namespace memgate
