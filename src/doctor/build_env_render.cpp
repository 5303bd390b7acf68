// doctor --build-env as text and as the `build_env` JSON object.
#include <fmt/core.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "doctor/build_env.hpp"

namespace memgate::doctor {

namespace {

std::string env_value(const BuildEnv& e, const char* name) {
  auto it = e.env.find(name);
  return it == e.env.end() ? "" : it->second;
}

std::string or_none(const std::string& s, const char* none = "not found") { return s.empty() ? none : s; }

std::string target_line(const BuildEnv& e, const char* name, const std::vector<std::string>& parsed, const char* unset) {
  const std::string v = env_value(e, name);
  if (v.empty()) return fmt::format("  {:<22} not set: {}\n", name, unset);
  return fmt::format("  {:<22} {} -> {} ({} target{})\n", name, v, fmt::join(parsed, ", "), parsed.size(),
                     parsed.size() == 1 ? "" : "s");
}

void render_found(const BuildEnv& e, std::string& out) {
  out += "build environment\n";
  if (e.nvcc_path.empty()) {
    out += "  nvcc             not found\n";
  } else {
    out += fmt::format("  nvcc             {} ({}; CUDA home {} from {})\n", e.nvcc ? e.nvcc->text : "version unknown",
                       e.nvcc_path, e.cuda_home, e.cuda_home_source);
    std::string limit;
    if (e.host_limits.gcc_max) limit += fmt::format("gcc <= {}", *e.host_limits.gcc_max);
    if (e.host_limits.clang_max) limit += fmt::format("{}clang <= {}", limit.empty() ? "" : ", ", *e.host_limits.clang_max);
    out += fmt::format("  host compiler    {} {} ({}; nvcc accepts {})\n",
                       e.host_cc_version ? (e.host_cc_version->clang ? "clang" : "gcc") : "",
                       e.host_cc_version ? e.host_cc_version->version.text : "version unknown", or_none(e.host_cc),
                       limit.empty() ? "unknown" : limit);
  }
  out += fmt::format("  ROCm             {}\n", e.rocm_path.empty() ? "not found"
                                                                     : fmt::format("{} (from {}), hipcc {}", e.rocm_path, e.rocm_source,
                                                                                   or_none(e.hipcc_path)));
  out += fmt::format("  python           {}\n", or_none(e.python));
  if (e.torch) {
    out += fmt::format("  torch            {} (torch.version.cuda {}, torch.version.hip {}; {})\n", e.torch->version,
                       e.torch->cuda.value_or("None"), e.torch->hip.value_or("None"), e.torch->dir);
  } else {
    out += fmt::format("  torch            {}\n", e.python.empty() ? "not looked for" : "not installed for this python");
  }
  std::vector<std::string> mods;
  for (const auto& [name, dir] : e.modules) mods.push_back(fmt::format("{} {}", name, dir.empty() ? "MISSING" : "ok"));
  if (!mods.empty()) out += fmt::format("  modules          {}\n", fmt::join(mods, ", "));
  out += fmt::format("  ninja            {}\n", or_none(e.ninja_path, "not found"));
  const std::string mj = env_value(e, "MAX_JOBS");
  out += fmt::format("  MAX_JOBS         {}\n", mj.empty() ? fmt::format("not set (memgate run sets {})", std::min(256, std::max(8, 2 * e.slots)))
                                                         : mj + " (set by you; memgate run keeps it)");
}

void render_targets(const BuildEnv& e, const std::optional<FlashAttnPlan>& p, std::string& out) {
  out += "\ntargets a build would compile for\n";
  out += target_line(e, "TORCH_CUDA_ARCH_LIST", parse_torch_cuda_arch_list(env_value(e, "TORCH_CUDA_ARCH_LIST")),
                     "torch builds for the visible GPUs, else for every arch its CUDA supports");
  if (p) {
    const std::string fa = env_value(e, "FLASH_ATTN_CUDA_ARCHS");
    out += fmt::format("  {:<22} {}{} -> {} ({} targets)\n", "FLASH_ATTN_CUDA_ARCHS", fa.empty() ? "not set: " : "",
                       fa.empty() ? "80;90;100;110;120" : fa, fmt::join(p->targets, ", "), p->targets.size());
    const std::string t = env_value(e, "NVCC_THREADS");
    out += fmt::format("  {:<22} {}{} (at most {} cicc/ptxas pipelines at once per job)\n", "NVCC_THREADS",
                       t.empty() ? "not set: " : "", p->nvcc_threads, p->pipelines);
  }
  out += target_line(e, "PYTORCH_ROCM_ARCH", parse_rocm_arch_list(env_value(e, "PYTORCH_ROCM_ARCH")),
                     "torch builds for the visible AMD GPUs");
}

void render_flash(const BuildEnv& e, const FlashAttnPlan& p, std::string& out) {
  out += "\nflash-attn 2.8 here (96 kernel files)\n";
  out += fmt::format("  peak per nvcc job      median {}, heaviest {}\n", format_bytes(p.peak_median), format_bytes(p.peak_max));
  out += fmt::format("                         from {}\n", p.peak_source);
  out += fmt::format("  flash-attn's MAX_JOBS  {} = max(1, min({} CPUs / 2, {} available / (5 GB x {} threads)))\n",
                     p.formula_jobs, e.cpus, format_bytes(e.available), p.nvcc_threads);
  out += fmt::format("                         its heaviest jobs together: {} x {} = {}{}\n", p.formula_jobs,
                     format_bytes(p.peak_max), format_bytes(p.formula_worst),
                     p.formula_worst > e.available ? "  MORE THAN IS AVAILABLE" : "");
  std::string heavy = p.memgate_heavy_jobs > 0
                          ? fmt::format("and {} of the heaviest within its {} budget", p.memgate_heavy_jobs, format_bytes(e.budget))
                          : fmt::format("but the heaviest alone exceeds its {} budget (it runs such a job alone)",
                                        format_bytes(e.budget));
  out += fmt::format("  memgate run            MAX_JOBS={} for ninja; runs at most {} at once ({} slots / {} threads "
                     "each), {}\n",
                     p.memgate_max_jobs, p.memgate_cpu_jobs, e.slots, p.pipelines, heavy);
}

}  // namespace

std::string render_build_env_text(const BuildEnv& e) {
  std::string out;
  render_found(e, out);
  auto plan = plan_flash_attn(e);
  if (e.torch_project) render_targets(e, plan, out);
  if (plan && e.torch_project) render_flash(e, *plan, out);
  out += "\nchecks\n";
  int problems = 0;
  for (const Check& c : check_build_env(e)) {
    out += fmt::format("  {:<5} {}\n", c.level, c.what);
    if (!c.fix.empty() && c.level != "ok") out += fmt::format("        fix: {}\n", c.fix);
    problems += c.level == "error" || c.level == "warn";
  }
  const char* what = e.torch_project ? "torch extension builds" : "CUDA/ROCm builds";
  out += problems == 0 ? fmt::format("\nno problems found for {}\n", what)
                       : fmt::format("\n{} problem{} for {} (see fix: above)\n", problems, problems == 1 ? "" : "s",
                                     what);
  return out;
}

nlohmann::json build_env_json(const BuildEnv& e) {
  using nlohmann::json;
  auto str_or_null = [](const std::string& s) { return s.empty() ? json(nullptr) : json(s); };
  json j;
  j["cuda_home"] = str_or_null(e.cuda_home);
  j["cuda_home_source"] = str_or_null(e.cuda_home_source);
  j["nvcc_path"] = str_or_null(e.nvcc_path);
  j["nvcc_version"] = e.nvcc ? json(e.nvcc->text) : json(nullptr);
  j["host_compiler"] = {{"path", str_or_null(e.host_cc)},
                        {"version", e.host_cc_version ? json(e.host_cc_version->version.text) : json(nullptr)},
                        {"clang", e.host_cc_version && e.host_cc_version->clang},
                        {"nvcc_gcc_max", e.host_limits.gcc_max ? json(*e.host_limits.gcc_max) : json(nullptr)},
                        {"nvcc_clang_max", e.host_limits.clang_max ? json(*e.host_limits.clang_max) : json(nullptr)}};
  j["rocm_path"] = str_or_null(e.rocm_path);
  j["hipcc_path"] = str_or_null(e.hipcc_path);
  j["python"] = str_or_null(e.python);
  if (e.torch) {
    j["torch"] = {{"version", e.torch->version},
                  {"cuda", e.torch->cuda ? json(*e.torch->cuda) : json(nullptr)},
                  {"hip", e.torch->hip ? json(*e.torch->hip) : json(nullptr)},
                  {"dir", e.torch->dir}};
  } else {
    j["torch"] = nullptr;
  }
  json mods = json::object();
  for (const auto& [name, dir] : e.modules) mods[name] = str_or_null(dir);
  j["modules"] = mods;
  j["ninja_path"] = str_or_null(e.ninja_path);
  json env = json::object();
  for (const auto& [k, v] : e.env) env[k] = v;
  j["env"] = env;
  j["targets"] = {{"torch_cuda_arch_list", parse_torch_cuda_arch_list(env_value(e, "TORCH_CUDA_ARCH_LIST"))},
                  {"pytorch_rocm_arch", parse_rocm_arch_list(env_value(e, "PYTORCH_ROCM_ARCH"))}};
  if (auto p = plan_flash_attn(e)) {
    j["flash_attn"] = {{"targets", p->targets},
                       {"nvcc_threads", p->nvcc_threads},
                       {"pipelines", p->pipelines},
                       {"peak_median_bytes", p->peak_median},
                       {"peak_max_bytes", p->peak_max},
                       {"peak_source", p->peak_source},
                       {"formula_max_jobs", p->formula_jobs},
                       {"formula_worst_bytes", p->formula_worst},
                       {"available_bytes", e.available},
                       {"memgate_max_jobs_env", p->memgate_max_jobs},
                       {"memgate_cpu_jobs", p->memgate_cpu_jobs},
                       {"memgate_heavy_jobs", p->memgate_heavy_jobs},
                       {"memgate_jobs", p->memgate_jobs}};
  } else {
    j["flash_attn"] = nullptr;
  }
  json checks = json::array();
  for (const Check& c : check_build_env(e))
    checks.push_back({{"key", c.key}, {"level", c.level}, {"what", c.what}, {"fix", c.fix}});
  j["checks"] = checks;
  j["torch_project"] = e.torch_project;
  j["torch_project_why"] = e.torch_why;
  return j;
}

}  // namespace memgate::doctor
