// `memgate report`: the HTML timeline and the Chrome trace of a build
// recorded in history (the last one unless --build says which).
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <memory>
#include <string>

#include "cli/cli.hpp"
#include "cli/config.hpp"
#include "cli/help.hpp"
#include "history/build_ref.hpp"
#include "history/history.hpp"
#include "report/files.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"

namespace memgate {
namespace {

struct ReportOptions {
  std::string build = "last";
  std::string html;
  std::string trace;
  std::string history;
};

// The build to report on, or an error that says what to do instead.
Result<BuildRecord> load(const ReportOptions& o) {
  const std::string path = History::resolve_path(o.history);
  // Checked first so that asking for a report never creates an empty database.
  if (!path_exists(path)) {
    return Error{fmt::format("no build history at {}: run a build with 'memgate run' first", path)};
  }
  auto history = History::open(path);
  if (!history) return Error{fmt::format("cannot open the build history {}: {}", path, history.error())};
  auto choice = load_build_ref(**history, o.build, current_dir(), path);
  if (!choice) return Error{choice.error()};
  log::info("report of {}", choice->description);
  return std::move(choice->build);
}

int run_report(ReportOptions o) {
  auto build = load(o);
  if (!build) {
    log::error("{}", build.error());
    return 1;
  }
  if (o.html.empty() && o.trace.empty()) o.html = "memgate-report.html";
  Status st = write_reports(*build, o.html, o.trace);
  if (!st) {
    log::error("{}", st.error());
    return 1;
  }
  // The paths on stdout, so `xdg-open "$(memgate report)"` works.
  for (const auto& p : {o.html, o.trace}) {
    if (!p.empty()) fmt::print("{}\n", p);
  }
  return 0;
}

}  // namespace

void add_report_command(CLI::App& app, int* status) {
  auto opt = std::make_shared<ReportOptions>();
  auto* cmd = app.add_subcommand("report", "write the HTML timeline and the Chrome trace of a recorded build");
  cmd->add_option("--build", opt->build, "build id (see 'memgate history'), or 'last'")
      ->type_name("ID|last")
      ->check(build_ref_check());
  cmd->add_option("--html", opt->html, "write the self-contained HTML report here (default: memgate-report.html)")
      ->type_name("FILE");
  cmd->add_option("--trace", opt->trace, "write the Chrome trace JSON here (Perfetto, chrome://tracing)")
      ->type_name("FILE");
  cmd->add_option("--history", opt->history, kHistoryHelp)->type_name("FILE");
  describe_command(cmd, "", {"memgate report", "memgate report --build 12 --html build12.html --trace build12.json"});
  cmd->callback([opt, status] {
    opt->history = history_flag_or_config(opt->history);
    *status = run_report(*opt);
  });
}

}  // namespace memgate
