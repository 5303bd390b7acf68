// The command line. Each subcommand lives in its own cmd_<name>.cpp and
// registers itself on the CLI11 app; cli.cpp only dispatches.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
class Validator;
}

namespace memgate {

int cli_main(int argc, char** argv);

// Each returns the callback's exit status through `*status` once run.
void add_run_command(CLI::App& app, int* status);
// For `memgate run ... -- CMD ARGS`: everything after the first "--".
const std::vector<std::string>& run_command_after_dashes();
void add_doctor_command(CLI::App& app, int* status);
void add_history_command(CLI::App& app, int* status);
void add_plan_command(CLI::App& app, int* status);
void add_report_command(CLI::App& app, int* status);

// Every subcommand's --history says the same thing.
inline constexpr const char* kHistoryHelp =
    "history database (default: $MEMGATE_HISTORY, else the config's 'history', else "
    "$XDG_CACHE_HOME/memgate/history.db, else ~/.cache/memgate/history.db)";

// `--build ID|last` for every subcommand: a malformed value is a usage
// error (exit 2) before anything is opened.
const CLI::Validator& build_ref_check();

}  // namespace memgate
