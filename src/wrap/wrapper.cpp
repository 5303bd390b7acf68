// The two ways into the wrapper, and the decision whether to gate at all.
// Everything here runs once per compiler call, possibly thousands of times
// per build: no CLI11, no configuration files, a few syscalls.
#include "wrap/wrapper.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#include "predict/identity.hpp"
#include "util/log.hpp"
#include "util/text.hpp"
#include "wrap/client.hpp"
#include "wrap/find_program.hpp"
#include "wrap/shims.hpp"

namespace memgate {
namespace {

constexpr const char* kWrapUsage =
    "run one compiler command through the governor of the `memgate run` it is\n"
    "under (launcher form)\n"
    "Usage: memgate wrap -- PROGRAM [ARG...]\n"
    "\n"
    "Examples:\n"
    "  cmake -DCMAKE_CXX_COMPILER_LAUNCHER='memgate;wrap' ..   # under memgate run";

bool env_flag(const char* name) {
  const char* v = std::getenv(name);
  return v && *v && std::strcmp(v, "0") != 0;
}

int run(const Launch& launch) {
  const char* socket = std::getenv("MEMGATE_SOCKET");
  // Pass straight through when disabled, when already inside a job (nvcc
  // calling gcc, ccache calling the compiler: gated once, at the top), and
  // outside `memgate run` (a shim path a build recorded earlier).
  if (env_flag("MEMGATE_DISABLE") || std::getenv("MEMGATE_JOB") || !socket || !*socket)
    return exec_program(launch);
  // From here on the program runs with MEMGATE_JOB set, whichever way it
  // goes: the preload library's start-up check in the program must not
  // send it back here. A granted job replaces the value with its job id
  // (the child's environment is built in client.cpp); a probe or a
  // fail-open run keeps the word saying why it is ungated, which the
  // ungated detector reads (src/run/ungated.hpp).
  // Version and configuration queries (torch's cpp_extension runs `-v`
  // and `--version`, CMake and autoconf run others, cargo `rustc -vV`)
  // do no real work, and gating them would only make them wait behind
  // heavy jobs.
  if (is_version_query(launch.argv)) {
    ::setenv("MEMGATE_JOB", kJobProbe, 1);
    return exec_program(launch);
  }
  ::setenv("MEMGATE_JOB", kJobFailOpen, 1);
  return run_gated(launch, socket);
}

std::vector<std::string> args_from(int argc, char** argv, int first) {
  std::vector<std::string> out;
  if (first < argc) out.reserve(static_cast<std::size_t>(argc - first));
  for (int i = first; i < argc; ++i) out.emplace_back(argv[i]);
  return out;
}

bool is_self(const std::string& path, const std::optional<FileId>& self) {
  return self && file_id(path) == self;
}

}  // namespace

std::optional<std::string> shim_tool_name(const char* argv0) {
  if (!argv0) return std::nullopt;
  std::string_view base = base_name(argv0);
  if (is_shim_name(base)) return std::string(base);
  return std::nullopt;
}

int shim_main(const std::string& tool, int argc, char** argv) {
  std::string path = env_path();
  auto real = find_program(tool, path, self_exe_id());
  if (!real) {
    log::error("cannot find the real '{}' in PATH", tool);
    return 127;
  }
  Launch launch;
  launch.exe = *real;
  launch.argv = args_from(argc, argv, 1);
  launch.argv.insert(launch.argv.begin(), *real);
  launch.path_env = path_without_shims(path);
  return run(launch);
}

int exec_main(int argc, char** argv) {
  if (argc < 2) {
    log::error("usage: memgate-wrap exec PATH ARGV0 [ARGS...] (started by the preload library)");
    return 2;
  }
  // Exactly what the intercepted call would have run: PATH as given (the
  // library already did the PATH search a *p call makes), argv untouched,
  // so argv[0] and everything a driver derives from it stay the same.
  Launch launch;
  launch.exe = argv[0];
  launch.argv = args_from(argc, argv, 1);
  const char* path = std::getenv("PATH");
  launch.path_env = path ? path : env_path();
  return run(launch);
}

std::optional<int> run_if_wrapper(int argc, char** argv) {
  if (argc > 0) {
    if (auto tool = shim_tool_name(argv[0])) return shim_main(*tool, argc, argv);
  }
  if (argc > 1 && std::strcmp(argv[1], "wrap") == 0) return wrap_main(argc - 2, argv + 2);
  if (argc > 1 && std::strcmp(argv[1], "exec") == 0) return exec_main(argc - 2, argv + 2);
  return std::nullopt;
}

int wrap_main(int argc, char** argv) {
  int first = 0;
  if (argc > 0 && (std::strcmp(argv[0], "--help") == 0 || std::strcmp(argv[0], "-h") == 0)) {
    std::fprintf(stdout, "%s\n", kWrapUsage);
    return 0;
  }
  if (argc > 0 && std::strcmp(argv[0], "--") == 0) first = 1;
  if (first >= argc) {
    log::error("no program given (usage: memgate wrap -- PROGRAM [ARG...])");
    return 2;
  }
  std::string program = argv[first];
  std::string path = env_path();
  auto self = self_exe_id();
  Launch launch;
  launch.argv = args_from(argc, argv, first);
  launch.path_env = path_without_shims(path);

  if (program.find('/') != std::string::npos) {
    launch.exe = program;
    if (::access(program.c_str(), X_OK) != 0) {
      log::error("cannot run '{}': {}", program, std::strerror(errno));
      return exec_failure_status(errno);
    }
  } else {
    // Shim dirs are skipped but not memgate itself, so `memgate wrap
    // memgate` is caught by the guard below instead of "not found".
    auto found = find_program(program, path, std::nullopt);
    if (!found) {
      log::error("cannot run '{}': not found in PATH", program);
      return 127;
    }
    launch.exe = *found;
  }

  if (is_self(launch.exe, self)) {
    // A recorded shim path (CMAKE_CXX_COMPILER=<shims>/c++ under a
    // launcher) means "the real c++"; anything else would loop forever.
    std::string base(base_name(program));
    auto real = is_shim_name(base) ? find_program(base, path, self) : std::nullopt;
    if (!real) {
      log::error("'{}' is memgate itself, not a program to wrap (this would loop)", program);
      return 125;
    }
    launch.exe = *real;
    launch.argv[0] = *real;
  }
  return run(launch);
}

}  // namespace memgate
