#include "cli/cli.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <exception>
#include <string>
#include <vector>

#include "cli/config.hpp"
#include "cli/help.hpp"
#include "history/build_ref.hpp"
#include "util/log.hpp"
#include "wrap/wrapper.hpp"

namespace memgate {

namespace {
std::vector<std::string> g_after_dashes;
}  // namespace

const std::vector<std::string>& run_command_after_dashes() { return g_after_dashes; }

const CLI::Validator& build_ref_check() {
  static const CLI::Validator check(
      [](std::string& v) -> std::string {
        return is_build_ref(v) ? "" : "--build wants a build id or 'last', not '" + v + "'";
      },
      "");  // the option's metavar says ID|last already
  return check;
}

int cli_main(int argc, char** argv) {
  // The wrapper paths come first and skip CLI11 entirely.
  if (auto status = run_if_wrapper(argc, argv)) return *status;

  CLI::App app{"memgate: run any parallel build at the highest parallelism its memory allows"};
  app.set_version_flag("--version", std::string("memgate ") + MEMGATE_VERSION);
  app.require_subcommand(1);
  app.failure_message(CLI::FailureMessage::help);
  int status = 0;
  add_run_command(app, &status);
  auto* wrap = app.add_subcommand("wrap", "run one compiler command through the governor (launcher form)");
  wrap->allow_extras();  // handled above; listed here for --help
  describe_command(wrap, "-- PROGRAM [ARG...]",
                   {"cmake -DCMAKE_CXX_COMPILER_LAUNCHER='memgate;wrap' ..   # under memgate run"});
  add_doctor_command(app, &status);
  add_history_command(app, &status);
  add_plan_command(app, &status);
  add_report_command(app, &status);
  describe_app(app, {"memgate run -- make -j", "memgate run -- pip install flash-attn --no-build-isolation",
                     "memgate plan --cores 128 --capacity 432G", "MAX_JOBS=$(memgate plan --recommend)"});
  app.footer(app.get_footer() + "\n\n" + kConfigHelp);

  // `run` takes a whole command line after "--"; CLI11 must not parse it.
  std::vector<std::string> args(argv + 1, argv + argc);
  if (!args.empty() && args[0] == "run") {
    auto dashes = std::find(args.begin(), args.end(), "--");
    if (dashes != args.end()) {
      g_after_dashes.assign(dashes + 1, args.end());
      args.erase(dashes, args.end());
    }
  }
  if (auto unknown = unknown_word(app, args)) {
    log::error("{}", *unknown);
    return 2;
  }
  // Per-machine defaults, for the subcommands that take them; a broken
  // file is a usage error (exit 2), as a broken flag is, except for doctor
  // (which reports it) and history (which warns). Help never reads
  // it: `--help` is how one finds out what the file may say.
  const bool help = std::any_of(args.begin(), args.end(), [](const std::string& a) { return a == "--help" || a == "-h"; });
  if (!args.empty() && args[0] != "wrap" && args[0][0] != '-' && !help) {
    auto config = load_config(config_path());
    if (!config && (args[0] == "doctor" || args[0] == "history")) {
      // What one runs to find out what is wrong must not stop at it.
      if (args[0] == "history") log::warn("the config file was ignored: {}", config.error());
      set_machine_config_error(config.error());
    } else if (!config) {
      log::error("{}", config.error());
      return 2;
    } else {
      set_machine_config(std::move(*config));
    }
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes them reversed

  try {
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    log::error("{}", e.what());
    log::info("run 'memgate --help' for usage");
    return 2;
  } catch (const std::exception& e) {
    // The one place errors surface as text.
    log::error("{}", e.what());
    return status != 0 ? status : 1;
  }
  return status;
}

}  // namespace memgate
