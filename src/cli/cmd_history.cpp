// `memgate history`: the recent builds, or one build's jobs with what was
// predicted against what they used. Text for people, --json for tools
// (the keys are part of the contract; see README and
// history/record_json.hpp). --forget, --prune-older-than and --clear
// remove builds; `history export/import` move learned profiles between
// machines.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <memory>
#include <optional>
#include <set>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "cli/cli.hpp"
#include "cli/config.hpp"
#include "cli/help.hpp"
#include "history/build_ref.hpp"
#include "history/history.hpp"
#include "history/profiles.hpp"
#include "history/record_json.hpp"
#include "util/age.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"
#include "util/size.hpp"
#include "util/text.hpp"

namespace memgate {
namespace {

using nlohmann::json;

struct HistoryOptions {
  bool json = false;
  std::string build;    // "", "last" or an id
  std::string history;  // --history (or the config's)
  int limit = 20;
  // At most one of these (CLI11 refuses two).
  std::optional<std::int64_t> forget;  // --forget ID
  std::string prune_older_than;        // --prune-older-than AGE
  bool clear = false;                  // --clear
};

void print(const std::string& text) { std::fwrite(text.data(), 1, text.size(), stdout); }

std::string local_time(double unix_s) {
  std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  ::localtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

void print_builds(const std::vector<BuildSummary>& builds) {
  std::string out = fmt::format("{:>5}  {:<19}  {:>7}  {:>21}  {:>5}  {:>8}  {:>4}  {}\n", "ID", "STARTED", "WALL",
                                "PEAK / BUDGET", "JOBS", "MEM WAIT", "EXIT", "COMMAND");
  for (const auto& b : builds) {
    std::string mem = format_bytes(b.peak_bytes) + " / " + format_bytes(b.budget);
    out += fmt::format("{:>5}  {:<19}  {:>7}  {:>21}  {:>5}  {:>8}  {:>4}  {}  (in {})\n", b.id,
                       local_time(b.start_unix), format_duration(b.wall_s), mem, b.job_count,
                       format_duration(b.wait_s), b.exit_status, printable(b.command), printable(b.cwd));
  }
  print(out);
}

std::string prediction_error(const JobRecord& j) {
  if (j.predicted.peak <= 0 || j.peak_bytes <= 0) return "-";
  double e = 100.0 * static_cast<double>(j.predicted.peak - j.peak_bytes) / static_cast<double>(j.peak_bytes);
  return fmt::format("{:+.0f}%", e);
}

void print_build(const BuildRecord& b, const std::vector<const JobRecord*>& jobs) {
  BuildSummary s = summarize_build(b);
  std::string out = fmt::format("build {}  {}\n", b.id, printable(b.command));
  out += fmt::format("  in        {}\n", printable(b.cwd));
  out += fmt::format("  started   {}, wall {}, exit {}\n", local_time(b.start_unix), format_duration(s.wall_s),
                     b.exit_status);
  out += fmt::format("  memory    peak {} of budget {} (capacity {}), {} CPU slots\n", format_bytes(b.peak_bytes),
                     format_bytes(b.budget), format_bytes(b.capacity), b.slots);
  out += fmt::format("  jobs      {}, waited for memory {}\n", s.job_count, format_duration(s.wait_s));
  // What memgate did, when it did anything, and what escaped its gate;
  // every counter is in --json.
  auto nonzero = [&](const std::vector<Counter>& counters) {
    std::string line;
    for (Counter c : counters)
      if (std::int64_t n = get(b.counters, c); n > 0) line += fmt::format("{}{} {}", line.empty() ? "" : ", ", name(c), n);
    return line;
  };
  if (std::string acted = nonzero(action_counters()); !acted.empty()) out += fmt::format("  acted     {}\n", acted);
  if (std::string escaped = nonzero({Counter::ungated, Counter::oom_killed_ungated}); !escaped.empty())
    out += fmt::format("  ungated   {}\n", escaped);
  // The cost of optimism (work frozen and done again), for builds that
  // recorded it.
  if (b.counters.count(Counter::requeued_cpu_ms))
    out += fmt::format("  cost      {:.1f} job-s frozen, {:.1f} CPU-s requeued, {} retries, {} OOM kills\n",
                       static_cast<double>(get(b.counters, Counter::frozen_ms)) / 1000.0,
                       static_cast<double>(get(b.counters, Counter::requeued_cpu_ms)) / 1000.0,
                       get(b.counters, Counter::retried), get(b.counters, Counter::oom_killed));
  out += fmt::format("\n{:>10}  {:>10}  {:>6}  {:>7}  {:>7}  {:>5}  {:>4}  {}\n", "PEAK", "PREDICTED", "ERROR",
                     "CPU", "WALL", "TRIES", "EXIT", "JOB (heaviest first)");
  for (const JobRecord* j : jobs) {
    out += fmt::format("{:>10}  {:>10}  {:>6}  {:>7}  {:>7}  {:>5}  {:>4}  {}\n", format_bytes(j->peak_bytes),
                       format_bytes(j->predicted.peak), prediction_error(*j), format_duration(j->cpu_s),
                       format_duration(j->wall_s()), j->attempts, j->exit_status, printable(j->key.identity));
  }
  print(out);
}

int show_builds(History& h, const HistoryOptions& o, const std::string& path) {
  auto builds = h.list_builds(o.limit);
  if (o.json) {
    json list = json::array();
    for (const auto& b : builds) list.push_back(build_summary_json(b));
    print(json{{"builds", list}}.dump(2) + "\n");
  } else if (builds.empty()) {
    print(fmt::format("No builds recorded yet in {}. Run a build with 'memgate run -- ...' first.\n", path));
  } else {
    print_builds(builds);
  }
  return 0;
}

int show_build(History& h, const HistoryOptions& o, const std::string& path) {
  auto choice = load_build_ref(h, o.build, current_dir(), path);
  if (!choice) {
    log::error("{}", choice.error());
    return 1;
  }
  const BuildRecord& b = choice->build;
  if (o.json) {
    print(build_record_json(b));  // what `run --summary-json` writes, too
    return 0;
  }
  log::info("{}", choice->description);
  std::vector<const JobRecord*> jobs;
  for (const auto& j : b.jobs) jobs.push_back(&j);
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const JobRecord* a, const JobRecord* c) { return a->peak_bytes > c->peak_bytes; });
  print_build(b, jobs);
  return 0;
}

// The history database a command works on, opened: the one part every
// command here shares. `must_exist`: a command that only reads or removes
// never creates a database, and says what to do instead. Errors are
// printed; `status` is then the exit status.
struct OpenedHistory {
  std::unique_ptr<History> history;
  std::string path;
  int status = 0;
};
OpenedHistory open_history(const std::string& flag, bool must_exist) {
  OpenedHistory out;
  out.path = History::resolve_path(flag);
  if (auto s = History::check_location(out.path); !s) {
    log::error("{}", s.error());
    out.status = 1;
    return out;
  }
  if (must_exist && !path_exists(out.path)) {
    log::error("no build history at {}: run a build with 'memgate run' first", out.path);
    out.status = 1;
    return out;
  }
  auto h = History::open(out.path);
  if (!h) {
    log::error("{}", h.error());
    out.status = 1;
    return out;
  }
  out.history = std::move(*h);
  return out;
}

// --forget ID, --prune-older-than AGE, --clear.
int forget_builds(const HistoryOptions& o) {
  History::ForgetQuery q;
  std::string what;
  if (o.forget) {
    q.id = *o.forget;
    what = fmt::format("build #{}", *o.forget);
  } else if (!o.prune_older_than.empty()) {
    auto age = parse_age(o.prune_older_than);
    if (!age) {  // the option's check caught it already; kept for safety
      log::error("--prune-older-than: {}", age.error());
      return 2;
    }
    q.started_before = static_cast<double>(std::time(nullptr)) - *age;
    what = fmt::format("builds started more than {} ago", o.prune_older_than);
  } else {
    what = "every build";
  }
  auto opened = open_history(o.history, true);
  if (!opened.history) return opened.status;
  auto gone = opened.history->forget(q);
  if (!gone) {
    log::error("{}", gone.error());
    return 1;
  }
  if (o.forget && gone->builds == 0) {
    log::error("no build #{} in {} (see 'memgate history')", *o.forget, opened.path);
    return 1;
  }
  log::info("forgot {}: {} build(s) and {} job(s) removed from {}, {} build(s) left", what, gone->builds, gone->jobs,
            opened.path, gone->builds_left);
  return 0;
}

int run_history(const HistoryOptions& o) {
  if (o.forget || !o.prune_older_than.empty() || o.clear) return forget_builds(o);
  const std::string path = History::resolve_path(o.history);
  if (auto s = History::check_location(path); !s) {
    log::error("{}", s.error());
    return 1;
  }
  if (!path_exists(path) && o.build.empty()) {
    // Do not create a database just to say there is nothing in it.
    print(o.json ? nlohmann::json{{"builds", nlohmann::json::array()}}.dump(2) + "\n"
                 : fmt::format("No builds recorded yet ({} does not exist). Run a build with 'memgate run -- ...' "
                               "first.\n",
                               path));
    return 0;
  }
  auto opened = open_history(o.history, true);
  if (!opened.history) return opened.status;
  return o.build.empty() ? show_builds(*opened.history, o, path) : show_build(*opened.history, o, path);
}

// `history export FILE`: one profile per identity from every recorded
// build, plus imported profiles of identities never run here, so a file
// passed along a fleet keeps what it carried.
int export_profiles(const std::string& history, const std::string& file) {
  auto opened = open_history(history, true);
  if (!opened.history) return opened.status;
  History& h = *opened.history;
  std::vector<JobProfile> profiles = summarize_profiles(h.jobs_for_prediction(-1));
  std::set<std::string> own;
  for (const JobProfile& p : profiles) own.insert(p.key.identity);
  for (JobProfile& p : h.imported_profiles())
    if (!own.count(p.key.identity)) profiles.push_back(std::move(p));
  const auto words = private_words();
  const auto before = profiles.size();
  profiles.erase(std::remove_if(profiles.begin(), profiles.end(),
                                [&](const JobProfile& p) { return !is_portable(p.key.identity, words); }),
                 profiles.end());
  if (auto s = write_profiles_file(file, profiles); !s) {
    log::error("{}", s.error());
    return 1;
  }
  log::info("exported {} job profiles from {} to {}", profiles.size(), opened.path, file);
  if (before > profiles.size())
    log::info("left out {} whose identity names an absolute path, the user or the home directory",
              before - profiles.size());
  return 0;
}

// `history import FILE`: merged into the history's imported profiles.
// A file that cannot be read or is not a profile file of this version is
// bad input (exit 2) and changes nothing.
int import_profiles(const std::string& history, const std::string& file) {
  auto profiles = read_profiles_file(file, PredictionSource::imported);
  if (!profiles) {
    log::error("{}", profiles.error());
    return 2;
  }
  auto opened = open_history(history, false);
  if (!opened.history) return opened.status;
  auto added = opened.history->import_profiles(*profiles);
  if (!added) {
    log::error("{}", added.error());
    return 1;
  }
  log::info("imported {} job profiles from {} into {} ({} new)", profiles->size(), file, opened.path, *added);
  return 0;
}

// `history export FILE` and `history import FILE` have one shape: a FILE,
// the parent's --history (or the config's), a body given both.
CLI::App* add_profile_file_command(CLI::App* parent, const std::shared_ptr<HistoryOptions>& opts, int* status,
                                   const std::string& name, const std::string& help, const std::string& file_help,
                                   int (*body)(const std::string& history, const std::string& file)) {
  auto file = std::make_shared<std::string>();
  auto* cmd = parent->add_subcommand(name, help);
  cmd->add_option("FILE", *file, file_help)->required()->type_name("FILE");
  describe_command(cmd, "FILE", {fmt::format("memgate history {} team-prior.json", name)});
  cmd->fallthrough();  // `history export FILE --history PATH` too
  cmd->callback([opts, file, status, body] { *status = body(history_flag_or_config(opts->history), *file); });
  return cmd;
}

}  // namespace

