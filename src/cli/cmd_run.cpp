#include <CLI/CLI.hpp>

#include "cli/cli.hpp"
#include "run/runner.hpp"
#include "util/log.hpp"

namespace memgate {

// cli_main cuts the arguments at the first "--" before CLI11 sees them, so
// the build command reaches us exactly as typed.
void add_run_command(CLI::App& app, int* status) {
  auto opt = std::make_shared<RunOptions>();
  auto* cmd = app.add_subcommand("run", "run a build with every compiler job gated on memory");
  cmd->add_option("--memory", opt->memory, "memory the build may use (SIZE: 2560M, 8G, 80%); default capacity - reserve");
  cmd->add_option("--reserve", opt->reserve, "memory never handed to jobs (default 5% of capacity, 512 MiB..8 GiB)");
  cmd->add_option("-j,--jobs", opt->jobs, "CPU slots (default: usable cores)");
  cmd->add_option("--history", opt->history, "history database (default: $MEMGATE_HISTORY or ~/.cache/memgate/history.db)");
  cmd->add_option("--report", opt->report_html, "write an HTML report of the build to FILE");
  cmd->add_option("--trace", opt->trace_json, "write a Chrome trace (Perfetto) of the build to FILE");
  cmd->add_option("--offload", opt->offload,
                  "send compiles waiting for local memory to this distributed engine instead")
      ->check(CLI::IsMember({"distcc", "icecc", "sccache"}));
  cmd->add_option("--offload-jobs", opt->offload_jobs,
                  "at most N offloaded jobs at once (default: distcc's remote slots in DISTCC_HOSTS, else 4 per CPU slot)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--decline-after", opt->decline_after_s,
                  "on a build server (memgate run -- distccd ...): decline a job that waited S seconds for memory, "
                  "so its client compiles it elsewhere")
      ->check(CLI::Range(0.0, 86400.0));
  cmd->add_flag("--no-confine", opt->no_confine, "do not run the build in a memory-limited cgroup");
  cmd->add_flag("-q,--quiet", opt->quiet, "no status line or summary (warnings and errors still show)");
  // Everything from the first positional on (or after "--") is the build
  // command, passed through untouched, so `memgate run make -j8` works too.
  cmd->prefix_command();
  cmd->callback([cmd, opt, status] {
    opt->command = run_command_after_dashes();
    if (opt->command.empty()) opt->command = cmd->remaining();
    if (opt->command.empty()) {
      log::error("no build command given (usage: memgate run [OPTIONS] -- CMD [ARG...])");
      *status = 125;
      return;
    }
    *status = run_build(*opt);
  });
}

}  // namespace memgate
