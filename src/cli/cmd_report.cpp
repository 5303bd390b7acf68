#include <CLI/CLI.hpp>

#include "cli/cli.hpp"
#include "util/log.hpp"

namespace memgate {

void add_report_command(CLI::App& app, int* status) {
  auto* cmd = app.add_subcommand("report", "not implemented yet");
  cmd->callback([status] {
    log::error("'report' is not implemented yet");
    *status = 1;
  });
}

}  // namespace memgate
