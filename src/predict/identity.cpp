#include "predict/identity.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>
#include <set>

#include <fmt/core.h>

#include "predict/gpu_arch.hpp"
#include "predict/temp_paths.hpp"
#include "util/text.hpp"
#include "util/fs.hpp"

namespace memgate {
namespace {

const std::set<std::string_view> kKnownTools = {
    "cc",     "c++",     "gcc",   "g++",   "clang",  "clang++",  "clang-cl", "cl",
    "nvcc",   "hipcc",   "icx",   "icpx",  "icc",    "icpc",     "nvc",      "nvc++",
    "gfortran", "cpp",   "as",    "ld",    "ld.bfd", "ld.gold",  "ld.lld",   "ld64.lld",
    "lld",    "lld-link", "mold", "ld.mold", "link", "rustc"};

const std::set<std::string_view> kLaunchers = {"ccache", "sccache", "distcc", "icecc", "buildcache"};

enum class Family { gcc, nvcc, rustc, linker };

// Options whose value is the next argument (when not written NAME=VALUE).
const std::set<std::string_view> kGccValueOpts = {
    "-o", "-MF", "-MT", "-MQ", "-I", "-isystem", "-iquote", "-idirafter", "-include", "-imacros",
    "-isysroot", "--sysroot", "-iprefix", "-iwithprefix", "-iwithprefixbefore", "-D", "-U", "-x",
    "-L", "-l", "-Xlinker", "-Xassembler", "-Xpreprocessor", "-Xclang", "-Xarch_host",
    "-Xarch_device", "-Xcuda-fatbinary", "-Xcuda-ptxas", "-Xopenmp-target", "-mllvm", "-arch",
    "-target", "-T", "-u", "-e", "-z", "--param", "-B", "-MJ", "-dependency-file", "-aux-info",
    "-working-directory", "--offload-arch", "--cuda-gpu-arch", "-ivfsoverlay"};

const std::set<std::string_view> kNvccValueOpts = {
    "-o", "--output-file", "-gencode", "--generate-code", "-arch", "--gpu-architecture", "-code",
    "--gpu-code", "--threads", "-t", "-ccbin", "--compiler-bindir", "-Xcompiler",
    "--compiler-options", "-Xptxas", "--ptxas-options", "-Xlinker", "--linker-options", "-Xcudafe",
    "-Xnvlink", "--nvlink-options", "-Xarchive", "--archive-options", "-Xfatbin", "-Xcicc", "-Xnvvm",
    "-MF", "--dependency-output", "-MT", "--dependency-target-name", "-I", "--include-path",
    "-isystem", "--system-include", "-D", "--define-macro", "-U", "--undefine-macro", "-include",
    "--pre-include", "-x", "--x", "-L", "--library-path", "-l", "--library", "-odir",
    "--output-directory", "--keep-dir", "-std", "--std", "-O", "--optimize", "-maxrregcount",
    "--maxrregcount", "-rdc", "--relocatable-device-code", "-Werror", "--Werror", "-diag-suppress",
    "--diag-suppress", "-diag-error", "--diag-error", "-diag-warn", "--diag-warn", "-ftz", "--ftz",
    "-prec-div", "--prec-div", "-prec-sqrt", "--prec-sqrt", "-fmad", "--fmad", "-split-compile",
    "--split-compile", "-time", "--time", "-ldir", "--libdevice-directory", "-cudart", "--cudart",
    "-cudadevrt", "--cudadevrt", "-default-stream", "--default-stream", "--machine", "-m",
    "-optf", "--options-file"};

const std::set<std::string_view> kRustcValueOpts = {
    "-o", "--crate-name", "--crate-type", "--edition", "--emit", "--out-dir", "-L", "-l", "--cfg",
    "-C", "--codegen", "--extern", "--target", "--cap-lints", "--error-format", "--json",
    "--remap-path-prefix", "--check-cfg", "--print", "-W", "-A", "-D", "-F", "--sysroot"};

const std::set<std::string_view> kLinkerValueOpts = {
    "-o", "--output", "-L", "-l", "-T", "-m", "-e", "-z", "-soname", "-h", "-rpath",
    "-rpath-link", "--sysroot", "-plugin", "-plugin-opt", "-dynamic-linker", "-u", "-y",
    "--version-script", "--dynamic-list", "-Map", "--hash-style", "--build-id"};

const std::set<std::string_view> kSourceExts = {
    "c", "cc", "cp", "cpp", "cxx", "c++", "C", "CPP", "cu", "hip", "m", "mm", "M", "s", "S", "sx",
    "f", "for", "f90", "F90", "f95", "F", "rs", "i", "ii", "cui", "ptx", "ixx", "cppm"};

std::string basename_of(std::string_view p) { return std::string(base_name(p)); }

std::string extension_of(std::string_view name) {
  auto dot = name.find_last_of('.');
  if (dot == std::string_view::npos || dot == 0) return {};
  return std::string(name.substr(dot + 1));
}

bool is_source_file(std::string_view arg) { return kSourceExts.count(extension_of(basename_of(arg))) > 0; }

Family family_of(const std::string& tool) {
  if (tool == "nvcc") return Family::nvcc;
  if (tool == "rustc") return Family::rustc;
  if (tool.substr(0, 2) == "ld" || tool == "lld" || tool == "mold" || tool == "link" || tool == "lld-link")
    return Family::linker;
  return Family::gcc;
}

const std::set<std::string_view>& value_opts(Family f) {
  switch (f) {
    case Family::nvcc: return kNvccValueOpts;
    case Family::rustc: return kRustcValueOpts;
    case Family::linker: return kLinkerValueOpts;
    case Family::gcc: break;
  }
  return kGccValueOpts;
}

// Everything the argument scan learns.
struct Scan {
  std::vector<std::string> sources;
  std::string output;
  std::string crate_name;  // rustc
  bool compile = false, preprocess = false, deps_only = false;
  std::optional<int> threads;  // nvcc --threads
  int parallel_jobs = 1;       // clang -parallel-jobs
  GpuArchs archs;
};

std::optional<int> parse_int(std::string_view s) {
  if (s.empty() || s.size() > 6) return std::nullopt;
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

// "NAME VALUE" or "NAME=VALUE": sets *value and returns the arguments used.
size_t take_value(const std::vector<std::string>& a, size_t i, std::string_view name, std::string* value) {
  const std::string& s = a[i];
  if (s == name) {
    if (i + 1 >= a.size()) return 1;
    *value = a[i + 1];
    return 2;
  }
  if (s.size() > name.size() && s.compare(0, name.size(), name) == 0 && s[name.size()] == '=') {
    *value = s.substr(name.size() + 1);
    return 1;
  }
  return 0;
}

size_t take_any(const std::vector<std::string>& a, size_t i, std::initializer_list<std::string_view> names,
                std::string* value) {
  for (auto n : names)
    if (size_t used = take_value(a, i, n, value)) return used;
  return 0;
}

bool is_one_of(const std::string& s, std::initializer_list<std::string_view> names) {
  return std::find(names.begin(), names.end(), s) != names.end();
}

// nvcc's own options that matter; returns the arguments consumed, 0 if none.
size_t scan_nvcc_option(const std::vector<std::string>& a, size_t i, Scan& s) {
  const std::string& x = a[i];
  std::string v;
  if (size_t n = take_any(a, i, {"-gencode", "--generate-code"}, &v)) {
    s.archs.add_gencode(v);
    return n;
  }
  if (size_t n = take_any(a, i, {"-arch", "--gpu-architecture"}, &v)) {
    s.archs.add_arch(v);
    return n;
  }
  if (size_t n = take_any(a, i, {"-code", "--gpu-code"}, &v)) {
    s.archs.add_code(v);
    return n;
  }
  if (size_t n = take_any(a, i, {"--threads", "-t"}, &v)) {
    if (auto t = parse_int(v)) s.threads = *t;
    return n;
  }
  if (size_t n = take_any(a, i, {"-o", "--output-file"}, &s.output)) return n;
  if (is_one_of(x, {"--compile", "-dc", "--device-c", "-dw", "--device-w", "-ptx", "--ptx", "-cubin",
                    "--cubin", "-fatbin", "--fatbin", "-optix-ir", "--optix-ir", "-cuda", "--cuda"})) {
    s.compile = true;
    return 1;
  }
  if (x == "--preprocess") s.preprocess = true;
  if (x == "--generate-dependencies") s.deps_only = true;
  return (x == "--preprocess" || x == "--generate-dependencies") ? 1 : 0;
}

// gcc/clang/hipcc options that matter; returns the arguments consumed.
size_t scan_gcc_option(const std::vector<std::string>& a, size_t i, Scan& s) {
  const std::string& x = a[i];
  std::string v;
  if (size_t n = take_any(a, i, {"--offload-arch", "--cuda-gpu-arch", "--amdgpu-target"}, &v)) {
    s.archs.add_offload(v);
    return n;
  }
  if (size_t n = take_value(a, i, "--no-offload-arch", &v)) {
    s.archs.remove_offload(v);
    return n;
  }
  if (size_t n = take_any(a, i, {"-parallel-jobs", "--parallel-jobs"}, &v)) {
    if (auto p = parse_int(v)) s.parallel_jobs = *p;
    return n;
  }
  if (x == "-o") return take_value(a, i, "-o", &s.output);
  if (x.size() > 2 && x.compare(0, 2, "-o") == 0) {
    s.output = x.substr(2);
    return 1;
  }
  return 0;
}

size_t scan_rustc_option(const std::vector<std::string>& a, size_t i, Scan& s) {
  if (size_t n = take_value(a, i, "--crate-name", &s.crate_name)) return n;
  return take_value(a, i, "-o", &s.output);
}

size_t scan_linker_option(const std::vector<std::string>& a, size_t i, Scan& s) {
  if (a[i].size() > 2 && a[i].compare(0, 2, "-o") == 0 && a[i][2] != '=') {
    s.output = a[i].substr(2);
    return 1;
  }
  return take_any(a, i, {"-o", "--output"}, &s.output);
}

void scan_mode_flag(const std::string& x, Scan& s) {
  if (x == "-c" || x == "-S") s.compile = true;
  else if (x == "-E") s.preprocess = true;
  else if (x == "-M" || x == "-MM") s.deps_only = true;
}

Scan scan_arguments(const std::vector<std::string>& a, size_t first, Family fam) {
  Scan s;
  const auto& value_set = value_opts(fam);
  for (size_t i = first; i < a.size();) {
    size_t used = 0;
    switch (fam) {
      case Family::nvcc: used = scan_nvcc_option(a, i, s); break;
      case Family::gcc: used = scan_gcc_option(a, i, s); break;
      case Family::rustc: used = scan_rustc_option(a, i, s); break;
      case Family::linker: used = scan_linker_option(a, i, s); break;
    }
    if (used) {
      i += used;
      continue;
    }
    const std::string& x = a[i];
    if (x.size() > 1 && x[0] == '-') {
      scan_mode_flag(x, s);
      i += value_set.count(x) ? 2 : 1;
      continue;
    }
    if (is_source_file(x)) s.sources.push_back(x);
    ++i;
  }
  return s;
}

// A path inside a build system's scratch area for configure-time checks:
// CMake's try_compile (CMakeFiles/CMakeScratch/TryCompile-*, before 3.24
// CMakeFiles/CMakeTmp) and compiler identification
// (CMakeFiles/<version>/CompilerId<LANG>), Meson's compiler checks
// (meson-private/tmp*).
bool in_probe_dir(std::string_view path) {
  const auto parts = path_components(path);
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& p = parts[i];
    if (p.rfind("TryCompile-", 0) == 0) return true;
    if (i == 0) continue;
    const std::string& up = parts[i - 1];
    if (up == "CMakeFiles" && (p == "CMakeScratch" || p == "CMakeTmp")) return true;
    if (up == "meson-private" && p.rfind("tmp", 0) == 0) return true;
    if (i >= 2 && parts[i - 2] == "CMakeFiles" && p.rfind("CompilerId", 0) == 0) return true;
  }
  return false;
}

// A compile or link a build system runs to learn about the compiler, not
// to build the tree: in a probe directory (above), or autoconf's
// conftest.c / conftest.cpp / conftest.o / conftest.
bool is_configure_probe(const Scan& s, const std::string& cwd) {
  if (in_probe_dir(cwd)) return true;
  std::vector<std::string> paths = s.sources;
  if (!s.output.empty()) paths.push_back(s.output);
  for (const std::string& p : paths) {
    std::string name = basename_of(p);
    if (name == "conftest" || name.rfind("conftest.", 0) == 0) return true;
    if (p.find('/') != std::string::npos && in_probe_dir(p)) return true;
  }
  return false;
}

std::string mode_of(const Scan& s, Family fam, const std::string& cwd) {
  if (fam == Family::linker) return "link";
  if (fam == Family::rustc) return "compile";
  if (is_configure_probe(s, cwd)) return "probe";
  if (s.preprocess || s.deps_only) return "preprocess";
  return s.compile ? "compile" : "link";
}

int cpu_weight_of(const Scan& s, Family fam, int pipelines) {
  if (fam == Family::nvcc) {
    int t = s.threads.value_or(1);
    if (t <= 0) t = pipelines;
    return std::max(1, std::min(t, pipelines));
  }
  if (s.parallel_jobs > 1 && pipelines > 1) return std::min(s.parallel_jobs, pipelines);
  return 1;
}

// Skips launcher prefixes; the index of the real program in argv.
size_t program_index(const std::vector<std::string>& argv) {
  size_t i = 0;
  while (i + 1 < argv.size()) {
    std::string base = basename_of(argv[i]);
    if (kLaunchers.count(base)) {
      ++i;
    } else if (base == "memgate" && argv[i + 1] == "wrap") {
      i += 2;
      if (i + 1 < argv.size() && argv[i] == "--") ++i;
    } else {
      break;
    }
  }
  return std::min(i, argv.empty() ? 0 : argv.size() - 1);
}

std::string source_key(const std::string& src, const std::string& cwd) {
  std::string abs = (src.empty() || src[0] == '/' || cwd.empty()) ? src : join_path(cwd, src);
  return last_components(strip_temp_dirs(abs), 2);
}

std::string output_key(const std::string& out, const std::string& cwd) {
  if (out.empty() || out == "-") return out;
  if (out[0] != '/') return last_components(strip_temp_dirs(out), SIZE_MAX);
  std::string o = lexical_normal(out);
  std::string c = lexical_normal(cwd);
  if (c.size() > 1 && o.size() > c.size() + 1 && o.compare(0, c.size(), c) == 0 && o[c.size()] == '/')
    return o.substr(c.size() + 1);
  return last_components(strip_temp_dirs(o), 3);
}

// The output's name with its build-made extensions removed: a.cpp.o -> a.
std::string stem_of_output(const std::string& out) {
  static const std::set<std::string_view> kBuildExts = {"o", "obj", "so", "a", "lo", "dylib", "d",
                                                        "exe", "out", "bc", "ii", "i", "ptx", "cubin",
                                                        "fatbin", "s", "S"};
  std::string name = basename_of(out);
  for (;;) {
    std::string ext = extension_of(name);
    bool is_version = !ext.empty() && parse_int(ext).has_value();
    if (ext.empty() || !(kBuildExts.count(ext) || kSourceExts.count(ext) || is_version)) break;
    name.resize(name.size() - ext.size() - 1);
  }
  return name;
}

std::string stem_of_source(const std::string& src) {
  std::string name = basename_of(src);
  std::string ext = extension_of(name);
  if (!ext.empty()) name.resize(name.size() - ext.size() - 1);
  return name;
}

void fill_key(CommandInfo& info, const Scan& s, const std::vector<std::string>& argv, const std::string& cwd) {
  JobIdentity id;
  id.klass.tool = info.key.tool;
  id.klass.mode = info.mode;
  id.klass.targets = info.archs;
  if (!s.sources.empty()) id.source = source_key(s.sources.front(), cwd);
  if (s.sources.size() > 1) id.source += fmt::format("+{}", s.sources.size() - 1);
  id.output = output_key(s.output, cwd);
  if (id.output.empty() && !s.crate_name.empty()) id.output = "crate " + s.crate_name;
  if (id.source.empty() && id.output.empty()) id.tag = argv_digest(argv);

  std::string stem = info.key.tool;
  if (!s.crate_name.empty()) stem = s.crate_name;
  else if (!s.sources.empty()) stem = stem_of_source(s.sources.front());
  else if (!s.output.empty()) stem = stem_of_output(s.output);
  info.key = make_job_key(id, std::move(stem), info.key.cpu_weight);
}

std::vector<std::string> split_ws(std::string_view s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    while (i < s.size() && std::isspace(static_cast<unsigned char>(s[i]))) ++i;
    size_t j = i;
    while (j < s.size() && !std::isspace(static_cast<unsigned char>(s[j]))) ++j;
    if (j > i) out.emplace_back(s.substr(i, j - i));
    i = j;
  }
  return out;
}

}  // namespace

