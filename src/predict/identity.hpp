// What a compiler command line says about the job it starts: the tool, a
// stable identity, its class for online learning, and its CPU weight.
//
// How an identity is made from a command line (its stored form, and the
// class's, are core/job_class.hpp's: TOOL:MODE[:SOURCE][->OUTPUT][[ARCH,...]]):
//
//   nvcc:compile:src/flash_fwd_hdim128_fp16_sm80.cu->csrc/flash_attn/src/flash_fwd_hdim128_fp16_sm80.o[sm_80]
//   c++:compile:src/a.cpp->CMakeFiles/app.dir/src/a.cpp.o
//   c++:link->app
//
// - TOOL is the real program's basename with launchers (ccache, sccache,
//   distcc, icecc, buildcache, `memgate wrap --`) skipped, and version and
//   target-triple decorations removed (x86_64-linux-gnu-g++-12 -> g++).
// - MODE is compile (-c, -S, nvcc -dc/-ptx/-cubin/-fatbin), preprocess
//   (-E, -M without -MD), link (anything else), or probe: a version
//   query (is_version_query) or a configure-time check of a build system
//   (CMake try_compile and compiler identification under
//   CMakeFiles/CMakeScratch, CMakeFiles/CMakeTmp, TryCompile-*,
//   CMakeFiles/<version>/CompilerId*; Meson's meson-private/tmp*;
//   autoconf's conftest.c, conftest.cpp, conftest.o, conftest). Probes
//   are gated and recorded like any job but never learned into class
//   statistics (Predictor::learn): a CMake check compiles 4 MiB where the
//   tree's real compiles take 60 MiB, and would drag their estimate down
//   10x. Preprocess-only jobs have their own klass for the same reason.
// - OUTPUT is the -o path relative to the build directory (the job's cwd)
//   when it lies inside it, which is what build systems generate; a build
//   directory moved elsewhere keeps its identities. An output outside the
//   cwd is reduced to its last three components after temp directories
//   are cut away.
// - SOURCE is the main input's last two path components (its directory and
//   name) after temp directories are cut away and a relative path is
//   resolved against cwd. Absolute source paths therefore do not tie the
//   identity to where the tree is checked out (a CMake build directory may
//   move, or a pip temp checkout be a different random dir each time), and
//   the directory still tells apart same-named files of recursive makes.
// - ARCH is the sorted, de-duplicated list of GPU targets (nvcc -gencode
//   code= values, -arch/-code, --offload-arch, --cuda-gpu-arch). Host
//   -march flags are not part of it: they rarely differ within a tree and
//   barely change memory.
// - Temp paths are recognised by component: /tmp, /var/tmp, /dev/shm
//   prefixes and $TMPDIR; pip's pip-req-build-*, pip-install-*,
//   pip-build-env-* (any pip-*); tmpXXXXXXXX and .tmpXXXXXX (Python, uv);
//   tmp.XXXXXXXXXX (mktemp); tmpxft_* (nvcc); ccache/sccache tmp dirs.
// - A command with neither source nor output is identified by its argv
//   digest instead (the identity's tag): TOOL:MODE#DIGEST.
//
// klass is TOOL:MODE plus the arch list ("nvcc:compile[sm_80,sm_90]").
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/job.hpp"
#include "core/job_class.hpp"

namespace memgate {

struct CommandInfo {
  JobKey key;                      // tool, identity, klass, stem, cpu_weight
  std::string output;              // -o argument as given, "" if none
  std::vector<std::string> archs;  // normalised target archs, e.g. {"sm_80", "sm_90"}
  std::string mode;                // "compile", "preprocess", "link" or "probe"
  std::string source;              // main source as given, "" if none
  int gpu_pipelines = 0;           // distinct virtual GPU archs compiled (0: not a GPU compile)
};

// `argv[0]` is the program as invoked (a path or a bare name); `cwd` is
// the directory it runs in. Never fails: unknown shapes still get a usable
// identity.
CommandInfo analyze_command(const std::vector<std::string>& argv, const std::string& cwd);

// Hex of a 64-bit FNV-1a over the program's name and arguments (launchers
// skipped), with temp directories and nvcc/gcc temp file names replaced by
// placeholders: the same command from two pip temp dirs has one digest.
std::string argv_digest(const std::vector<std::string>& argv);

// nvcc also reads flags from NVCC_PREPEND_FLAGS and NVCC_APPEND_FLAGS
// (whitespace separated). Wrappers pass the result to analyze_command so
// that --threads and -gencode given there count.
std::vector<std::string> with_nvcc_env_flags(const std::vector<std::string>& argv,
                                             std::string_view prepend, std::string_view append);

// hipcc takes its targets from HCC_AMDGPU_TARGET (a comma list) when the
// command line names none (hipcc.pl; without either it asks
// rocm_agent_enumerator for this machine's GPUs, which we cannot know).
// Returns argv with `--offload-arch=VALUE` added in that case, so the
// targets count in identity, klass and weight as if they were given.
std::vector<std::string> with_hip_env_targets(const std::vector<std::string>& argv, std::string_view targets);

// Exposed for tests and for the report: the basename with version and
// target-triple decorations removed ("x86_64-linux-gnu-g++-12" -> "g++").
std::string normalize_tool_name(std::string_view program);

// A version or configuration query (`-v` alone, `-vV`, `-V`, `--version`,
// `-dumpversion`, `-dumpmachine`, `-print-*`, `--print*`, `--help`):
// no real work. The wrapper runs these ungated (waiting behind heavy jobs
// would only slow configure steps), and analyze_command calls them probes.
bool is_version_query(const std::vector<std::string>& argv);

}  // namespace memgate