void add_history_command(CLI::App& app, int* status) {
  auto opts = std::make_shared<HistoryOptions>();
  auto* cmd = app.add_subcommand("history", "past builds, or one build's jobs with predicted and actual memory");
  auto* json_flag = cmd->add_flag("--json", opts->json, "machine-readable output");
  auto* build = cmd->add_option("--build", opts->build, "show one build's jobs: its id, or 'last'")
                    ->type_name("ID|last")
                    ->check(build_ref_check());
  cmd->add_option("--history", opts->history, kHistoryHelp)->type_name("FILE");
  auto* limit = cmd->add_option("--limit", opts->limit, "how many recent builds to list (default 20)")
                    ->type_name("N")
                    ->check(CLI::PositiveNumber);
  auto* forget = cmd->add_option("--forget", opts->forget, "remove one build and its jobs from history")
                     ->type_name("ID")
                     ->check(CLI::PositiveNumber);
  auto* prune = cmd->add_option("--prune-older-than", opts->prune_older_than,
                                "remove every build that started more than AGE ago (30d, 12h, 2w; units s, m, h, "
                                "d, w)")
                    ->type_name("AGE")
                    ->check(CLI::Validator(
                        [](std::string& v) -> std::string {
                          auto r = parse_age(v);
                          return r ? "" : r.error();
                        },
                        ""));
  auto* clear = cmd->add_flag("--clear", opts->clear,
                              "remove every build (imported profiles stay; what was learned from the builds goes). "
                              "--forget, --prune-older-than and --clear go one at a time, without --json, --build, "
                              "--limit or export/import");
  // One removal at a time, and not mixed with showing builds.
  forget->excludes(prune)->excludes(clear)->excludes(build)->excludes(json_flag)->excludes(limit);
  prune->excludes(clear)->excludes(build)->excludes(json_flag)->excludes(limit);
  clear->excludes(build)->excludes(json_flag)->excludes(limit);
  auto* exp = add_profile_file_command(cmd, opts, status, "export",
                                       "write learned job profiles to a portable JSON file (no paths, no user names)",
                                       "the file to write", export_profiles);
  auto* imp = add_profile_file_command(cmd, opts, status, "import",
                                       "merge job profiles from a file written by 'history export' into history",
                                       "the file to read", import_profiles);
  for (CLI::App* sub : {exp, imp}) sub->excludes(forget)->excludes(prune)->excludes(clear);
  cmd->require_subcommand(0, 1);
  describe_command(cmd, "", {"memgate history", "memgate history --build last", "memgate history --build 12 --json",
                             "memgate history --prune-older-than 30d", "memgate history export team-prior.json"});
  cmd->callback([cmd, exp, imp, opts, status] {
    if (cmd->got_subcommand(exp) || cmd->got_subcommand(imp)) return;
    opts->history = history_flag_or_config(opts->history);
    *status = run_history(*opts);
  });
}

}  // namespace memgate
