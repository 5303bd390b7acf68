#include <CLI/CLI.hpp>

#include "cli/cli.hpp"
#include "util/log.hpp"

namespace memgate {

void add_run_command(CLI::App& app, int* status) {
  auto* cmd = app.add_subcommand("run", "run a build with every compiler job gated on memory");
  cmd->callback([status] {
    log::error("'run' is not implemented yet");
    *status = 125;
  });
}

}  // namespace memgate
