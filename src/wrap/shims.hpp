// How the wrapper gets into a build without the user editing any build
// file (SPEC "How the wrapper gets in"): a directory of compiler-named
// symlinks to memgate placed first in PATH, and the environment variables
// that CMake, torch's cpp_extension and friends read.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <string>
#include <string_view>

#include "util/result.hpp"

namespace memgate {

// The names memgate answers to as a shim (busybox style, by argv[0]).
inline constexpr std::array<std::string_view, 8> kShimNames = {"cc",    "c++",     "gcc",  "g++",
                                                               "clang", "clang++", "nvcc", "hipcc"};
// A file of this name marks a directory as a memgate shim directory, so
// the PATH search skips shim dirs made by any memgate binary or version.
inline constexpr std::string_view kShimMarker = ".memgate-shims";

bool is_shim_name(std::string_view name);
// True if `dir` holds the marker (however `dir` is spelled: symlinked or
// relative paths reach the same marker).
bool is_shim_dir(const std::string& dir);

// $XDG_CACHE_HOME/memgate/shims, else ~/.cache/memgate/shims. Persistent
// per user on purpose: a CMake cache or Makefile that recorded a shim path
// keeps working after memgate exits (outside `memgate run` the shims just
// exec the real compiler).
std::string default_shim_dir();

// Creates `dir` (0700; an existing one must be ours and not writable by
// others) with the marker and one symlink per shim name -> memgate_exe.
// Stale links are replaced atomically (new link under a temporary name,
// then rename), so concurrent `memgate run`s never see a missing shim.
// Returns `dir`.
Result<std::string> ensure_shim_dir(const std::string& dir, const std::string& memgate_exe);

struct InjectionInput {
  std::map<std::string, std::string> env;  // the environment `run` starts from
  std::string shim_dir;                    // absolute, from ensure_shim_dir
  std::string memgate_exe;                 // absolute path of this memgate
  std::string socket_path;
  int slots = 1;  // CPU slots (--jobs)
  // Whether a path names an executable file. Empty: the real check
  // (access X_OK on a regular file). Tests pass a fake.
  std::function<bool(const std::string&)> is_executable;
};

// The environment changes `memgate run` applies before starting the build.
// An empty value means "unset this variable" (only MEMGATE_JOB, which a
// build started from inside a job must not inherit). Rules:
//
// PATH       the shim dir first, any other copy of it removed. With no
//            shim dir (shim_dir empty: it could not be made) PATH, CC and
//            CXX are left alone; launchers and PYTORCH_NVCC still apply.
// MEMGATE_SOCKET  the socket.
// CC, CXX    unset: <shim>/cc and <shim>/c++ (one path without spaces:
//            torch's ABI check runs `$CXX --version` and a space breaks
//            it). A bare shim name (CXX=clang++): <shim>/clang++. Anything
//            else (an absolute path, g++-12, "ccache g++") is left alone:
//            replacing it could run a different compiler than the user
//            chose; such builds are still gated through PATH and launchers
//            where those apply.
// CUDA_HOME, ROCM_HOME  when neither it nor CUDA_PATH / ROCM_PATH is set
//            and the compiler is found (in PATH or the default install),
//            the root torch would have derived: torch asks `which nvcc` /
//            `which hipcc`, and that would now answer with the shim.
// PYTORCH_NVCC  torch's cpp_extension pastes it into build.ninja as the
//            GPU compiler (for ROCm builds too: it replaces hipcc there).
//            Unset: "<memgate> wrap <compiler>", the compiler being the one
//            torch would pick ($CUDA_HOME or $CUDA_PATH /bin/nvcc, else nvcc
//            in PATH, else /usr/local/cuda/bin/nvcc; hipcc likewise from
//            ROCM_HOME, ROCM_PATH, PATH, /opt/rocm). If both nvcc and hipcc
//            exist we cannot tell which torch will want without importing
//            it, so PYTORCH_NVCC stays unset (the build still runs; its GPU
//            compiles are then not gated). Set by the user: "<memgate> wrap "
//            is put in front of theirs.
// CMAKE_{C,CXX,CUDA,HIP}_COMPILER_LAUNCHER  "<memgate>;wrap;--", in front
//            of any launcher already set ("<memgate>;wrap;--;ccache").
// MAX_JOBS   unset: min(256, max(8, 2 x slots)). memgate can only choose
//            among the jobs the build tool has started, and torch-based
//            builds (flash-attn especially) size their ninja -j from
//            MAX_JOBS or their own memory guess; twice the slots gives the
//            governor lighter jobs to admit while heavy ones wait, at least
//            8 even on small machines, and at most 256 so the waiting
//            wrappers (well under 1 MiB each) and the build tool's own
//            bookkeeping stay small. A MAX_JOBS the user set is kept.
std::map<std::string, std::string> injection_env(const InjectionInput& in);

// The process environment as a map, and applying a change set from
// injection_env (setenv, or unsetenv for empty values).
std::map<std::string, std::string> current_environment();
void apply_environment(const std::map<std::string, std::string>& changes);

}  // namespace memgate
