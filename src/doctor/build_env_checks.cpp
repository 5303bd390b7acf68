// doctor --build-env's rules: what in a BuildEnv stops or slows a torch
// extension build, each with what to do. Pure.
#include <algorithm>

#include <fmt/core.h>

#include "doctor/build_env.hpp"

namespace memgate::doctor {

namespace {

void check_cuda(const BuildEnv& e, std::vector<Check>& out) {
  if (auto home = e.env.find("CUDA_HOME"); home != e.env.end() && !home->second.empty() && e.cuda_home != home->second) {
    out.push_back({"cuda_home", "error", fmt::format("CUDA_HOME={} has no bin/nvcc", home->second),
                   "point CUDA_HOME at the CUDA toolkit (the directory with bin/nvcc), or unset it"});
  }
  if (e.nvcc_path.empty()) {
    out.push_back({"nvcc", "note", "no nvcc (CUDA_HOME, CUDA_PATH, PATH, /usr/local/cuda): CUDA extensions cannot be built here",
                   e.torch && e.torch->cuda ? "install the CUDA toolkit and set CUDA_HOME" : ""});
    return;
  }
  out.push_back({"nvcc", e.nvcc ? "ok" : "warn",
                 fmt::format("nvcc {} ({}; CUDA home {} from {})", e.nvcc ? e.nvcc->text : "of unknown version",
                             e.nvcc_path, e.cuda_home, e.cuda_home_source),
                 e.nvcc ? "" : "`nvcc --version` did not say its release; check the toolkit installation"});
}

void check_torch_cuda(const BuildEnv& e, std::vector<Check>& out) {
  if (!e.torch) return;
  const TorchVersion& t = *e.torch;
  if (t.cuda && e.nvcc) {
    auto tv = parse_version(*t.cuda);
    if (tv && tv->major != e.nvcc->major) {
      out.push_back({"torch_cuda", "error",
                     fmt::format("torch {} was built for CUDA {}, but nvcc is {}: torch.utils.cpp_extension refuses "
                                 "to build CUDA extensions (\"The detected CUDA version ({}) mismatches the version "
                                 "that was used to compile PyTorch ({})\")",
                                 t.version, *t.cuda, e.nvcc->text, e.nvcc->text, *t.cuda),
                     fmt::format("install a torch built for CUDA {}.x, or set CUDA_HOME to a CUDA {}.x toolkit",
                                 e.nvcc->major, tv->major)});
    } else if (tv && tv->minor != e.nvcc->minor) {
      out.push_back({"torch_cuda", "warn",
                     fmt::format("torch {} was built for CUDA {}, nvcc is {}: torch only warns about a minor "
                                 "version difference, but the extension may not load on an older driver",
                                 t.version, *t.cuda, e.nvcc->text),
                     fmt::format("prefer a toolkit of CUDA {}", *t.cuda)});
    } else {
      out.push_back({"torch_cuda", "ok", fmt::format("torch built for CUDA {}, nvcc {}", *t.cuda, e.nvcc->text), ""});
    }
  } else if (t.cuda) {
    out.push_back({"torch_cuda", "error", fmt::format("torch {} was built for CUDA {}, but there is no nvcc", t.version, *t.cuda),
                   fmt::format("install a CUDA {} toolkit and set CUDA_HOME to it", *t.cuda)});
  } else if (!t.hip && !e.nvcc_path.empty()) {
    out.push_back({"torch_cuda", "warn",
                   fmt::format("torch {} is CPU-only (torch.version.cuda is None): C++ extensions build, but a "
                               "CUDAExtension (flash-attn) does not: torch 1.13 stops it in _check_cuda_version with "
                               "\"TypeError: expected string or bytes-like object, got 'NoneType'\", and there are "
                               "no CUDA torch libraries to link against",
                               t.version),
                   "install a CUDA build of torch for CUDA " +
                       (e.nvcc ? fmt::format("{}.x", e.nvcc->major) : std::string("this toolkit's version"))});
  }
  if (t.hip && e.hipcc_path.empty()) {
    out.push_back({"torch_hip", "error", fmt::format("torch {} was built for ROCm (HIP {}), but there is no hipcc", t.version, *t.hip),
                   "install ROCm's hipcc and set ROCM_PATH (or ROCM_HOME) to it"});
  } else if (t.hip) {
    out.push_back({"torch_hip", "ok", fmt::format("torch built for HIP {}, hipcc {}", *t.hip, e.hipcc_path), ""});
  }
}

void check_host_compiler(const BuildEnv& e, std::vector<Check>& out) {
  if (e.nvcc_path.empty()) return;
  if (!e.host_cc_version) {
    out.push_back({"host_compiler", "warn", fmt::format("cannot tell the version of the host compiler '{}'", e.host_cc),
                   "nvcc needs a host C++ compiler: install g++ (or set NVCC_CCBIN / CC)"});
    return;
  }
  const HostCompiler& cc = *e.host_cc_version;
  const std::optional<int> max = cc.clang ? e.host_limits.clang_max : e.host_limits.gcc_max;
  const char* name = cc.clang ? "clang" : "gcc";
  const std::string nvcc = e.nvcc ? e.nvcc->text : "?";
  if (!max) {
    out.push_back({"host_compiler", "note",
                   fmt::format("host compiler {} {} ({}); nvcc's limit for {} is unknown (no crt/host_config.h)", name,
                               cc.version.text, e.host_cc, name),
                   ""});
  } else if (cc.version.major > *max) {
    out.push_back({"host_compiler", "error",
                   fmt::format("host compiler {} {} ({}) is newer than nvcc {} supports ({} {} at most, from "
                               "crt/host_config.h): every nvcc job stops with \"unsupported GNU version\"",
                               name, cc.version.text, e.host_cc, nvcc, name, *max),
                   fmt::format("install {}-{} and set NVCC_CCBIN (or CC) to it, or use a newer CUDA toolkit", name, *max)});
  } else {
    out.push_back({"host_compiler", "ok",
                   fmt::format("host compiler {} {} ({}); nvcc {} accepts {} up to {}", name, cc.version.text,
                               e.host_cc, nvcc, name, *max),
                   ""});
  }
}

// Debian's own python takes Debian's packages; any other (a venv, pyenv,
// conda) its own pip.
std::string install_hint(const std::string& python, const std::string& module) {
  if (python.rfind("/usr/bin/", 0) == 0) return fmt::format("install it for this python: apt install python3-{}", module);
  return fmt::format("install it for this python: {} -m pip install {}", python, module);
}

void check_python(const BuildEnv& e, std::vector<Check>& out) {
  if (e.python.empty()) {
    out.push_back({"python", "note", "no python3 found (PYTHON, PATH): skipping torch and module checks",
                   "run with --python PATH to look at another interpreter"});
    return;
  }
  if (!e.torch) {
    out.push_back({"torch", "warn", fmt::format("torch is not installed for {}", e.python),
                   "install torch for this python (Debian: apt install python3-torch for /usr/bin/python3), or "
                   "point --python at the interpreter that has it"});
  } else {
    out.push_back({"torch", "ok",
                   fmt::format("torch {} for {} (CUDA {}, HIP {}; {})", e.torch->version, e.python,
                               e.torch->cuda.value_or("none"), e.torch->hip.value_or("none"), e.torch->dir),
                   ""});
  }
  struct Need {
    const char* name;
    const char* level;
    const char* why;
  };
  static const Need kNeeds[] = {
      {"setuptools", "error", "setup.py builds need it (pip --no-build-isolation uses the installed one)"},
      {"wheel", "error", "pip --no-build-isolation needs it to build the wheel (flash-attn's setup.py imports it)"},
      {"packaging", "error", "flash-attn's setup.py imports it to compare versions"},
      {"psutil", "warn", "flash-attn's setup.py reads free memory with it to pick MAX_JOBS"},
  };
  for (const Need& n : kNeeds) {
    auto it = e.modules.find(n.name);
    if (it != e.modules.end() && !it->second.empty()) {
      out.push_back({std::string("module_") + n.name, "ok", fmt::format("{} ({})", n.name, it->second), ""});
    } else {
      out.push_back({std::string("module_") + n.name, n.level,
                     fmt::format("{} is not importable by {}: {}", n.name, e.python, n.why),
                     install_hint(e.python, n.name)});
    }
  }
}

void check_ninja_and_jobs(const BuildEnv& e, std::vector<Check>& out) {
  if (e.ninja_path.empty()) {
    out.push_back({"ninja", "error",
                   "no ninja in PATH: torch.utils.cpp_extension falls back to the distutils backend and compiles one "
                   "file at a time (hours instead of minutes; MAX_JOBS is ignored, and memgate has one job at a time "
                   "to run)",
                   "install ninja (Debian: apt install ninja-build)"});
  } else {
    out.push_back({"ninja", "ok", fmt::format("ninja {}", e.ninja_path), ""});
  }
  const int memgate_max_jobs = std::min(256, std::max(8, 2 * e.slots));
  if (auto mj = e.env.find("MAX_JOBS"); mj != e.env.end() && !mj->second.empty()) {
    out.push_back({"max_jobs", "note",
                   fmt::format("MAX_JOBS={} is set: torch's ninja runs at most that many compiles; memgate run keeps "
                               "it (it sets MAX_JOBS={} only when you did not)",
                               mj->second, memgate_max_jobs),
                   "unset MAX_JOBS under memgate run and let memgate decide by memory"});
  } else {
    out.push_back({"max_jobs", "ok",
                   fmt::format("MAX_JOBS is not set: memgate run sets MAX_JOBS={} and admits compiles by memory", memgate_max_jobs),
                   ""});
  }
}

void check_flash_attn(const BuildEnv& e, std::vector<Check>& out) {
  auto p = plan_flash_attn(e);
  if (!p) return;
  if (e.budget > 0 && p->peak_max > e.budget) {
    out.push_back({"flash_attn_max_jobs", "warn",
                   fmt::format("flash-attn's heaviest job with these settings needs {} ({} targets, {} at once), more "
                               "than a build may use here ({}): no job count avoids the OOM killer, memgate's "
                               "included (it runs such a job alone)",
                               format_bytes(p->peak_max), p->targets.size(), p->pipelines, format_bytes(e.budget)),
                   fmt::format("compile fewer targets at once: NVCC_THREADS=1 (about {} per job), and "
                               "FLASH_ATTN_CUDA_ARCHS with only the GPUs you have",
                               format_bytes(p->peak_max / std::max(1, p->pipelines)))});
    return;
  }
  if (p->formula_worst > e.available) {
    out.push_back({"flash_attn_max_jobs", "warn",
                   fmt::format("flash-attn's formula picks MAX_JOBS={}; {} of its heaviest jobs ({} each) need {}, "
                               "and {} is available: a static job count here can run out of memory",
                               p->formula_jobs, p->formula_jobs, format_bytes(p->peak_max),
                               format_bytes(p->formula_worst), format_bytes(e.available)),
                   fmt::format("build it under memgate run: it runs at most {} of them at once when they are "
                               "heavy, and more while they are light",
                               p->memgate_jobs)});
  } else {
    out.push_back({"flash_attn_max_jobs", "ok",
                   fmt::format("flash-attn's formula picks MAX_JOBS={}; even {} of its heaviest jobs ({}) fit the {} available",
                               p->formula_jobs, p->formula_jobs, format_bytes(p->formula_worst), format_bytes(e.available)),
                   ""});
  }
}

}  // namespace

std::vector<Check> check_build_env(const BuildEnv& e) {
  std::vector<Check> out;
  check_cuda(e, out);
  check_host_compiler(e, out);
  if (!e.torch_project) {
    out.push_back({"torch", "note", fmt::format("not a torch extension: {}; torch, Python module, ninja and "
                                                "flash-attn checks skipped", e.torch_why),
                   "run it in the extension's source directory, or give --python"});
    return out;
  }
  check_python(e, out);
  check_torch_cuda(e, out);
  check_ninja_and_jobs(e, out);
  check_flash_attn(e, out);
  return out;
}

bool has_error(const std::vector<Check>& checks) {
  for (const Check& c : checks)
    if (c.level == "error") return true;
  return false;
}

}  // namespace memgate::doctor