std::string normalize_tool_name(std::string_view program) {
  std::string base = basename_of(program);
  if (kKnownTools.count(base)) return base;
  // Version suffix: g++-12, clang-14, gcc-12.2.
  size_t dash = base.find_last_of('-');
  if (dash != std::string::npos && dash + 1 < base.size()) {
    std::string_view tail = std::string_view(base).substr(dash + 1);
    bool version = std::all_of(tail.begin(), tail.end(), [](char c) { return std::isdigit(static_cast<unsigned char>(c)) || c == '.'; });
    if (version && std::isdigit(static_cast<unsigned char>(tail[0]))) base.resize(dash);
  }
  if (kKnownTools.count(base)) return base;
  // Target triple prefix: x86_64-linux-gnu-g++; the longest known suffix wins.
  for (size_t pos = base.find('-'); pos != std::string::npos; pos = base.find('-', pos + 1)) {
    std::string suffix = base.substr(pos + 1);
    if (kKnownTools.count(suffix)) return suffix;
  }
  return base;
}

bool is_version_query(const std::vector<std::string>& argv) {
  if (argv.empty()) return false;
  const size_t first = program_index(argv) + 1;
  if (argv.size() == first + 1 && (argv[first] == "-v" || argv[first] == "-vV" || argv[first] == "-V")) return true;
  for (size_t i = first; i < argv.size(); ++i) {
    std::string_view a = argv[i];
    if (a == "--version" || a == "-dumpversion" || a == "-dumpfullversion" || a == "-dumpmachine" ||
        a == "--help" || a.rfind("-print-", 0) == 0 || a.rfind("--print-", 0) == 0 || a == "--print" ||
        a.rfind("--print=", 0) == 0)
      return true;
  }
  return false;
}

