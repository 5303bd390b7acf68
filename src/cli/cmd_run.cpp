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
  cmd->add_option("--reserve", opt->reserve, "memory never handed to jobs (default: 5% of physical memory, 512 MiB..8 GiB; in a "
                  "cgroup or container limit 2%, 128 MiB..2 GiB)");
  cmd->add_option("-j,--jobs", opt->jobs, "CPU slots (default: usable cores)");
  cmd->add_option("--history", opt->history, "history database (default: $MEMGATE_HISTORY or ~/.cache/memgate/history.db)");
  cmd->add_option("--prior", opt->prior,
                  "job profiles (from 'memgate history export') that predict this run's unseen jobs, without "
                  "importing them into history (default: $MEMGATE_PRIOR)");
  cmd->add_option("--report", opt->report_html, "write an HTML report of the build to FILE");
  cmd->add_option("--trace", opt->trace_json, "write a Chrome trace (Perfetto) of the build to FILE");
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
