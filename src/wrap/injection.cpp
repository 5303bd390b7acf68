// Which way the wrapper gets into this build, and the environment that
// does it (the rules are in shims.hpp).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include <fmt/core.h>

#include "platform/elf.hpp"
#include "util/fs.hpp"
#include "wrap/parts.hpp"
#include "wrap/shims.hpp"

extern char** environ;

namespace memgate {
namespace {

std::string get(const std::map<std::string, std::string>& env, const std::string& key) {
  auto it = env.find(key);
  return it == env.end() ? std::string() : it->second;
}

bool flag_set(const std::map<std::string, std::string>& env, const std::string& key) {
  std::string v = get(env, key);
  return !v.empty() && v != "0";
}

std::vector<std::string> split_on(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    auto pos = s.find(sep, start);
    out.push_back(s.substr(start, pos == std::string::npos ? std::string::npos : pos - start));
    if (pos == std::string::npos) return out;
    start = pos + 1;
  }
}

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  for (auto& w : split_on(s, ' '))
    if (!w.empty()) out.push_back(w);
  return out;
}

std::string dir_name(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

bool real_is_executable(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
}

// ---- why preloading cannot reach into the build command ---------------

// command[0] as execvp would find it in env's PATH; "" if not found.
std::string resolve_command(const InjectionInput& in, const std::function<bool(const std::string&)>& exec_ok) {
  if (in.command.empty() || in.command[0].empty()) return "";
  const std::string& name = in.command[0];
  if (name.find('/') != std::string::npos) return name;
  auto it = in.env.find("PATH");
  std::string path = it == in.env.end() ? "/bin:/usr/bin" : it->second;
  for (const auto& dir : split_on(path, ':')) {
    std::string p = join_path(dir.empty() ? "." : dir, name);
    if (exec_ok(p)) return p;
  }
  return "";
}

// Why the loader will not preload into the program at `path` (and, for a
// script, its interpreter), or "" if it will.
std::optional<Interception> build_command_blocks_preload(const std::string& path) {
  std::string current = path;
  for (int depth = 0; depth < 2 && !current.empty(); ++depth) {
    auto facts = platform::inspect_executable(current);
    if (!facts) return std::nullopt;
    if (facts->secure_exec)
      return Interception{Mechanism::shims, "",
                          fmt::format("the build command {} is setuid, setgid or has file capabilities: the loader "
                                      "drops LD_PRELOAD for it and everything it starts",
                                      current)};
    if (facts->linkage == platform::Linkage::static_elf)
      return Interception{Mechanism::preload_and_shims, "",
                          fmt::format("the build command {} is statically linked: the compilers it starts itself "
                                      "are caught by PATH shims or the preload library's start-up check",
                                      current)};
    current = facts->interpreter;
  }
  return std::nullopt;
}

// ---- the environment --------------------------------------------------

// The entries of an LD_PRELOAD value (separated by colons or spaces)
// other than libmemgate-preload.so; *had says whether there was one.
std::vector<std::string> preload_entries_but_ours(const std::string& value, bool* had) {
  std::vector<std::string> out;
  *had = false;
  for (auto& part : split_on(value, ':'))
    for (auto& entry : words(part)) {
      std::string_view base(entry);
      base = base.substr(base.find_last_of('/') == std::string_view::npos ? 0 : base.find_last_of('/') + 1);
      if (base == kPreloadName) *had = true;
      else out.push_back(entry);
    }
  return out;
}

// LD_PRELOAD with `lib` first and no other copy of the library.
std::string preload_value(const std::string& lib, const std::string& user) {
  bool had = false;
  std::string out = lib;
  for (const auto& entry : preload_entries_but_ours(user, &had)) out += ":" + entry;
  return out;
}

void add_launcher(std::vector<std::string>& out, const std::string& word) {
  if (word.empty() || word.find('=') != std::string::npos) return;
  std::string base = word.substr(word.find_last_of('/') == std::string::npos ? 0 : word.find_last_of('/') + 1);
  if (base.empty() || base.find(':') != std::string::npos || base == "memgate" || base == kWrapperName) return;
  if (classify_program(base) != ToolKind::none) return;  // the table knows it already
  if (std::find(out.begin(), out.end(), base) == out.end()) out.push_back(base);
}

// The launchers the user put in front of a compiler (see MEMGATE_LAUNCHERS
// in shims.hpp).
std::string launcher_names(const std::map<std::string, std::string>& env) {
  std::vector<std::string> out;
  for (const char* var : {"CC", "CXX", "PYTORCH_NVCC", "CUDAHOSTCXX"}) {
    auto w = words(get(env, var));
    for (std::size_t i = 0; i + 1 < w.size(); ++i) {
      bool compiler_follows = false;
      for (std::size_t j = i + 1; j < w.size(); ++j) {
        auto k = classify_program(w[j]);
        compiler_follows = compiler_follows || k == ToolKind::compiler || k == ToolKind::linker;
      }
      if (compiler_follows) add_launcher(out, w[i]);
    }
  }
  for (const char* lang : {"C", "CXX", "CUDA", "HIP"}) {
    std::string v = get(env, fmt::format("CMAKE_{}_COMPILER_LAUNCHER", lang));
    if (!v.empty()) add_launcher(out, split_on(v, ';').front());
  }
  add_launcher(out, get(env, "RUSTC_WRAPPER"));
  for (const auto& name : split_on(get(env, "MEMGATE_LAUNCHERS"), ':')) add_launcher(out, name);
  std::string joined;
  for (const auto& n : out) joined += (joined.empty() ? "" : ":") + n;
  return joined;
}

// ---- the fallback's variables (PATH shims and launcher variables) -------

// Where torch (cpp_extension's _find_cuda_home / _find_rocm_home) would
// find a GPU compiler. Without a *_HOME variable torch asks `which`, which
// would now answer with the shim, so the home it would have derived is
// exported instead.
struct GpuCompiler {
  std::string path;  // "" if none
  std::string home;  // the toolkit root to export, "" to leave torch's alone
};

std::string toolkit_root(const std::string& compiler) {
  std::string root = dir_name(dir_name(compiler));
  if (root.size() > 4 && root.compare(root.size() - 4, 4, "/hip") == 0) root = dir_name(root);  // ROCm's hip/bin
  return root;
}

GpuCompiler find_gpu_compiler(const InjectionInput& in, const std::string& name,
                              std::initializer_list<const char*> home_vars, const std::string& fallback_home,
                              const std::function<bool(const std::string&)>& exec_ok) {
  for (const char* var : home_vars) {
    std::string home = get(in.env, var);
    if (home.empty()) continue;
    std::string p = join_path(join_path(home, "bin"), name);
    return {exec_ok(p) ? p : std::string(), ""};  // torch uses this home, found or not
  }
  for (const auto& dir : split_on(get(in.env, "PATH"), ':')) {
    if (dir.empty() || dir == in.shim_dir) continue;
    std::string p = join_path(dir, name);
    if (exec_ok(p)) return {p, toolkit_root(p)};
  }
  std::string p = join_path(join_path(fallback_home, "bin"), name);
  if (exec_ok(p)) return {p, fallback_home};
  return {};
}

std::string launcher_value(const std::string& exe, const std::string& existing) {
  std::string ours = exe + ";wrap;--";
  if (existing.empty()) return ours;
  if (existing.rfind(exe + ";wrap", 0) == 0) return existing;  // already ours (nested run)
  return ours + ";" + existing;
}

void inject_shim_path(const InjectionInput& in, std::map<std::string, std::string>& out) {
  // Without a shim dir PATH, CC and CXX stay as they are: an empty entry
  // first in PATH would mean "the current directory first".
  if (in.shim_dir.empty()) return;
  std::string path = in.shim_dir;
  auto it = in.env.find("PATH");
  std::string old = it == in.env.end() ? "/usr/local/bin:/usr/bin:/bin" : it->second;
  for (const auto& dir : split_on(old, ':')) {
    if (dir == in.shim_dir) continue;
    path += ':';
    path += dir;
  }
  out["PATH"] = path;
  for (auto [var, shim] : {std::pair{"CC", "cc"}, std::pair{"CXX", "c++"}}) {
    auto cc = in.env.find(var);
    if (cc == in.env.end() || cc->second.empty()) out[var] = join_path(in.shim_dir, shim);
    else if (is_shim_name(cc->second)) out[var] = join_path(in.shim_dir, cc->second);
  }
}

void inject_gpu(const InjectionInput& in, std::map<std::string, std::string>& out) {
  auto exec_ok = in.is_executable ? in.is_executable : real_is_executable;
  GpuCompiler nvcc = find_gpu_compiler(in, "nvcc", {"CUDA_HOME", "CUDA_PATH"}, "/usr/local/cuda", exec_ok);
  GpuCompiler hipcc = find_gpu_compiler(in, "hipcc", {"ROCM_HOME", "ROCM_PATH"}, "/opt/rocm", exec_ok);
  if (!nvcc.home.empty()) out["CUDA_HOME"] = nvcc.home;
  if (!hipcc.home.empty()) out["ROCM_HOME"] = hipcc.home;

  std::string prefix = in.memgate_exe + " wrap ";
  std::string user = get(in.env, "PYTORCH_NVCC");
  if (!user.empty()) {
    if (user.rfind(prefix, 0) != 0) out["PYTORCH_NVCC"] = prefix + user;
  } else if (!nvcc.path.empty() && hipcc.path.empty()) {
    out["PYTORCH_NVCC"] = prefix + nvcc.path;
  } else if (nvcc.path.empty() && !hipcc.path.empty()) {
    out["PYTORCH_NVCC"] = prefix + hipcc.path;
  }
}

void inject_shims(const InjectionInput& in, std::map<std::string, std::string>& out) {
  inject_shim_path(in, out);
  inject_gpu(in, out);
  for (const char* lang : {"C", "CXX", "CUDA", "HIP"}) {
    std::string var = fmt::format("CMAKE_{}_COMPILER_LAUNCHER", lang);
    out[var] = launcher_value(in.memgate_exe, get(in.env, var));
  }
}

}  // namespace