CommandInfo analyze_command(const std::vector<std::string>& argv, const std::string& cwd) {
  CommandInfo info;
  if (argv.empty()) {
    info.mode = "link";
    info.key = make_job_key(JobIdentity{JobClass{"", "unknown", info.mode, {}}, "", "", "empty"}, "unknown");
    return info;
  }
  size_t prog = program_index(argv);
  info.key.tool = normalize_tool_name(argv[prog]);
  Family fam = family_of(info.key.tool);
  Scan s = scan_arguments(argv, prog + 1, fam);
  info.mode = is_version_query(argv) ? "probe" : mode_of(s, fam, cwd);
  info.output = s.output;
  info.source = s.sources.empty() ? "" : s.sources.front();
  info.archs = s.archs.targets();
  int pipelines = s.archs.pipelines();
  if (fam == Family::nvcc) pipelines = std::max(1, pipelines);
  info.gpu_pipelines = pipelines;
  info.key.cpu_weight = std::min(cpu_weight_of(s, fam, std::max(1, pipelines)), kMaxCpuWeight);
  fill_key(info, s, argv, cwd);
  return info;
}

std::string argv_digest(const std::vector<std::string>& argv) {
  std::uint64_t h = kFnvOffset;
  auto feed = [&h](std::string_view s) { h = fnv1a64(s, h); };
  if (!argv.empty()) {
    size_t prog = program_index(argv);
    feed(normalize_tool_name(argv[prog]));
    for (size_t i = prog + 1; i < argv.size(); ++i) {
      feed(std::string_view("\0", 1));
      feed(mask_temp_names(argv[i]));
    }
  }
  return fmt::format("{:016x}", h);
}

