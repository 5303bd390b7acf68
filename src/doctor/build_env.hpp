// `memgate doctor --build-env`: what a torch/CUDA/ROCm extension build
// (pip install flash-attn --no-build-isolation) will meet here, found
// before the build instead of one failed build at a time.
//
// Three layers, as for the kernel facts in platform/:
//  - pure parsers of what the tools print and the files they install
//    (`nvcc --version`, `gcc --version`, CUDA's crt/host_config.h, torch's
//    version.py, the arch lists in the environment);
//  - pure rules over a BuildEnv (check_build_env, plan_flash_attn), which
//    the unit tests drive with hand-made values and fixture trees;
//  - a thin reader (read_build_env) that takes a root directory, the
//    environment and a way to run programs, so tests point it at
//    tests/fixtures/build_env/<scenario>/ with canned program output.
// Nothing here shells out to pip or imports torch. What the build itself
// taught memgate comes in as values: the nvcc jobs of its history, and a
// way to ask measurements for a job's peak (MeasuredPeaks); the CLI wires
// history and plan's measured tables in, so doctor depends on neither.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "core/job.hpp"

namespace memgate::doctor {

struct Version {
  int major = 0, minor = 0, patch = 0;
  std::string text;  // as printed, e.g. "13.0.88" or "12.2.0"
};

// "Cuda compilation tools, release 13.0, V13.0.88" -> 13.0.88.
std::optional<Version> parse_nvcc_version(std::string_view output);
// The host compiler's `--version`: "gcc (Debian 12.2.0-14) 12.2.0" or
// "Debian clang version 15.0.6" (`clang` set), or a bare `-dumpfullversion`.
struct HostCompiler {
  Version version;
  bool clang = false;
};
std::optional<HostCompiler> parse_cc_version(std::string_view output);
// The newest host compiler majors CUDA's crt/host_config.h accepts:
// `#if __GNUC__ > 15` -> gcc 15; `(__clang_major__ >= 21)` -> clang 20.
struct HostLimits {
  std::optional<int> gcc_max;
  std::optional<int> clang_max;
};
HostLimits parse_host_config(std::string_view header);
// "1.2.3" or "12.1" (missing parts are 0).
std::optional<Version> parse_version(std::string_view text);

// torch/version.py: `__version__ = '1.13.0a0'`, `cuda = '12.1'` or
// `cuda = None`, `hip = None`.
struct TorchVersion {
  std::string version;
  std::optional<std::string> cuda, hip;
  std::string dir;  // the torch package directory it was read from
};
std::optional<TorchVersion> parse_torch_version_py(std::string_view text);

// TORCH_CUDA_ARCH_LIST ("8.0;8.6 9.0+PTX") -> {"sm_80", "sm_86", "sm_90",
// "compute_90"}; names ("Ampere") are kept as they are.
std::vector<std::string> parse_torch_cuda_arch_list(std::string_view value);
// flash-attn 2.8's targets for FLASH_ATTN_CUDA_ARCHS ("80;90;100;110;120",
// its default) with this nvcc: each listed arch the toolkit can build (90
// from CUDA 11.8, 100 and 120 from 12.8, 110 from 13.0, earlier as 101),
// plus PTX for the newest. CUDA 13 and the default: six targets, the
// "all6" of the shipped measurements.
std::vector<std::string> flash_attn_targets(std::string_view archs, const Version& nvcc);
// PYTORCH_ROCM_ARCH ("gfx90a;gfx942") -> {"gfx90a", "gfx942"}.
std::vector<std::string> parse_rocm_arch_list(std::string_view value);

// flash-attn's MAX_JOBS (setup.py, NinjaBuildExtension):
// max(1, min(cpus / 2, floor(available GiB / (5 × nvcc threads)))).
int flash_attn_formula_jobs(int cpus, Bytes available, int nvcc_threads);

// Each job's expected peak for nvcc --threads `threads` over `targets`
// archs, from measurements (plan's measured tables); empty without any.
using MeasuredPeaks = std::function<std::vector<Bytes>(int threads, int targets)>;

// What the reader found.
struct BuildEnv {
  std::map<std::string, std::string> env;  // the variables that matter, as set
  // CUDA.
  std::string cuda_home;                   // "" = no toolkit found
  std::string cuda_home_source;            // "CUDA_HOME", "CUDA_PATH", "nvcc in PATH", "/usr/local/cuda"
  std::string nvcc_path;
  std::optional<Version> nvcc;
  HostLimits host_limits;                  // from $cuda_home/include/crt/host_config.h
  std::string host_cc;                     // NVCC_CCBIN, else CC, else gcc in PATH
  std::optional<HostCompiler> host_cc_version;
  // ROCm.
  std::string rocm_path, rocm_source, hipcc_path;
  // Python and torch.
  std::string python;                      // the interpreter looked at ("" = none found)
  std::vector<std::string> sys_path;       // its module search path
  std::optional<TorchVersion> torch;
  std::map<std::string, std::string> modules;  // packaging, wheel, psutil, setuptools -> dir ("" = missing)
  std::string ninja_path;                  // "" = not in PATH
  // The machine, for the job counts.
  int cpus = 1;                            // os.cpu_count(): online CPUs
  int slots = 1;                           // memgate's CPU slots (usable cores)
  Bytes available = 0;                     // MemAvailable (what flash-attn's psutil reads)
  Bytes budget = 0;                        // memgate's budget
  // nvcc jobs from history (tool nvcc, compile), for the expected peak.
  std::vector<JobRecord> history_nvcc;
  // The flash-attn measurements, for the expected peak otherwise.
  MeasuredPeaks measured_peaks;
  // Whether the project is a torch extension: --python was given, or a
  // setup.py, pyproject.toml, setup.cfg or requirements.txt of the project
  // directory names torch (torch_why says which). Without one, the torch,
  // Python module, ninja, MAX_JOBS and flash-attn checks stay quiet.
  bool torch_project = true;
  std::string torch_why;
};

// What a flash-attn build with these settings would do here.
struct FlashAttnPlan {
  std::vector<std::string> targets;        // -gencode targets
  int nvcc_threads = 4;                    // NVCC_THREADS, flash-attn's default 4
  int pipelines = 1;                       // min(threads, targets): cicc at once per job
  Bytes peak_median = 0, peak_max = 0;     // expected peak per nvcc job
  std::string peak_source;                 // "history (N jobs of KLASS)" or the measurements
  int formula_jobs = 1;                    // flash-attn's MAX_JOBS
  Bytes formula_worst = 0;                 // formula_jobs × peak_max
  int memgate_cpu_jobs = 1;                // slots / pipelines: the CPU weight's limit
  int memgate_heavy_jobs = 1;              // budget / peak_max: the heaviest jobs that fit at once (0: not one)
  int memgate_jobs = 1;                    // min of the two, at least 1 (one job always runs): heavy jobs at once
  int memgate_max_jobs = 8;                // the MAX_JOBS memgate sets: min(256, max(8, 2 × slots))
};

// Targets, expected peak and job counts; nullopt without measurements or
// history to estimate from.
std::optional<FlashAttnPlan> plan_flash_attn(const BuildEnv& e);

struct Check {
  std::string key;    // "torch_cuda", "ninja", "host_compiler", "module_wheel", ...
  std::string level;  // "ok", "note", "warn" or "error"
  std::string what;   // what was found
  std::string fix;    // what to do ("" when nothing)
};

// The rules: mismatches flagged with what to do.
std::vector<Check> check_build_env(const BuildEnv& e);

// Where the reader looks: file paths are read below `root` ("" = /), the
// environment comes from `env`, and programs are run through `run` (argv
// -> stdout and stderr, nullopt if it could not run), bounded in time.
struct BuildEnvSources {
  std::string root;
  std::map<std::string, std::string> env;
  std::function<std::optional<std::string>(const std::vector<std::string>&)> run;
  std::string python;         // --python; "" = $PYTHON, else python3 in PATH
  std::string project_dir;    // where the build runs; "" = take it as a torch extension
  // The jobs memgate's history would predict from (unset: none); the
  // reader keeps the nvcc compiles.
  std::function<std::vector<JobRecord>()> history_jobs;
  MeasuredPeaks measured_peaks;
  // The machine, as doctor found it (copied into BuildEnv).
  int cpus = 1, slots = 1;
  Bytes available = 0, budget = 0;
};

BuildEnv read_build_env(const BuildEnvSources& src);

// The real machine: /, this process's environment, programs run with a
// 10 s bound, online CPUs. The caller fills history_jobs, measured_peaks,
// slots, available and budget.
BuildEnvSources real_sources(const std::string& python);

// An `error` finding: what `doctor --build-env` exits 1 for.
bool has_error(const std::vector<Check>& checks);

// `memgate doctor --build-env` text, and the `build_env` JSON object.
std::string render_build_env_text(const BuildEnv& e);
nlohmann::json build_env_json(const BuildEnv& e);

}  // namespace memgate::doctor
