// `memgate doctor [--json] [--kill-stale] [--build-env [--python PATH]]`:
// the findings of doctor/doctor.hpp on stdout; --kill-stale then ends
// exactly the stale processes it listed; --build-env adds what a torch /
// CUDA / ROCm extension build will meet (doctor/build_env.hpp).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>

#include "cli/cli.hpp"
#include "cli/config.hpp"
#include "cli/help.hpp"
#include "doctor/doctor.hpp"
#include "history/history.hpp"
#include "platform/cpu.hpp"
#include "plan/jobs_csv.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"

namespace memgate {

namespace {

std::string env_or_empty(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

struct DoctorArgs {
  bool json = false;
  bool kill_stale = false;
  bool build_env = false;
  std::string python;
};

void print(const std::string& s) {
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fflush(stdout);
}

// What --build-env estimates nvcc peaks from: the jobs of memgate's
// history (opened only if it exists, never created, waited for 1 s at
// most) and the flash-attn measurements shipped in the binary.
doctor::GatherOptions gather_options(const DoctorArgs& args, const MachineConfig& config) {
  doctor::GatherOptions o;
  o.build_env = args.build_env || !args.python.empty();
  o.python = args.python;
  o.reserve = config.reserve;
  o.memory = config.memory;
  o.settings = setting_origins(config, env_or_empty("MEMGATE_HISTORY"), History::default_path(),
                               platform::detect_cores());
  o.config_file = config.file.empty() ? config_path() : config.file;
  o.config_error = machine_config_error();
  o.history_jobs = [] {
    const std::string path = History::resolve_path(history_flag_or_config(""));
    if (!path_exists(path)) return std::vector<JobRecord>{};
    auto h = History::open(path, 1000);
    return h ? (*h)->jobs_for_prediction(50) : std::vector<JobRecord>{};
  };
  o.measured_peaks = [](int threads, int targets) {
    return plan::measured_peaks(plan::shipped_flash_attn_measurements(), plan::NvccShape{threads, targets});
  };
  return o;
}

int run_doctor(const DoctorArgs& args) {
  const MachineConfig& config = machine_config();
  doctor::Findings f = doctor::gather(gather_options(args, config));
  if (!args.kill_stale) {
    print(args.json ? doctor::render_json(f) : doctor::render_text(f));
    // An `error` finding stops a build: a script's `doctor --build-env &&
    // pip install ...` must stop too.
    const bool env_error = f.build_env && doctor::has_error(doctor::check_build_env(*f.build_env));
    return f.config_error.empty() && !env_error ? 0 : 1;
  }
  // Only the pids listed here are touched, each checked by start time.
  if (!args.json) print(doctor::render_stale(f.stale));
  auto outcomes = doctor::kill_stale(f.stale);
  bool all_ended = true;
  for (const auto& k : outcomes) all_ended = all_ended && k.ended;
  std::string cleaned;
  bool cgroups_ok = doctor::clean_stale_cgroups(f.stale_cgroups, &cleaned);
  if (args.json) {
    print(doctor::render_json(f, &outcomes));
  } else {
    if (!outcomes.empty()) print("ending them:\n" + doctor::render_kills(outcomes));
    if (!f.stale_cgroups.empty()) print(doctor::render_stale_cgroups(f.stale_cgroups) + "cleaning them:\n" + cleaned);
  }
  if (!all_ended) log::error("some stale processes could not be ended (see above)");
  if (!cgroups_ok) log::error("some cgroups left by a dead memgate could not be removed (see above)");
  return all_ended && cgroups_ok && f.config_error.empty() ? 0 : 1;
}

}  // namespace

void add_doctor_command(CLI::App& app, int* status) {
  auto args = std::make_shared<DoctorArgs>();
  auto* cmd = app.add_subcommand("doctor", "what this machine offers a build, and what is eating its memory now");
  cmd->add_flag("--json", args->json, "machine-readable output (stable keys)");
  cmd->add_flag("--kill-stale", args->kill_stale,
                "end the listed stale compiler processes of this user (SIGTERM, then SIGKILL), and thaw, "
                "empty and remove cgroups a memgate that died left behind");
  cmd->add_flag("--build-env", args->build_env,
                "also check the build environment of torch/CUDA/ROCm extensions: nvcc and torch versions, host "
                "compiler, ninja, Python modules, GPU targets, and flash-attn's MAX_JOBS against memgate's");
  cmd->add_option("--python", args->python, "with --build-env: the Python interpreter to look at (default: $PYTHON, "
                                            "else python3 in PATH)")
      ->type_name("PATH");
  describe_command(cmd, "", {"memgate doctor", "memgate doctor --build-env", "memgate doctor --json"});
  cmd->callback([status, args] { *status = run_doctor(*args); });
}

}  // namespace memgate
