#include "wrap/shims.hpp"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

#include <fmt/core.h>

#include "util/fs.hpp"

extern char** environ;

namespace memgate {
namespace {

constexpr std::string_view kMarkerText =
    "memgate shim directory: each compiler name here is a symlink to memgate,\n"
    "which gates the call when run under `memgate run` and otherwise runs the real compiler.\n";

// mkdir -p with 0700 for what it creates.
Status make_dirs(const std::string& dir) {
  std::string partial;
  std::size_t pos = 0;
  while (pos != std::string::npos) {
    pos = dir.find('/', pos + 1);
    partial = dir.substr(0, pos);
    if (partial.empty()) continue;
    if (::mkdir(partial.c_str(), 0700) != 0 && errno != EEXIST)
      return Error{fmt::format("cannot create {}: {}", partial, std::strerror(errno))};
  }
  return ok_status();
}

Status check_ownership(const std::string& dir) {
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0) return Error{fmt::format("cannot stat {}: {}", dir, std::strerror(errno))};
  if (!S_ISDIR(st.st_mode)) return Error{fmt::format("{} is not a directory", dir)};
  // Anyone who can write here could plant a "compiler" that every build
  // then runs.
  if (st.st_uid != ::geteuid() || (st.st_mode & 022) != 0)
    return Error{fmt::format("refusing shim directory {}: it must be owned by you and not writable by others", dir)};
  return ok_status();
}

Status write_marker(const std::string& dir) {
  std::string marker = join_path(dir, kShimMarker);
  if (path_exists(marker)) return ok_status();
  std::string tmp = fmt::format("{}.{}.tmp", marker, ::getpid());
  if (auto w = write_file(tmp, kMarkerText, true); !w) return w;
  if (::rename(tmp.c_str(), marker.c_str()) != 0) {
    ::unlink(tmp.c_str());
    return Error{fmt::format("cannot create {}: {}", marker, std::strerror(errno))};
  }
  return ok_status();
}

std::optional<std::string> read_link(const std::string& path) {
  std::vector<char> buf(PATH_MAX + 1);
  ssize_t n = ::readlink(path.c_str(), buf.data(), buf.size());
  if (n < 0 || static_cast<std::size_t>(n) >= buf.size()) return std::nullopt;
  return std::string(buf.data(), static_cast<std::size_t>(n));
}

Status link_shim(const std::string& dir, std::string_view name, const std::string& exe) {
  std::string path = join_path(dir, name);
  if (read_link(path) == exe) return ok_status();
  std::string tmp = fmt::format("{}/.{}.{}.tmp", dir, name, ::getpid());
  ::unlink(tmp.c_str());
  if (::symlink(exe.c_str(), tmp.c_str()) != 0)
    return Error{fmt::format("cannot create {}: {}", tmp, std::strerror(errno))};
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp.c_str());
    return Error{fmt::format("cannot install shim {}: {}", path, std::strerror(e))};
  }
  return ok_status();
}

std::string get(const std::map<std::string, std::string>& env, const std::string& key) {
  auto it = env.find(key);
  return it == env.end() ? std::string() : it->second;
}

std::vector<std::string> split_colon(const std::string& s) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    auto colon = s.find(':', start);
    out.push_back(s.substr(start, colon == std::string::npos ? std::string::npos : colon - start));
    if (colon == std::string::npos) return out;
    start = colon + 1;
  }
}

std::string dir_name(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

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
  for (const auto& dir : split_colon(get(in.env, "PATH"))) {
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

void inject_compilers(const InjectionInput& in, std::map<std::string, std::string>& out) {
  for (auto [var, shim] : {std::pair{"CC", "cc"}, std::pair{"CXX", "c++"}}) {
    auto it = in.env.find(var);
    if (it == in.env.end() || it->second.empty()) out[var] = join_path(in.shim_dir, shim);
    else if (is_shim_name(it->second)) out[var] = join_path(in.shim_dir, it->second);
  }
}

void inject_gpu(const InjectionInput& in, std::map<std::string, std::string>& out) {
  auto exec_ok = in.is_executable ? in.is_executable : [](const std::string& p) {
    struct stat st;
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
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

}  // namespace

bool is_shim_name(std::string_view name) {
  return std::find(kShimNames.begin(), kShimNames.end(), name) != kShimNames.end();
}

bool is_shim_dir(const std::string& dir) {
  struct stat st;
  return ::stat(join_path(dir, kShimMarker).c_str(), &st) == 0;
}

std::string default_shim_dir() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  if (xdg && xdg[0] == '/') return join_path(xdg, "memgate/shims");
  const char* home = std::getenv("HOME");
  if (home && home[0] == '/') return join_path(home, ".cache/memgate/shims");
  if (passwd* pw = ::getpwuid(::geteuid()); pw && pw->pw_dir && pw->pw_dir[0] == '/')
    return join_path(pw->pw_dir, ".cache/memgate/shims");
  return fmt::format("/tmp/memgate-{}/shims", ::geteuid());
}

Result<std::string> ensure_shim_dir(const std::string& dir, const std::string& memgate_exe) {
  if (dir.empty() || dir[0] != '/') return Error{fmt::format("shim directory must be absolute: '{}'", dir)};
  if (memgate_exe.empty() || memgate_exe[0] != '/')
    return Error{fmt::format("memgate's path must be absolute: '{}'", memgate_exe)};
  if (auto s = make_dirs(dir); !s) return Error{s.error()};
  if (auto s = check_ownership(dir); !s) return Error{s.error()};
  if (auto s = write_marker(dir); !s) return Error{s.error()};
  for (auto name : kShimNames)
    if (auto s = link_shim(dir, name, memgate_exe); !s) return Error{s.error()};
  return dir;
}

std::map<std::string, std::string> injection_env(const InjectionInput& in) {
  std::map<std::string, std::string> out;
  // Without a shim dir (it could not be created) PATH, CC and CXX stay as
  // they are: an empty entry first in PATH would mean "the current
  // directory first".
  if (!in.shim_dir.empty()) {
    std::string path = in.shim_dir;
    auto it = in.env.find("PATH");
    std::string old = it == in.env.end() ? "/usr/local/bin:/usr/bin:/bin" : it->second;
    for (const auto& dir : split_colon(old)) {
      if (dir == in.shim_dir) continue;
      path += ':';
      path += dir;
    }
    out["PATH"] = path;
    inject_compilers(in, out);
  }
  out["MEMGATE_SOCKET"] = in.socket_path;
  if (in.env.count("MEMGATE_JOB")) out["MEMGATE_JOB"] = "";
  inject_gpu(in, out);
  for (const char* lang : {"C", "CXX", "CUDA", "HIP"}) {
    std::string var = fmt::format("CMAKE_{}_COMPILER_LAUNCHER", lang);
    out[var] = launcher_value(in.memgate_exe, get(in.env, var));
  }
  if (get(in.env, "MAX_JOBS").empty()) {
    int slots = std::max(1, in.slots);
    out["MAX_JOBS"] = std::to_string(std::min(256, std::max(8, 2 * slots)));
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
