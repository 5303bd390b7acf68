// How the wrapper gets into a build without the user editing any build
// file and without leaving memgate's paths in it (ARCHITECTURE.md
// "Interception"):
//
// - normally the preload library (src/preload/) in LD_PRELOAD, which
//   routes every compiler and linker exec through memgate-wrap;
// - where preloading cannot work, this copy's directory of compiler-named
//   PATH shims, with the environment variables CMake, torch's
//   cpp_extension and friends read (today's mechanism, now the fallback).
//
// shims.cpp holds the shim directory, injection.cpp the environment.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "util/result.hpp"
#include "wrap/compilers.hpp"

namespace memgate {

// ---- the fallback shim directory (shims.cpp) -------------------------

// A file of this name marks a directory as a memgate shim directory, so
// the PATH search skips shim dirs made by any memgate binary or version.
inline constexpr std::string_view kShimMarker = ".memgate-shims";

// One of kShimNames (src/preload/compilers.h, entries marked MG_SHIM).
bool is_shim_name(std::string_view name);
// True if `dir` holds the marker (however `dir` is spelled: symlinked or
// relative paths reach the same marker).
bool is_shim_dir(const std::string& dir);

// This copy's shim directory, next to its wrapper (find_parts().shim_dir):
// build/shims in a build tree, <prefix>/libexec/memgate/shims installed.
// One per install, never shared with another copy of memgate.
std::string default_shim_dir();

// Checks, and where needed creates or repairs, the shim directory `dir`
// (absolute): one symlink per shim name -> memgate_exe, and the marker.
// Checked on every call, nothing cached, since the directory is what
// root will run compilers from:
// - `dir` and every directory above it pass open_trusted_dir (owned by
//   root or us; group/other-writable only if sticky, and `dir` never);
//   everything below is done with *at() calls relative to that fd;
// - the directory holds nothing but the marker, the shim names and our own
//   temporary files: an extra entry (say `make`) would shadow a program of
//   that name for the whole build, so it is refused, never deleted;
// - each shim is a symlink owned by root or us that leads to memgate_exe
//   or to the memgate-wrap beside the directory (an install's relative
//   links); any other link is replaced atomically (new link under a
//   temporary name, then rename), so concurrent runs never see a gap.
// New directories are 0755: an install's shims serve every user.
// Returns `dir`.
Result<std::string> ensure_shim_dir(const std::string& dir, const std::string& memgate_exe);

// ---- choosing the mechanism and the environment (injection.cpp) ------

struct InjectionInput {
  std::map<std::string, std::string> env;  // the environment `run` starts from
  std::string shim_dir;                    // absolute, from ensure_shim_dir; "" if it could not be made
  std::string memgate_exe;                 // the wrapper program (fallback launcher variables)
  std::string socket_path;
  int slots = 1;  // CPU slots (--jobs)
  // Whether a path names an executable file. Empty: the real check
  // (access X_OK on a regular file). Tests pass a fake.
  std::function<bool(const std::string&)> is_executable;
  // The build command (argv), to see whether preloading can reach into
  // it. Empty: not inspected.
  std::vector<std::string> command;
  // The preload library. nullopt: this copy's (find_parts().preload);
  // "": there is none.
  std::optional<std::string> preload_lib;
};

enum class Mechanism {
  preload,            // LD_PRELOAD only: nothing in PATH, CC or CMake's variables
  shims,              // the fallback PATH shims and variables, no LD_PRELOAD
  preload_and_shims,  // both: the build command itself cannot be preloaded
};

struct Interception {
  Mechanism mechanism = Mechanism::preload;
  std::string preload_lib;  // what goes into LD_PRELOAD ("" for shims)
  std::string reason;       // why not preload alone ("" when it is)
};

// Which mechanism this run uses, and why:
// - MEMGATE_NO_PRELOAD=1 in env, no preload library in this copy, or a
//   library path LD_PRELOAD cannot carry (a space or a colon): shims;
// - a build command (resolved in env's PATH; a script's "#!" interpreter
//   is looked at too) that runs in the loader's secure mode (setuid,
//   setgid, file capabilities): the loader drops LD_PRELOAD for it and all
//   below it: shims;
// - a statically linked build command: preload_and_shims (the compilers it
//   starts by name are caught by the shims, the dynamically linked ones it
//   starts by path by the library's start-up check, and everything below a
//   dynamically linked shell by the library's hooks);
// - otherwise: preload.
Interception choose_interception(const InjectionInput& in);

// For the run summary's `degraded:` line: "" when preloading works alone,
// else what gates compilers in this run and why, e.g.
// "compilers gated by PATH shims only (MEMGATE_NO_PRELOAD is set)".
std::string interception_note(const Interception& i, bool have_shim_dir);

// The environment changes `memgate run` applies before starting the build.
// An empty value means "unset this variable". Always:
//
// MEMGATE_SOCKET  the socket.
// MEMGATE_JOB     unset (a build started from inside a job must not
//                 inherit the marker).
// MAX_JOBS        unset: min(256, max(8, 2 x slots)). memgate can only
//                 choose among the jobs the build tool has started, and
//                 torch-based builds (flash-attn especially) size their
//                 ninja -j from MAX_JOBS or their own memory guess; twice
//                 the slots gives the governor lighter jobs to admit while
//                 heavy ones wait, at least 8 even on small machines, and at
//                 most 256 so the waiting wrappers (well under 1 MiB each)
//                 and the build tool's own bookkeeping stay small. A
//                 MAX_JOBS the user set is kept.
//
// With the preload library (preload, preload_and_shims):
//
// LD_PRELOAD      the library, in front of the user's value (any other
//                 copy of libmemgate-preload.so in it, from an outer
//                 memgate run, is dropped).
// MEMGATE_LAUNCHERS  the launchers in front of a compiler in the user's
//                 CC, CXX, PYTORCH_NVCC, CMAKE_*_COMPILER_LAUNCHER and
//                 RUSTC_WRAPPER that the table does not know already
//                 (CC="/opt/mywrap gcc" -> "mywrap"), ':'-separated: a call
//                 of one with a compiler next is one job.
//
// Nothing else: CC, CXX, PATH, PYTORCH_NVCC and the CMake launcher
// variables stay the user's, so nothing memgate-specific is recorded by a
// configure step, and the build's output shows the user's command lines.
//
// With shims (shims, preload_and_shims), today's variables as before:
//
// PATH       the shim dir first, any other copy of it removed. With no
//            shim dir (shim_dir empty: it could not be made) PATH, CC and
//            CXX are left alone; launchers and PYTORCH_NVCC still apply.
// CC, CXX    unset: <shim>/cc and <shim>/c++ (one path without spaces:
//            torch's ABI check runs `$CXX --version` and a space breaks
//            it). A bare shim name (CXX=clang++): <shim>/clang++. Anything
//            else (an absolute path, g++-12, "ccache g++") is left alone.
// CUDA_HOME, ROCM_HOME  when neither it nor CUDA_PATH / ROCM_PATH is set
//            and the compiler is found (in PATH or the default install),
//            the root torch would have derived: torch asks `which nvcc` /
//            `which hipcc`, and that would now answer with the shim.
// PYTORCH_NVCC  "<memgate_exe> wrap <compiler>", the compiler being the one
//            torch would pick; in front of the user's own value; left
//            unset when both nvcc and hipcc exist.
// CMAKE_{C,CXX,CUDA,HIP}_COMPILER_LAUNCHER  "<memgate_exe>;wrap;--", in
//            front of any launcher already set.
std::map<std::string, std::string> injection_env(const InjectionInput& in);

// The process environment as a map, and applying a change set from
// injection_env (setenv, or unsetenv for empty values).
std::map<std::string, std::string> current_environment();
void apply_environment(const std::map<std::string, std::string>& changes);

}  // namespace memgate
