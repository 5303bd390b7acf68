// Distributed compilation engines: programs that compile a job on other
// machines (distcc, icecc) or can (sccache with its dist server), behind
// one interface, with an adapter per engine (engines.cpp). Nothing outside
// this folder names an engine.
//
// Where memgate meets them:
// - The launcher chain. The build's own CC="distcc gcc" (or distcc's
//   masquerade directory, /usr/lib/distcc/gcc -> distcc): the wrapper
//   names the engine in its request (sending_engine), for a compile the
//   engine takes (Engine::takes). The governor learns and predicts the job
//   by the engine's key (its local side, the launcher and the
//   preprocessor, is another job than the compile run here) and places it
//   remote.
// - Remote slots. How many compiles an engine runs elsewhere at once, from
//   its configuration (distcc: the /LIMITs of DISTCC_HOSTS without
//   localhost), read once by the runner: a remote job holding one weighs
//   no local CPU slot.
// - The fallback signal. What tells, after an attempt, that the engine
//   compiled the job here after all (distcc's local fallback when its
//   server refuses or fails, its local retry, localhost in its hosts).
//   The wrapper watches every attempt it launches through an engine
//   (Engine::watch); the job is then recorded and learned as the local
//   compile it was. The CPU time or peak would not do as the signal: a
//   header-heavy preprocess can cost more than a small compile.
// - Offload (--offload ENGINE). The governor sends a compile that waits
//   for local memory to the engine; the wrapper runs Engine::command.
#pragma once

#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/job.hpp"

namespace memgate {

// What one attempt launched through an engine needs beforehand and says
// afterwards.
class EngineAttempt {
 public:
  virtual ~EngineAttempt() = default;
  // Environment entries the launch needs ("DISTCC_LOG=...").
  virtual std::vector<std::string> environment() = 0;
  // After the engine's client `child` exited: whether it compiled the job
  // here after all.
  virtual bool ran_here(pid_t child) = 0;
};

// The environment, looked up by name (std::getenv, or a map in tests).
using EnvLookup = std::function<const char*(const char*)>;

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string_view name() const = 0;
  // Whether a build's own launcher sends compiles to other machines
  // through it. sccache without its dist server compiles, or finds in its
  // cache, here: a launcher like ccache, its jobs local.
  virtual bool sends_away() const = 0;
  // How many compiles it may run on other machines at once, as its
  // configuration says; 0 where it does not say (icecc's scheduler knows).
  virtual int remote_slots(const EnvLookup& env) const;
  // Whether it can take the job: a C or C++ compile (not a link, nvcc,
  // hipcc or rustc), not already an engine's.
  virtual bool takes(const JobKey& key) const;
  // The fallback signal of one attempt; nullptr where the engine gives none.
  virtual std::unique_ptr<EngineAttempt> watch() const;

  // What it runs for a job memgate offloads: the engine before the command.
  std::vector<std::string> command(const std::string& engine_exe, const std::vector<std::string>& argv) const;
  // The key its jobs are learned and predicted by.
  JobKey key(JobKey local) const;
};

// By name or path ("distcc", "/usr/bin/distcc"; "pump", distcc's include
// server, is distcc); nullptr for anything else.
const Engine* find_engine(std::string_view program);
// The engine a launcher sends compiles away through; nullptr for any
// other program, sccache included.
const Engine* sending_engine(std::string_view program);
// Every engine's name, for --offload.
const std::vector<std::string>& engine_names();

}  // namespace memgate