std::vector<std::string> with_nvcc_env_flags(const std::vector<std::string>& argv, std::string_view prepend,
                                             std::string_view append) {
  if (argv.empty()) return argv;
  size_t prog = program_index(argv);
  if (normalize_tool_name(argv[prog]) != "nvcc") return argv;
  std::vector<std::string> out(argv.begin(), argv.begin() + static_cast<std::ptrdiff_t>(prog) + 1);
  for (auto& f : split_ws(prepend)) out.push_back(std::move(f));
  out.insert(out.end(), argv.begin() + static_cast<std::ptrdiff_t>(prog) + 1, argv.end());
  for (auto& f : split_ws(append)) out.push_back(std::move(f));
  return out;
}

std::vector<std::string> with_hip_env_targets(const std::vector<std::string>& argv, std::string_view targets) {
  if (argv.empty() || split_ws(targets).empty()) return argv;
  size_t prog = program_index(argv);
  if (normalize_tool_name(argv[prog]) != "hipcc") return argv;
  for (size_t i = prog + 1; i < argv.size(); ++i) {
    for (std::string_view opt : {"--offload-arch=", "--amdgpu-target="})
      if (argv[i].compare(0, opt.size(), opt) == 0) return argv;
  }
  std::vector<std::string> out = argv;
  out.push_back("--offload-arch=" + split_ws(targets).front());
  return out;
}

}  // namespace memgate
