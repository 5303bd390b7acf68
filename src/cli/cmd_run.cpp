#include <CLI/CLI.hpp>

#include "cli/cli.hpp"
#include "cli/config.hpp"
#include "cli/help.hpp"
#include "core/capacity.hpp"
#include "engine/engine.hpp"
#include "run/runner.hpp"
#include "util/atomic_file.hpp"
#include "util/log.hpp"
#include "util/size.hpp"

namespace memgate {

// cli_main cuts the arguments at the first "--" before CLI11 sees them, so
// the build command reaches us exactly as typed.
namespace {

// Typos are usage errors (exit 2), found before anything starts.
const CLI::Validator& memory_check() {
  static const CLI::Validator check([](std::string& v) { return memory_flag_problem(v); }, "SIZE");
  return check;
}
const CLI::Validator& size_check() {
  static const CLI::Validator check(
      [](std::string& v) -> std::string {
        auto r = parse_size(v, 100 * GiB);  // a percentage's bytes come later
        return r ? "" : r.error();
      },
      "SIZE");
  return check;
}

}  // namespace

void add_run_command(CLI::App& app, int* status) {
  auto opt = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "run a build with every compiler job gated on memory");
  cmd->add_option("--memory", opt->memory,
                  "memory the build may use (SIZE: 2560M, 8G, 80%; at least 64M); default: the config's 'memory', "
                  "else capacity - reserve")
      ->type_name("SIZE")
      ->check(memory_check());
  cmd->add_option("--reserve", opt->reserve,
                  "memory never handed to jobs (default: the config's 'reserve', else 5% of physical memory, "
                  "512 MiB..8 GiB; under a cgroup or container limit 2%, 128 MiB..2 GiB)")
      ->type_name("SIZE")
      ->check(size_check());
  cmd->add_option("-j,--jobs", opt->jobs, "CPU slots (default: the config's 'jobs', else the usable cores)")
      ->type_name("N")
      ->check(CLI::Range(1, kMaxJobs));
  cmd->add_option("--history", opt->history, kHistoryHelp)->type_name("FILE");
  cmd->add_option("--prior", opt->prior,
                  "job profiles (from 'memgate history export') that predict this run's unseen jobs, without "
                  "importing them into history (default: $MEMGATE_PRIOR)")
      ->type_name("FILE");
  cmd->add_option("--report", opt->report_html, "write an HTML report of the build to FILE")->type_name("FILE.html");
  cmd->add_option("--trace", opt->trace_json, "write a Chrome trace (Perfetto) of the build to FILE")
      ->type_name("FILE.json");
  cmd->add_option("--summary-json", opt->summary_json,
                  "write the build's record to FILE as JSON, with the keys of 'memgate history --build ID --json' "
                  "(\"id\": null when it was not recorded)")
      ->type_name("FILE");
  cmd->add_flag("--record-empty", opt->record_empty,
                "record the build in history even if it gated no compiler job (such builds are left out)");
  cmd->add_option("--offload", opt->offload, "send compiles waiting for local memory to this distributed engine instead")
      ->type_name("ENGINE")
      ->check(CLI::IsMember(engine_names()));
  cmd->add_option("--offload-jobs", opt->offload_jobs,
                  "at most N offloaded jobs at once (default: distcc's remote slots in DISTCC_HOSTS, else 4 per CPU slot)")
      ->type_name("N")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--decline-after", opt->decline_after_s,
                  "on a build server (memgate run -- distccd ...): decline a job that waited S seconds for memory, "
                  "so its client compiles it elsewhere")
      ->type_name("S")
      ->check(CLI::Range(0.0, 86400.0));
  cmd->add_option("--admission", opt->admission,
                  "which waiting job starts first: packing (the default: the longest one that cannot start yet "
                  "is not delayed by shorter ones), or longest-first (any job that fits; see ARCHITECTURE.md)")
      ->type_name("POLICY")
      ->check(CLI::IsMember({"longest-first", "packing"}));
  cmd->add_option("--jobserver", opt->jobserver,
                  "serve a GNU make jobserver (MAKEFLAGS, CARGO_MAKEFLAGS) whose tokens are memgate's slots: auto "
                  "(unless the command names -j or an outer jobserver), always, off; see docs/jobserver.md")
      ->type_name("MODE")
      ->check(CLI::IsMember({"auto", "always", "off"}));
  cmd->add_flag("--jobserver-fifo", opt->jobserver_fifo,
                "name the jobserver fifo:PATH (make 4.4, ninja 1.13) instead of the R,W descriptors of make 4.3");
  cmd->add_option("--jobserver-log", opt->jobserver_log, "write the tokens held and waiting to FILE as they change")
      ->type_name("FILE");
  cmd->add_flag("--no-confine", opt->no_confine, "do not run the build in a memory-limited cgroup");
  cmd->add_flag("-q,--quiet", opt->quiet, "no status line or summary (warnings and errors still show)");
  cmd->add_flag("-v,--verbose", opt->verbose, "the full summary: waits, counters and the heaviest jobs");
  // Everything from the first positional on (or after "--") is the build
  // command, passed through untouched, so `memgate run make -j8` works too.
  cmd->prefix_command();
  describe_command(cmd, "-- CMD [ARG...]",
                   {"memgate run -- make -j", "memgate run --memory 80% -- ninja -C out",
                    "memgate run --report build.html -- pip install flash-attn --no-build-isolation",
                    "memgate run --summary-json build-summary.json -- cmake --build build"});
  cmd->callback([cmd, opt, status] {
    // Flag, then environment, then the config file (cli/config.hpp).
    const MachineConfig& config = machine_config();
    if (!opt->memory) opt->memory = config.memory;
    if (!opt->reserve) opt->reserve = config.reserve;
    if (!opt->jobs) opt->jobs = config.jobs;
    opt->history = history_flag_or_config(opt->history);
    opt->command = run_command_after_dashes();
    if (opt->command.empty()) opt->command = cmd->remaining();
    if (opt->command.empty()) {
      log::error("no build command given (usage: memgate run [OPTIONS] -- CMD [ARG...])");
      *status = 2;
      return;
    }
    // Every file the build's end writes, checked before it starts: a typo
    // found after an hour's build loses the report it was run for.
    for (const std::string* path : {&opt->report_html, &opt->trace_json, &opt->summary_json}) {
      if (path->empty()) continue;
      if (auto st = check_writable_output(*path); !st) {
        log::error("{} (nothing was run)", st.error());
        *status = 2;
        return;
      }
    }
    *status = run_build(*opt);
  });
}

}  // namespace memgate
