#include "doctor/doctor.hpp"

#include <unistd.h>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "platform/cpu.hpp"
#include "util/text.hpp"

namespace memgate::doctor {

namespace {

// The probe behind can_confine and freezer: what `memgate run` will try.
void probe_cgroups(Findings& f) {
  if (f.cgroups.version == platform::CgroupVersion::none) {
    f.confine_error = "no cgroup memory controller (v1 or v2) is available";
    return;
  }
  // A copy: on v2 the probe may move us into a leaf until it is removed.
  platform::CgroupLayout layout = f.cgroups;
  auto probe = platform::Cgroup::create_under(layout, fmt::format("memgate-doctor-probe-{}", ::getpid()));
  if (!probe) {
    f.confine_error = probe.error();
    return;
  }
  bool freezes = probe->can_freeze();
  f.freezer_forced_off = platform::freezer_forced_off();
  auto removed = probe->remove();
  if (!removed) {
    f.confine_error = removed.error();
    return;
  }
  f.can_confine = true;
  if (freezes) f.freezer = f.cgroups.version == platform::CgroupVersion::v1 ? "cgroup-v1" : "cgroup-v2";
}

std::string opt_bytes(const std::optional<Bytes>& b) { return b ? format_bytes(*b) : "unknown"; }

std::string psi_window(const std::optional<platform::PsiWindow>& w) {
  if (!w) return "unknown";
  return fmt::format("avg10={:.2f} avg60={:.2f} avg300={:.2f} total={}us", w->avg10, w->avg60, w->avg300,
                     w->total_us);
}

nlohmann::json json_window(const std::optional<platform::PsiWindow>& w) {
  if (!w) return nullptr;
  return {{"avg10", w->avg10}, {"avg60", w->avg60}, {"avg300", w->avg300}, {"total_us", w->total_us}};
}

nlohmann::json json_opt(const std::optional<Bytes>& b) {
  if (!b) return nullptr;
  return *b;
}

void render_capacity(const Findings& f, std::string& out) {
  const auto& c = f.capacity;
  out += "capacity\n";
  out += fmt::format("  cores            {}", f.cores);
  if (f.quota_cores) out += fmt::format(" (affinity {}, CPU quota {})", f.affinity_cores, *f.quota_cores);
  out += "\n";
  out += fmt::format("  physical memory  {}\n", format_bytes(c.physical));
  if (c.cgroup_limit) out += fmt::format("  cgroup limit     {} (set by {})\n", format_bytes(*c.cgroup_limit), c.cgroup_limit_source);
  else out += "  cgroup limit     none\n";
  out += fmt::format("  capacity         {} ({})\n", format_bytes(c.capacity), c.capacity_source);
  out += fmt::format("  reserve          {} ({})\n", format_bytes(f.budget.reserve),
                     f.budget.reserve_rule == "cgroup" ? "2% in a cgroup limit: the limit protects the machine"
                                                       : "5% of the machine, for everything else on it");
  out += fmt::format("  budget           {} (what a build may use)\n", format_bytes(f.budget.budget));
  out += fmt::format("  MemAvailable     {} (MemFree {}, Cached {})\n", opt_bytes(f.meminfo.available),
                     opt_bytes(f.meminfo.free), opt_bytes(f.meminfo.cached));
  if (f.cgroup_usage) out += fmt::format("  cgroup usage     {}\n", format_bytes(*f.cgroup_usage));
  if (f.meminfo.swap_total && *f.meminfo.swap_total > 0) {
    out += fmt::format("  swap             {} free of {}\n", opt_bytes(f.meminfo.swap_free),
                       format_bytes(*f.meminfo.swap_total));
  } else {
    out += fmt::format("  swap             {}\n", f.meminfo.swap_total ? "none" : "unknown");
  }
}

void render_kernel(const Findings& f, std::string& out) {
  out += "kernel features\n";
  out += fmt::format("  cgroups          {}", platform::to_string(f.cgroups.version));
  if (!f.cgroups.memory_dir.empty()) out += fmt::format(" (memory: {})", f.cgroups.memory_dir);
  out += "\n";
  if (f.can_confine) out += "  can confine      yes (child memory cgroups can be created here)\n";
  else out += fmt::format("  can confine      no: {}\n", f.confine_error);
  if (f.freezer != "sigstop") out += fmt::format("  freezer          {}\n", f.freezer);
  else if (f.freezer_forced_off) out += "  freezer          off: MEMGATE_NO_FREEZER is set (SIGSTOP/SIGCONT instead)\n";
  else out += "  freezer          none (SIGSTOP/SIGCONT instead)\n";
  if (!f.psi) {
    out += "  PSI              not available (/proc/pressure/memory)\n";
  } else {
    out += fmt::format("  PSI some         {}\n", psi_window(f.psi->some));
    out += fmt::format("  PSI full         {}\n", psi_window(f.psi->full));
  }
}

void render_settings(const Findings& f, std::string& out) {
  out += "settings (memgate run's defaults here)\n";
  for (const auto& s : f.settings)
    out += fmt::format("  {:<16} {:<24} {}\n", s.key, s.value.empty() ? "-" : printable(s.value), printable(s.source));
  if (!f.config_error.empty())
    out += fmt::format("  config file      IGNORED: {}\n", printable(f.config_error));
  else if (!f.config_file.empty())
    out += fmt::format("  config file      {}\n", printable(f.config_file));
}

}  // namespace

Findings gather(const GatherOptions& options) {
  Findings f;
  f.cgroups = platform::detect_cgroups();
  f.affinity_cores = platform::affinity_cores();
  f.quota_cores = platform::cgroup_quota_cores(f.cgroups);
  f.cores = platform::usable_cores(f.affinity_cores, f.quota_cores);
  f.meminfo = platform::read_meminfo().value_or(platform::MemInfo{});
  std::optional<std::pair<Bytes, std::string>> limit;
  if (auto l = platform::effective_memory_limit(f.cgroups)) limit = std::make_pair(l->bytes, l->dir);
  Bytes physical = f.meminfo.total.value_or(0);
  if (physical <= 0) physical = detect_capacity().physical;
  f.capacity = compute_capacity(physical, limit);
  if (auto b = compute_budget(f.capacity, options.reserve, options.memory)) f.budget = *b;
  if (f.cgroups.version != platform::CgroupVersion::none) f.cgroup_usage = platform::Cgroup::self(f.cgroups).usage();
  f.settings = options.settings;
  f.config_file = options.config_file;
  f.config_error = options.config_error;
  probe_cgroups(f);
  f.psi = platform::read_psi();
  f.stale = detect_stale();
  f.stale_cgroups = platform::find_stale_cgroups(f.cgroups);
  if (options.build_env) {
    BuildEnvSources src = real_sources(options.python);
    src.history_jobs = options.history_jobs;
    src.measured_peaks = options.measured_peaks;
    src.slots = f.cores;
    src.available = f.meminfo.available.value_or(f.capacity.capacity);
    src.budget = f.budget.budget;
    f.build_env = read_build_env(src);
  }
  return f;
}

bool page_cache_note(const platform::MemInfo& m) {
  if (!m.total || !m.free || !m.available || *m.total <= 0) return false;
  return *m.free < *m.total / 10 && *m.available > *m.total / 2;
}

std::string verdict(const Findings& f) {
  std::string v = fmt::format("capacity {}; a build may use {}", format_bytes(f.capacity.capacity),
                              format_bytes(f.budget.budget));
  if (f.meminfo.available && *f.meminfo.available < f.budget.budget) {
    v += fmt::format(" ({} is available right now)", format_bytes(*f.meminfo.available));
  }
  if (!f.stale_cgroups.empty())
    v += fmt::format("; {} cgroup{} left by a memgate that died", f.stale_cgroups.size(),
                     f.stale_cgroups.size() == 1 ? "" : "s");
  if (f.stale.empty())
    return v + (f.stale_cgroups.empty() ? "; no stale compiler processes"
                                        : "; no stale compiler processes (run: memgate doctor --kill-stale)");
  return v + fmt::format("; {} held by {} stale compiler process{} (run: memgate doctor --kill-stale)",
                         format_bytes(total_rss(f.stale)), f.stale.size(), f.stale.size() == 1 ? "" : "es");
}

std::string render_stale_cgroups(const std::vector<platform::StaleCgroup>& stale) {
  if (stale.empty()) return "";
  std::string out = fmt::format("cgroups left by a memgate that died ({})\n", stale.size());
  for (const auto& s : stale)
    out += fmt::format("  memgate pid {:>7}  {} process(es) inside  {}\n", s.pid, s.processes.size(),
                       s.cgroup.memory_dir().empty() ? s.cgroup.freezer_dir() : s.cgroup.memory_dir());
  return out;
}

bool clean_stale_cgroups(const std::vector<platform::StaleCgroup>& stale, std::string* report) {
  bool all = true;
  for (const auto& s : stale) {
    auto st = platform::clean_stale_cgroup(s);
    all = all && st.ok();
    *report += fmt::format("  memgate pid {:>7}  {}\n", s.pid, st ? "thawed, emptied and removed" : st.error());
  }
  return all;
}

std::string render_stale(const std::vector<StaleProcess>& stale) {
  if (stale.empty()) return "stale compiler processes\n  none\n";
  std::string out = fmt::format("stale compiler processes ({} holding {})\n", stale.size(), format_bytes(total_rss(stale)));
  out += fmt::format("  {:>8} {:>8} {:>10}  {}\n", "PID", "PPID", "RSS", "COMMAND");
  for (const auto& s : stale) out += fmt::format("  {:>8} {:>8} {:>10}  {}\n", s.pid, s.ppid, format_bytes(s.rss), printable(s.comm));
  return out;
}

std::string render_kills(const std::vector<KillOutcome>& outcomes) {
  std::string out;
  for (const auto& k : outcomes) out += fmt::format("  {:>8}  {:<12} {}\n", k.pid, printable(k.comm), k.result);
  return out;
}

std::string render_text(const Findings& f) {
  std::string out;
  render_capacity(f, out);
  out += "\n";
  render_kernel(f, out);
  out += "\n";
  if (!f.settings.empty() || !f.config_error.empty()) {
    render_settings(f, out);
    out += "\n";
  }
  out += render_stale(f.stale);
  out += render_stale_cgroups(f.stale_cgroups);
  if (page_cache_note(f.meminfo)) {
    out += "\nnote: MemFree is low but MemAvailable is high: the difference is page cache, which the kernel\n"
           "      reclaims on demand. There is no need to drop caches.\n";
  }
  out += "\n" + verdict(f) + "\n";
  if (!f.config_error.empty()) out += "error: the config file was ignored: " + printable(f.config_error) + "\n";
  if (f.build_env) out += "\n" + render_build_env_text(*f.build_env);
  return out;
}

std::string render_json(const Findings& f, const std::vector<KillOutcome>* killed) {
  nlohmann::json j;
  j["capacity_bytes"] = f.capacity.capacity;
  j["capacity_source"] = f.capacity.capacity_source;
  j["physical_bytes"] = f.capacity.physical;
  j["cgroup_limit_bytes"] = json_opt(f.capacity.cgroup_limit);
  j["cgroup_limit_source"] = f.capacity.cgroup_limit ? nlohmann::json(f.capacity.cgroup_limit_source) : nullptr;
  j["reserve_bytes"] = f.budget.reserve;
  j["reserve_rule"] = f.budget.reserve_rule;
  j["budget_bytes"] = f.budget.budget;
  j["mem_available_bytes"] = json_opt(f.meminfo.available);
  j["mem_free_bytes"] = json_opt(f.meminfo.free);
  j["swap_total_bytes"] = json_opt(f.meminfo.swap_total);
  j["swap_free_bytes"] = json_opt(f.meminfo.swap_free);
  j["cgroup_usage_bytes"] = json_opt(f.cgroup_usage);
  j["cores"] = f.cores;
  nlohmann::json settings = nlohmann::json::object();
  for (const auto& s : f.settings) settings[s.key] = {{"value", s.value}, {"source", s.source}};
  j["settings"] = settings;
  j["config_file"] = f.config_file;
  j["config_error"] = f.config_error.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.config_error);
  j["cgroup_version"] = platform::to_string(f.cgroups.version);
  j["can_confine"] = f.can_confine;
  if (!f.can_confine) j["confine_error"] = f.confine_error;
  j["freezer"] = f.freezer;
  j["freezer_forced_off"] = f.freezer_forced_off;
  j["psi"] = f.psi ? nlohmann::json{{"some", json_window(f.psi->some)}, {"full", json_window(f.psi->full)}}
                   : nlohmann::json(nullptr);
  auto stale = nlohmann::json::array();
  for (const auto& s : f.stale) stale.push_back({{"pid", s.pid}, {"ppid", s.ppid}, {"comm", s.comm}, {"rss_bytes", s.rss}});
  j["stale_processes"] = stale;
  j["stale_rss_bytes"] = total_rss(f.stale);
  auto cgs = nlohmann::json::array();
  for (const auto& s : f.stale_cgroups)
    cgs.push_back({{"pid", s.pid},
                   {"dir", s.cgroup.memory_dir().empty() ? s.cgroup.freezer_dir() : s.cgroup.memory_dir()},
                   {"processes", s.processes.size()}});
  j["stale_cgroups"] = cgs;
  j["page_cache_note"] = page_cache_note(f.meminfo);
  j["verdict"] = verdict(f);
  if (f.build_env) j["build_env"] = build_env_json(*f.build_env);
  if (killed) {
    auto list = nlohmann::json::array();
    for (const auto& k : *killed) list.push_back({{"pid", k.pid}, {"comm", k.comm}, {"result", k.result}, {"ended", k.ended}});
    j["killed"] = list;
  }
  // comm may hold any bytes; never let invalid UTF-8 abort the report.
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace memgate::doctor
