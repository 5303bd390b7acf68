// `memgate doctor`: what this machine really offers a build, and what is
// eating its memory now. gather() reads the machine; everything else is a
// pure function of the Findings, so the rendering is tested without one.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/capacity.hpp"
#include "doctor/build_env.hpp"
#include "doctor/stale.hpp"
#include "platform/cgroup_stale.hpp"
#include "platform/cgroup.hpp"
#include "platform/meminfo.hpp"
#include "platform/psi.hpp"

namespace memgate::doctor {

// One of `memgate run`'s settings here and where it came from: "flag",
// "environment (NAME)", "config FILE:LINE" or "default". `value` is ""
// for a default that the capacity section shows (reserve, memory).
struct Setting {
  std::string key, value, source;
};

struct Findings {
  int cores = 1;  // usable: affinity lowered by any CPU quota
  int affinity_cores = 1;
  std::optional<int> quota_cores;
  Capacity capacity;
  Budget budget;  // with the default reserve and no --memory
  platform::MemInfo meminfo;
  platform::CgroupLayout cgroups;
  std::optional<Bytes> cgroup_usage;  // our own memory cgroup's usage
  bool can_confine = false;           // a probe child memory cgroup could be created and removed
  std::string confine_error;          // why not, when it could not
  std::string freezer = "sigstop";    // "cgroup-v1", "cgroup-v2" or "sigstop"
  bool freezer_forced_off = false;    // MEMGATE_NO_FREEZER is set
  std::optional<platform::Psi> psi;
  std::vector<StaleProcess> stale;
  std::vector<platform::StaleCgroup> stale_cgroups;  // left by a memgate that died
  std::optional<BuildEnv> build_env;  // with --build-env
  std::vector<Setting> settings;      // given by the caller (GatherOptions)
  std::string config_file;            // the config file looked for ("" if no home is known)
  std::string config_error;           // why it was ignored; "" when it was read (or absent)
};

struct GatherOptions {
  bool build_env = false;  // also read the build environment (build_env.hpp)
  std::string python;      // the interpreter to look at ("" = $PYTHON, else python3 in PATH)
  // The config file's `reserve` and `memory` (cli/config.hpp), so the
  // budget shown is the one `memgate run` would use here.
  std::optional<std::string> reserve, memory;
  // For --build-env's expected peaks (build_env.hpp): history's jobs and
  // the shipped measurements, given by the caller.
  std::function<std::vector<JobRecord>()> history_jobs;
  MeasuredPeaks measured_peaks;
  // Copied into the Findings: where each setting came from, and the config
  // file with the error that made it be ignored (doctor still runs).
  std::vector<Setting> settings;
  std::string config_file, config_error;
};

// Reads the real machine. The confinement probe mkdirs and rmdirs one
// child cgroup below our own; nothing else is changed. The build
// environment reader runs nvcc, the host compiler and python once each
// (bounded), and reads files.
Findings gather(const GatherOptions& options = {});

// MemFree is low but MemAvailable high: the "missing" memory is page cache
// the kernel reclaims on demand, so dropping caches would gain nothing.
bool page_cache_note(const platform::MemInfo& m);

// "capacity 432 GiB; a build may use 410 GiB; 38 GiB held by 12 stale
// compiler processes (run: memgate doctor --kill-stale)"
std::string verdict(const Findings& f);

std::string render_text(const Findings& f);
// The stable machine form. Tests and scripts rely on capacity_bytes,
// capacity_source, budget_bytes, reserve_bytes, physical_bytes,
// mem_available_bytes, cores, cgroup_version, can_confine, freezer, psi and
// stale_processes [{pid, comm, rss_bytes}]; more keys may be added. With
// `killed`, a "killed" list [{pid, comm, result, ended}] is added; with a
// build environment, its object under "build_env" (build_env_json).
std::string render_json(const Findings& f, const std::vector<KillOutcome>* killed = nullptr);

// The stale list as printed by --kill-stale before it acts.
std::string render_stale(const std::vector<StaleProcess>& stale);
std::string render_stale_cgroups(const std::vector<platform::StaleCgroup>& stale);
// Thaws, empties and removes each; one line per cgroup saying how it went.
// False if any could not be removed.
bool clean_stale_cgroups(const std::vector<platform::StaleCgroup>& stale, std::string* report);
std::string render_kills(const std::vector<KillOutcome>& outcomes);

}  // namespace memgate::doctor
