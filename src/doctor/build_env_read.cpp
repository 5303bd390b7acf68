// The readers of doctor --build-env: where torch.utils.cpp_extension and
// nvcc would look, followed the same way, below a root directory so tests
// can use fixture trees. Programs are run only through BuildEnvSources::run.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include <fmt/core.h>

#include "core/job_class.hpp"
#include "doctor/build_env.hpp"
#include "doctor/command.hpp"
#include "util/fs.hpp"

extern char** environ;

namespace memgate::doctor {

namespace {

// The environment variables a torch/CUDA/ROCm extension build reads.
const char* const kBuildVars[] = {"CUDA_HOME",      "CUDA_PATH",         "ROCM_HOME",   "ROCM_PATH",
                                  "TORCH_CUDA_ARCH_LIST", "FLASH_ATTN_CUDA_ARCHS", "NVCC_THREADS",
                                  "PYTORCH_ROCM_ARCH", "HCC_AMDGPU_TARGET", "MAX_JOBS", "CC", "CXX",
                                  "NVCC_CCBIN",     "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "PYTHON"};

class Reader {
 public:
  explicit Reader(const BuildEnvSources& src) : src_(src) {}

  std::string env(const std::string& name) const {
    auto it = src_.env.find(name);
    return it == src_.env.end() ? "" : it->second;
  }

  // A path as the build sees it, on the disk we read (below root).
  std::string real(const std::string& path) const { return src_.root.empty() ? path : src_.root + path; }

  bool executable(const std::string& path) const {
    return !path.empty() && path[0] == '/' && ::access(real(path).c_str(), X_OK) == 0;
  }

  // `which NAME` in the environment's PATH.
  std::string which(const std::string& name) const {
    if (name.find('/') != std::string::npos) return executable(name) ? name : "";
    const std::string path = env("PATH");
    size_t i = 0;
    while (i <= path.size()) {
      size_t j = path.find(':', i);
      if (j == std::string::npos) j = path.size();
      std::string dir = path.substr(i, j - i);
      if (!dir.empty() && dir[0] == '/' && executable(join_path(dir, name))) return join_path(dir, name);
      i = j + 1;
    }
    return "";
  }

  std::optional<std::string> run(std::vector<std::string> argv) const {
    if (!src_.run || argv.empty()) return std::nullopt;
    return src_.run(argv);
  }

  std::optional<std::string> read(const std::string& path) const { return read_file(real(path)); }
  bool exists(const std::string& path) const { return path_exists(real(path)); }

 private:
  const BuildEnvSources& src_;
};

std::string parent_dir(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return "";
  return slash == 0 ? "/" : path.substr(0, slash);
}

std::string last_word(const std::string& s) {
  auto end = s.find_last_not_of(" \t");
  if (end == std::string::npos) return "";
  auto start = s.find_last_of(" \t", end);
  return s.substr(start == std::string::npos ? 0 : start + 1, end - (start == std::string::npos ? 0 : start + 1) + 1);
}

// torch's _find_cuda_home: CUDA_HOME or CUDA_PATH, else nvcc in PATH,
// else /usr/local/cuda.
void read_cuda(const Reader& r, BuildEnv& e) {
  std::string home, source;
  auto pick = [&](std::string h, const char* from) {
    if (!home.empty() || h.empty()) return;
    home = std::move(h);
    source = from;
  };
  pick(r.env("CUDA_HOME"), "CUDA_HOME");
  pick(r.env("CUDA_PATH"), "CUDA_PATH");
  if (std::string nvcc = r.which("nvcc"); !nvcc.empty()) pick(parent_dir(parent_dir(nvcc)), "nvcc in PATH");
  if (r.exists("/usr/local/cuda")) pick("/usr/local/cuda", "/usr/local/cuda");
  if (home.empty() || !r.executable(home + "/bin/nvcc")) return;
  e.cuda_home = home;
  e.cuda_home_source = source;
  e.nvcc_path = home + "/bin/nvcc";
  if (auto out = r.run({r.real(e.nvcc_path), "--version"})) e.nvcc = parse_nvcc_version(*out);
  for (const char* rel : {"/include/crt/host_config.h", "/targets/x86_64-linux/include/crt/host_config.h"}) {
    if (auto h = r.read(home + rel)) {
      e.host_limits = parse_host_config(*h);
      break;
    }
  }
  // nvcc's host compiler: NVCC_CCBIN, else CC (torch passes it as -ccbin),
  // else gcc in PATH.
  std::string cc = r.env("NVCC_CCBIN");
  if (cc.empty()) cc = last_word(r.env("CC"));
  if (cc.empty()) cc = "gcc";
  e.host_cc = r.which(cc);
  if (e.host_cc.empty()) {
    e.host_cc = cc;
    return;
  }
  if (auto out = r.run({r.real(e.host_cc), "--version"})) e.host_cc_version = parse_cc_version(*out);
}

// torch's _find_rocm_home: ROCM_HOME or ROCM_PATH, else hipcc in PATH,
// else /opt/rocm.
void read_rocm(const Reader& r, BuildEnv& e) {
  std::string home, source;
  auto pick = [&](std::string h, const char* from) {
    if (!home.empty() || h.empty()) return;
    home = std::move(h);
    source = from;
  };
  pick(r.env("ROCM_HOME"), "ROCM_HOME");
  pick(r.env("ROCM_PATH"), "ROCM_PATH");
  const std::string in_path = r.which("hipcc");
  if (!in_path.empty()) pick(parent_dir(parent_dir(in_path)), "hipcc in PATH");
  if (r.executable("/opt/rocm/bin/hipcc")) pick("/opt/rocm", "/opt/rocm");
  e.rocm_path = home;
  e.rocm_source = source;
  e.hipcc_path = !home.empty() && r.executable(home + "/bin/hipcc") ? home + "/bin/hipcc" : in_path;
}

std::string find_python(const Reader& r, const BuildEnvSources& src) {
  for (const std::string& p : {src.python, r.env("PYTHON")}) {
    if (p.empty()) continue;
    return r.which(p);
  }
  if (std::string p = r.which("python3"); !p.empty()) return p;
  return r.which("python");
}

// The interpreter's sys.path (one bounded run of it), then torch's
// version.py and the modules' directories on it, read as files.
void read_python(const Reader& r, const BuildEnvSources& src, BuildEnv& e) {
  e.python = find_python(r, src);
  if (e.python.empty()) return;
  if (auto out = r.run({r.real(e.python), "-c", "import sys\nfor p in sys.path:\n    p and print(p)"})) {
    size_t i = 0;
    while (i < out->size()) {
      size_t j = out->find('\n', i);
      if (j == std::string::npos) j = out->size();
      std::string dir = out->substr(i, j - i);
      if (!dir.empty() && dir[0] == '/') e.sys_path.push_back(dir);
      i = j + 1;
    }
  }
  for (const char* name : {"setuptools", "wheel", "packaging", "psutil"}) e.modules[name] = "";
  for (const std::string& dir : e.sys_path) {
    for (auto& [name, found] : e.modules) {
      if (!found.empty()) continue;
      const std::string pkg = join_path(dir, name);
      if (r.exists(pkg + "/__init__.py") || r.exists(pkg + ".py")) found = pkg;
    }
    if (!e.torch) {
      if (auto text = r.read(join_path(dir, "torch/version.py"))) {
        e.torch = parse_torch_version_py(*text);
        if (e.torch) e.torch->dir = join_path(dir, "torch");
      }
    }
  }
}

// Is the project in src.project_dir a torch extension? An explicit
// --python says it is; else the first packaging file that names torch.
void read_project(const Reader& r, const BuildEnvSources& src, BuildEnv& e) {
  if (src.project_dir.empty()) return;
  if (!src.python.empty()) {
    e.torch_why = "--python was given";
    return;
  }
  for (const char* name : {"setup.py", "pyproject.toml", "setup.cfg", "requirements.txt"}) {
    auto text = r.read(join_path(src.project_dir, name));
    if (text && text->find("torch") != std::string::npos) {
      e.torch_why = fmt::format("{} names torch", join_path(src.project_dir, name));
      return;
    }
  }
  e.torch_project = false;
  e.torch_why = fmt::format("no setup.py, pyproject.toml, setup.cfg or requirements.txt in {} names torch",
                            src.project_dir);
}

void read_history(const BuildEnvSources& src, BuildEnv& e) {
  if (!src.history_jobs) return;
  for (JobRecord& j : src.history_jobs()) {
    const JobClass klass = parse_job_class(j.key.klass);
    if (klass.tool == "nvcc" && klass.is_compile() && !klass.remote()) e.history_nvcc.push_back(std::move(j));
  }
}

}  // namespace

BuildEnv read_build_env(const BuildEnvSources& src) {
  Reader r(src);
  BuildEnv e;
  for (const char* v : kBuildVars) {
    if (auto it = src.env.find(v); it != src.env.end()) e.env[v] = it->second;
  }
  read_cuda(r, e);
  read_rocm(r, e);
  read_python(r, src, e);
  read_project(r, src, e);
  e.ninja_path = r.which("ninja");
  e.cpus = src.cpus;
  e.slots = src.slots;
  e.available = src.available;
  e.budget = src.budget;
  read_history(src, e);
  e.measured_peaks = src.measured_peaks;
  return e;
}

BuildEnvSources real_sources(const std::string& python) {
  BuildEnvSources s;
  for (char** p = environ; p && *p; ++p) {
    std::string kv = *p;
    auto eq = kv.find('=');
    if (eq != std::string::npos) s.env[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
  s.run = [](const std::vector<std::string>& argv) -> std::optional<std::string> {
    auto out = run_captured(argv, 10.0, 1 << 20);
    if (!out || out->timed_out) return std::nullopt;
    return out->output;
  };
  s.python = python;
  s.project_dir = current_dir();
  long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  s.cpus = cpus > 0 ? static_cast<int>(cpus) : 1;
  return s;
}

}  // namespace memgate::doctor
