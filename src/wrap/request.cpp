#include "wrap/request.hpp"

#include <unistd.h>

#include <climits>
#include <cstdlib>
#include <string>
#include <string_view>

#include "engine/engine.hpp"
#include "predict/identity.hpp"
#include "wrap/tu_size.hpp"

namespace memgate {
namespace {

// A preprocessor run that takes longer measures nothing (the job goes on unmeasured).
constexpr double kTuSizeTimeout_s = 30;

// The engine a launch goes through: argv[0] names one (CC="distcc gcc")
// or the file resolves to one (distcc's masquerade directory,
// /usr/lib/distcc/gcc -> ../../bin/distcc), and the engine takes the
// command. "" for anything else.
std::string engine_of_launch(const Launch& launch, const JobKey& key) {
  if (launch.argv.empty()) return "";
  const Engine* engine = sending_engine(launch.argv[0]);
  if (!engine) {
    char buf[PATH_MAX];
    ssize_t n = ::readlink(launch.exe.c_str(), buf, sizeof buf - 1);
    if (n <= 0) return "";
    buf[n] = '\0';
    engine = sending_engine(buf);
  }
  return engine && engine->takes(key) ? std::string(engine->name()) : "";
}

}  // namespace

RequestMsg make_request(const Launch& launch) {
  RequestMsg req;
  req.argv = launch.argv;
  char buf[PATH_MAX];
  if (::getcwd(buf, sizeof buf)) req.cwd = buf;
  // nvcc and hipcc also read flags from the environment (--threads and
  // -gencode for nvcc, the offload targets for hipcc change the job's
  // weight and identity like flags on the line).
  const char* pre = ::getenv("NVCC_PREPEND_FLAGS");
  const char* app = ::getenv("NVCC_APPEND_FLAGS");
  const char* hip = ::getenv("HCC_AMDGPU_TARGET");
  CommandInfo info = analyze_command(
      with_hip_env_targets(with_nvcc_env_flags(launch.argv, pre ? pre : "", app ? app : ""), hip ? hip : ""),
      req.cwd);
  req.tool = info.key.tool;
  req.identity = info.key.identity;
  req.klass = info.key.klass;
  req.stem = info.key.stem;
  req.cpu_weight = info.key.cpu_weight;
  req.engine = engine_of_launch(launch, info.key);
  // A build memgate has not seen measures each compile's size (wrap/tu_size.hpp).
  if (const char* want = ::getenv("MEMGATE_TU_SIZE"); want && std::string_view(want) == "1")
    if (auto cmd = preprocess_command(launch.argv, info)) req.tu_bytes = preprocessed_size(launch.exe, *cmd, kTuSizeTimeout_s);
  return req;
}

}  // namespace memgate
