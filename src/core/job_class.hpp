// A job's class and identity: what memgate learns by and stores. The
// stored form is text, readable in reports and history, and this file is
// the one place that writes it (str) and takes it apart (parse_*):
//
//   class     [ENGINE>]TOOL:MODE[[TARGET,...]]
//   identity  [ENGINE>]TOOL:MODE[:SOURCE][->OUTPUT][#TAG][[TARGET,...]]
//
//   nvcc:compile[sm_80,sm_90]
//   nvcc:compile:src/flash_fwd_sm80.cu->csrc/flash_fwd_sm80.o[sm_80]
//   distcc>g++:compile:src/a.cpp->a.o
//   c++:link->app
//
// ENGINE names the distributed engine (distcc, icecc) a remote job went
// through: its local side (the launcher and the preprocessor) is learned
// apart from the same compile run here. MODE is compile, preprocess, link
// or probe (predict/identity.hpp says how a command line gets them). The
// class without its targets is the family: same tool and mode, any arch.
//
// Parsing is lossless: str() of what parse_* returns is the text it was
// given, whatever that text (an older record, a test's "a"), so a key can
// be taken apart, changed and written back without losing anything.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/job.hpp"

namespace memgate {

struct JobClass {
  std::string engine;                // the engine a remote job went through ("distcc"), else ""
  std::string tool;                  // "nvcc", "g++", "ld", ...
  std::string mode;                  // "compile", "preprocess", "link", "probe"
  std::vector<std::string> targets;  // GPU targets, sorted ("sm_80"); plan's tables say "8 targets"

  std::string str() const;
  // The class without its targets.
  std::string family() const;
  bool remote() const { return !engine.empty(); }
  bool is_compile() const { return mode == "compile"; }
  bool is_link() const { return mode == "link"; }
  // Probes (configure checks, version queries) are never learned into
  // class statistics.
  bool is_probe() const { return mode == "probe"; }
  friend bool operator==(const JobClass&, const JobClass&) = default;
};

struct JobIdentity {
  JobClass klass;      // engine, tool, mode and targets
  std::string source;  // the main source's last two components ("src/a.cpp", "+2" for two more), or ""
  std::string output;  // the output relative to the build directory, "crate NAME", or ""
  std::string tag;     // tells apart jobs without source and output (the argv digest), or ""

  std::string str() const;
  // What it may tell of the machine it was made on (history/profiles.hpp:
  // is_portable): whether its tool, source or output is an absolute path,
  // and each word it holds, its source and output split into path
  // components ("src/a.cpp" -> "src", "a.cpp").
  bool names_absolute_path() const;
  std::vector<std::string> words() const;
  friend bool operator==(const JobIdentity&, const JobIdentity&) = default;
};

// What the runs of one compile share when its identity changed only in
// the output or the argv digest (another build directory, a renamed
// object): its class (engine, tool, mode, targets) and its main source.
// The predictor's second and third rungs look jobs up by it.
struct SourceKey {
  JobClass klass;
  std::string source;  // as in JobIdentity; empty: the job has no source and no key

  bool empty() const { return source.empty(); }
  std::string str() const;  // one string per key, for tables
  friend bool operator==(const SourceKey&, const SourceKey&) = default;
};

SourceKey source_key(const JobIdentity& id);

JobClass parse_job_class(std::string_view stored);
JobIdentity parse_job_identity(std::string_view stored);

// The key of a job: identity and klass written from `id`, tool from its
// class.
JobKey make_job_key(const JobIdentity& id, std::string stem, int cpu_weight = 1);

// The same job run through `engine`: identity and klass name the engine,
// so its local side is learned and predicted apart. A key that already
// names an engine keeps it.
JobKey with_engine(JobKey key, std::string_view engine);

// What a build with these jobs was: "empty" (none), "configure" (only
// probes: a CMake or autoconf step), "relink" (links and no compile), else
// "build". Only a "build" (or an older record without a kind) is what
// plan, report and the progress total take by default.
std::string classify_build(const std::vector<JobRecord>& jobs);
bool is_full_build_kind(std::string_view kind);

// Shorthands over parse_job_class, for the predictor's tables.
std::string klass_family(std::string_view klass);
bool is_probe_klass(std::string_view klass);

}  // namespace memgate