Interception choose_interception(const InjectionInput& in) {
  if (!in.untrusted_parts.empty()) return {Mechanism::none, "", in.untrusted_parts};
  if (flag_set(in.env, "MEMGATE_NO_PRELOAD")) return {Mechanism::shims, "", "MEMGATE_NO_PRELOAD is set"};
  std::string lib = in.preload_lib ? *in.preload_lib : find_parts().preload;
  if (lib.empty()) return {Mechanism::shims, "", fmt::format("this memgate has no {}", kPreloadName)};
  if (lib.find_first_of(" :") != std::string::npos)
    return {Mechanism::shims, "", fmt::format("the preload library's path {} has a space or a colon, which LD_PRELOAD "
                                              "cannot carry",
                                              lib)};
  auto exec_ok = in.is_executable ? in.is_executable : real_is_executable;
  std::string command = resolve_command(in, exec_ok);
  if (!command.empty()) {
    if (auto blocked = build_command_blocks_preload(command)) {
      if (blocked->mechanism == Mechanism::preload_and_shims) blocked->preload_lib = lib;
      return *blocked;
    }
  }
  return {Mechanism::preload, lib, ""};
}

std::string interception_note(const Interception& i, bool have_shim_dir) {
  switch (i.mechanism) {
    case Mechanism::preload: return "";
    case Mechanism::none: return fmt::format("compilers not gated: memgate's parts are not safe to use ({})", i.reason);
    case Mechanism::shims:
      if (!have_shim_dir) return fmt::format("compilers not gated: {}, and there is no usable shim directory", i.reason);
      return fmt::format("compilers gated by PATH shims only ({})", i.reason);
    case Mechanism::preload_and_shims:
      if (!have_shim_dir)
        return fmt::format("compilers gated by the preload library alone: {}, and there is no usable shim directory",
                           i.reason);
      return fmt::format("compilers gated by the preload library and PATH shims ({})", i.reason);
  }
  return "";
}

