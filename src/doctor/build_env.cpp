// The pure half of doctor --build-env: parsers of tool output and
// installed files, and the flash-attn plan. The checks are in
// build_env_checks.cpp, readers in build_env_read.cpp, rendering in
// build_env_render.cpp.
#include "doctor/build_env.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

#include <fmt/core.h>

#include "core/job_class.hpp"
#include "predict/gpu_arch.hpp"

namespace memgate::doctor {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

std::string_view first_line(std::string_view s) { return s.substr(0, s.find('\n')); }

// Splits on any of `seps`, dropping empty parts.
std::vector<std::string> split_any(std::string_view s, std::string_view seps) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    size_t j = s.find_first_of(seps, i);
    if (j == std::string_view::npos) j = s.size();
    if (auto part = trim(s.substr(i, j - i)); !part.empty()) out.emplace_back(part);
    i = j + 1;
  }
  return out;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

bool all_digits(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)); });
}

// The number right after `at` in `s` (spaces skipped).
std::optional<int> number_after(std::string_view s, size_t at) {
  while (at < s.size() && s[at] == ' ') ++at;
  size_t end = at;
  while (end < s.size() && std::isdigit(static_cast<unsigned char>(s[end]))) ++end;
  if (end == at || end - at > 4) return std::nullopt;
  return std::stoi(std::string(s.substr(at, end - at)));
}

bool at_least(const Version& v, int major, int minor) { return v.major > major || (v.major == major && v.minor >= minor); }

// "8.6" -> "86", "9.0a" -> "90a"; "" if not of that shape.
std::string compact_arch(std::string_view a) {
  size_t dot = a.find('.');
  if (dot == std::string_view::npos || dot == 0) return "";
  std::string major(a.substr(0, dot)), rest(a.substr(dot + 1));
  if (!all_digits(major) || rest.empty() || !std::isdigit(static_cast<unsigned char>(rest[0])))
    return "";
  return major + rest;
}

}  // namespace

std::optional<Version> parse_version(std::string_view text) {
  text = trim(text);
  Version v;
  int* parts[] = {&v.major, &v.minor, &v.patch};
  size_t i = 0;
  int part = 0;
  while (part < 3 && i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
    size_t end = i;
    while (end < text.size() && std::isdigit(static_cast<unsigned char>(text[end]))) ++end;
    if (end - i > 9) return std::nullopt;
    *parts[part++] = std::stoi(std::string(text.substr(i, end - i)));
    i = end;
    if (i < text.size() && text[i] == '.' && i + 1 < text.size() && std::isdigit(static_cast<unsigned char>(text[i + 1])))
      ++i;
    else
      break;
  }
  if (part == 0) return std::nullopt;
  v.text = std::string(text.substr(0, i));
  return v;
}

std::optional<Version> parse_nvcc_version(std::string_view out) {
  size_t r = out.find("release ");
  if (r == std::string_view::npos) return std::nullopt;
  auto v = parse_version(out.substr(r + 8));
  if (!v) return std::nullopt;
  // The full version follows as ", V13.0.88".
  if (size_t full = out.find(", V", r); full != std::string_view::npos) {
    if (auto f = parse_version(out.substr(full + 3)); f && f->major == v->major && f->minor == v->minor) return f;
  }
  return v;
}

std::optional<HostCompiler> parse_cc_version(std::string_view out) {
  std::string_view line = trim(first_line(trim(out)));
  if (line.empty()) return std::nullopt;
  if (size_t c = line.find("clang version "); c != std::string_view::npos) {
    auto v = parse_version(line.substr(c + 14));
    if (!v) return std::nullopt;
    return HostCompiler{*v, true};
  }
  // gcc: the first dotted number after the package note in parentheses,
  // "gcc (Debian 12.2.0-14) 12.2.0", "g++ (GCC) 13.2.1 20230801"; or a
  // bare "12.2.0" from -dumpfullversion.
  size_t from = line.rfind(')');
  from = from == std::string_view::npos ? 0 : from + 1;
  for (const auto& tok : split_any(line.substr(from), " \t")) {
    if (tok.find('.') == std::string::npos) continue;
    if (auto v = parse_version(tok); v && v->text == tok) return HostCompiler{*v, false};
  }
  return std::nullopt;
}