std::map<std::string, std::string> injection_env(const InjectionInput& in) {
  std::map<std::string, std::string> out;
  Interception how = choose_interception(in);
  out["MEMGATE_SOCKET"] = in.socket_path;
  if (in.env.count("MEMGATE_JOB")) out["MEMGATE_JOB"] = "";
  const bool preloading = how.mechanism == Mechanism::preload || how.mechanism == Mechanism::preload_and_shims;
  const bool shims = how.mechanism == Mechanism::shims || how.mechanism == Mechanism::preload_and_shims;
  if (preloading) {
    out["LD_PRELOAD"] = preload_value(how.preload_lib, get(in.env, "LD_PRELOAD"));
    std::string launchers = launcher_names(in.env);
    if (!launchers.empty()) out["MEMGATE_LAUNCHERS"] = launchers;
  } else {
    // No preloading means none: a library an outer `memgate run` put in
    // LD_PRELOAD goes too.
    bool had = false;
    auto rest = preload_entries_but_ours(get(in.env, "LD_PRELOAD"), &had);
    if (had) {
      std::string value;
      for (const auto& entry : rest) value += (value.empty() ? "" : ":") + entry;
      out["LD_PRELOAD"] = value;  // "" unsets it
    }
  }
  if (shims) inject_shims(in, out);
  if (get(in.env, "MAX_JOBS").empty()) {
    long slots = std::max(1, in.slots);
    out["MAX_JOBS"] = std::to_string(std::min(256L, std::max(8L, 2 * slots)));
  }
  return out;
}

std::map<std::string, std::string> current_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    auto eq = kv.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(kv.substr(0, eq)), std::string(kv.substr(eq + 1)));
  }
  return env;
}

void apply_environment(const std::map<std::string, std::string>& changes) {
  for (const auto& [k, v] : changes) {
    if (v.empty()) ::unsetenv(k.c_str());
    else ::setenv(k.c_str(), v.c_str(), 1);
  }
}

}  // namespace memgate