HostLimits parse_host_config(std::string_view header) {
  HostLimits h;
  size_t i = 0;
  while (i < header.size()) {
    size_t end = header.find('\n', i);
    if (end == std::string_view::npos) end = header.size();
    std::string_view line = trim(header.substr(i, end - i));
    i = end + 1;
    if (!starts_with(line, "#if")) continue;
    // `__GNUC__ > 15`: gcc 16 is refused, 15 is the newest accepted.
    if (size_t g = line.find("__GNUC__ >"); g != std::string_view::npos && !h.gcc_max) {
      size_t at = g + 10;
      bool or_equal = at < line.size() && line[at] == '=';
      if (auto n = number_after(line, at + (or_equal ? 1 : 0))) h.gcc_max = or_equal ? *n - 1 : *n;
    }
    for (size_t c = line.find("__clang_major__ >"); c != std::string_view::npos;
         c = line.find("__clang_major__ >", c + 1)) {
      size_t at = c + 17;
      bool or_equal = at < line.size() && line[at] == '=';
      if (auto n = number_after(line, at + (or_equal ? 1 : 0))) {
        int max = or_equal ? *n - 1 : *n;
        h.clang_max = std::max(h.clang_max.value_or(0), max);
      }
    }
  }
  return h;
}

std::optional<TorchVersion> parse_torch_version_py(std::string_view text) {
  TorchVersion t;
  bool any = false;
  for (const auto& raw : split_any(text, "\n")) {
    std::string_view line = trim(raw);
    size_t eq = line.find('=');
    if (eq == std::string_view::npos || starts_with(line, "#")) continue;
    std::string_view name = line.substr(0, eq), value = trim(line.substr(eq + 1));
    name = trim(name.substr(0, name.find(':')));  // `cuda: Optional[str] = '12.1'` (torch 2.x)
    std::optional<std::string> v;
    if (value.size() >= 2 && (value.front() == '\'' || value.front() == '"') && value.back() == value.front())
      v = std::string(value.substr(1, value.size() - 2));
    else if (value != "None")
      continue;  // something computed; not a plain assignment we can read
    if (name == "__version__" && v) {
      t.version = *v;
      any = true;
    } else if (name == "cuda" || name == "hip") {
      (name == "cuda" ? t.cuda : t.hip) = v;
      any = true;
    }
  }
  if (!any || t.version.empty()) return std::nullopt;
  return t;
}

std::vector<std::string> parse_torch_cuda_arch_list(std::string_view value) {
  std::vector<std::string> out;
  for (const auto& a : split_any(value, "; \t,")) {
    std::string arch = a;
    bool ptx = false;
    if (size_t p = arch.find("+PTX"); p != std::string::npos) {
      ptx = true;
      arch.resize(p);
    }
    std::string c = compact_arch(arch);
    if (c.empty()) {
      out.push_back(a);  // a name such as "Ampere", kept as given
      continue;
    }
    out.push_back("sm_" + c);
    if (ptx) out.push_back("compute_" + c);
  }
  return out;
}

std::vector<std::string> flash_attn_targets(std::string_view archs, const Version& nvcc) {
  std::vector<std::string> out;
  int newest = 0;
  auto add = [&](const std::string& sm) {
    out.push_back("sm_" + sm);
    newest = std::max(newest, std::stoi(sm));
  };
  for (const auto& a : split_any(archs, "; ,")) {
    if (!all_digits(a) || a.size() > 4) continue;
    const int n = std::stoi(a);
    if (n == 90 && !at_least(nvcc, 11, 8)) continue;
    if ((n == 100 || n == 120) && !at_least(nvcc, 12, 8)) continue;
    if (n == 110) {
      if (at_least(nvcc, 13, 0)) add("110");
      else if (at_least(nvcc, 12, 8)) add("101");  // Thor was sm_101 before CUDA 13
      continue;
    }
    add(a);
  }
  if (newest > 0) out.push_back(fmt::format("compute_{}", newest));
  std::sort(out.begin(), out.end(), arch_less);
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

std::vector<std::string> parse_rocm_arch_list(std::string_view value) { return split_any(value, "; ,"); }

int flash_attn_formula_jobs(int cpus, Bytes available, int nvcc_threads) {
  const double free_gib = static_cast<double>(available) / static_cast<double>(GiB);
  const int by_memory = std::max(1, static_cast<int>(free_gib / (5.0 * std::max(1, nvcc_threads))));
  const int by_cores = std::max(1, cpus / 2);
  return std::max(1, std::min(by_cores, by_memory));
}

namespace {

std::string env_or(const BuildEnv& e, const std::string& name, const std::string& fallback) {
  auto it = e.env.find(name);
  return it == e.env.end() || it->second.empty() ? fallback : it->second;
}

Bytes quantile_of(std::vector<Bytes> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

// Peaks per job for `targets` at `pipelines` at once: history jobs of
// that klass (scaled from their CPU weight), else the measurements.
std::vector<Bytes> expected_peaks(const BuildEnv& e, const std::vector<std::string>& targets, int threads,
                                  int pipelines, std::string* source) {
  const std::string klass = JobClass{"", "nvcc", "compile", targets}.str();
  std::vector<Bytes> peaks;
  for (const JobRecord& j : e.history_nvcc) {
    if (j.key.klass != klass || j.peak_bytes <= 0 || j.exit_status != 0) continue;
    peaks.push_back(j.peak_bytes / std::max(1, j.key.cpu_weight) * pipelines);
  }
  if (!peaks.empty()) {
    *source = fmt::format("history: {} nvcc job{} of {}", peaks.size(), peaks.size() == 1 ? "" : "s", klass);
    return peaks;
  }
  if (e.measured_peaks) peaks = e.measured_peaks(threads, static_cast<int>(targets.size()));
  if (peaks.empty()) return {};
  *source = fmt::format("flash-attn 2.8 measurements (nvcc 13.0, one target, --threads 1), scaled by the {} "
                        "pipeline{} each job runs at once",
                        pipelines, pipelines == 1 ? "" : "s");
  return peaks;
}

}  // namespace

std::optional<FlashAttnPlan> plan_flash_attn(const BuildEnv& e) {
  FlashAttnPlan p;
  const Version nvcc = e.nvcc.value_or(Version{13, 0, 0, "13.0"});  // the measurements' nvcc
  p.targets = flash_attn_targets(env_or(e, "FLASH_ATTN_CUDA_ARCHS", "80;90;100;110;120"), nvcc);
  if (p.targets.empty()) return std::nullopt;
  const std::string threads = env_or(e, "NVCC_THREADS", "4");
  p.nvcc_threads = all_digits(threads) && threads.size() < 4 ? std::max(1, std::stoi(threads)) : 4;
  p.pipelines = std::min(p.nvcc_threads, static_cast<int>(p.targets.size()));
  std::vector<Bytes> peaks = expected_peaks(e, p.targets, p.nvcc_threads, p.pipelines, &p.peak_source);
  if (peaks.empty()) return std::nullopt;
  p.peak_median = quantile_of(peaks, 0.5);
  p.peak_max = *std::max_element(peaks.begin(), peaks.end());
  p.formula_jobs = flash_attn_formula_jobs(e.cpus, e.available, p.nvcc_threads);
  p.formula_worst = p.peak_max * p.formula_jobs;
  p.memgate_cpu_jobs = std::max(1, e.slots / p.pipelines);
  p.memgate_heavy_jobs = p.peak_max > 0 ? static_cast<int>(e.budget / p.peak_max) : 1;
  p.memgate_jobs = std::max(1, std::min(p.memgate_cpu_jobs, p.memgate_heavy_jobs));
  p.memgate_max_jobs = std::min(256, std::max(8, 2 * e.slots));
  return p;
}

}  // namespace memgate::doctor
