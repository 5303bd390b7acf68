// `memgate history`: the recent builds, or one build's jobs with what was
// predicted against what they used. Text for people, --json for tools
// (the keys are part of the contract; see README).
#include <CLI/CLI.hpp>

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <ctime>
#include <memory>
#include <set>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include "cli/cli.hpp"
#include "cli/help.hpp"
#include "history/build_ref.hpp"
#include "history/history.hpp"
#include "history/profiles.hpp"
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
  std::string history;  // --history
  int limit = 20;
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

json build_json(const BuildSummary& s) {
  return {{"id", s.id},
          {"start_unix", s.start_unix},
          {"wall_s", s.wall_s},
          {"exit_status", s.exit_status},
          {"peak_bytes", s.peak_bytes},
          {"budget_bytes", s.budget},
          {"job_count", s.job_count},
          {"wait_s", s.wait_s},
          {"cwd", s.cwd},
          {"command", s.command}};
}

json job_json(const JobRecord& j) {
  return {{"identity", j.key.identity},
          {"tool", j.key.tool},
          {"klass", j.key.klass},
          {"predicted_peak_bytes", j.predicted.peak},
          {"predicted_source", name(j.predicted.source)},
          {"predicted_cpu_s", j.predicted.cpu_s},
          {"predicted_wall_s", j.predicted.wall_s},
          {"peak_bytes", j.peak_bytes},
          {"cpu_s", j.cpu_s},
          {"wall_s", j.wall_s()},
          {"wait_s", j.wait_s},
          {"frozen_s", j.frozen_s},
          {"t_peak_s", j.t_peak_s},
          {"peak_over_frac", j.peak_over_frac},
          {"attempts", j.attempts},
          {"exit_status", j.exit_status},
          {"where", name(j.where)},
          {"engine", j.engine}};
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
  // What memgate did, when it did anything; every counter is in --json.
  std::string acted;
  for (Counter c : {Counter::ran_alone, Counter::frozen, Counter::requeued, Counter::retried, Counter::oom_killed,
                    Counter::oom_killed_ungated, Counter::ungated})
    if (std::int64_t n = get(b.counters, c); n > 0) acted += fmt::format("{}{} {}", acted.empty() ? "" : ", ", name(c), n);
  if (!acted.empty()) out += fmt::format("  acted     {}\n", acted);
  // The cost of optimism (issue 13), for builds that recorded it.
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
    for (const auto& b : builds) list.push_back(build_json(b));
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
  if (!o.json) log::info("{}", choice->description);
  const BuildRecord* b = &choice->build;
  std::vector<const JobRecord*> jobs;
  for (const auto& j : b->jobs) jobs.push_back(&j);
  std::stable_sort(jobs.begin(), jobs.end(),
                   [](const JobRecord* a, const JobRecord* c) { return a->peak_bytes > c->peak_bytes; });
  if (o.json) {
    json build = build_json(summarize_build(*b));
    build["end_unix"] = b->end_unix;
    build["capacity_bytes"] = b->capacity;
    build["slots"] = b->slots;
    build["counters"] = by_name(b->counters);
    json list = json::array();
    for (const JobRecord* j : jobs) list.push_back(job_json(*j));
    print(json{{"build", build}, {"jobs", list}}.dump(2) + "\n");
  } else {
    print_build(*b, jobs);
  }
  return 0;
}

int run_history(const HistoryOptions& o) {
  const std::string path = History::resolve_path(o.history);
  if (!path_exists(path) && o.build.empty()) {
    // Do not create a database just to say there is nothing in it.
    print(o.json ? json{{"builds", json::array()}}.dump(2) + "\n"
                 : fmt::format("No builds recorded yet ({} does not exist). Run a build with 'memgate run -- ...' "
                               "first.\n",
                               path));
    return 0;
  }
  if (!path_exists(path)) {
    log::error("no build history at {}: run a build with 'memgate run' first", path);
    return 1;
  }
  auto h = History::open(path);
  if (!h) {
    log::error("{}", h.error());
    return 1;
  }
  return o.build.empty() ? show_builds(**h, o, path) : show_build(**h, o, path);
}

// `history export FILE`: one profile per identity from every recorded
// build, plus imported profiles of identities never run here, so a file
// passed along a fleet keeps what it carried.
int export_profiles(const std::string& history, const std::string& file) {
  const std::string path = History::resolve_path(history);
  if (!path_exists(path)) {
    log::error("no build history at {} to export: run a build with 'memgate run' first", path);
    return 1;
  }
  auto h = History::open(path);
  if (!h) {
    log::error("{}", h.error());
    return 1;
  }
  std::vector<JobProfile> profiles = summarize_profiles((*h)->jobs_for_prediction(-1));
  std::set<std::string> own;
  for (const JobProfile& p : profiles) own.insert(p.key.identity);
  for (JobProfile& p : (*h)->imported_profiles())
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
  log::info("exported {} job profiles from {} to {}", profiles.size(), path, file);
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
  const std::string path = History::resolve_path(history);
  auto h = History::open(path);
  if (!h) {
    log::error("{}", h.error());
    return 1;
  }
  auto added = (*h)->import_profiles(*profiles);
  if (!added) {
    log::error("{}", added.error());
    return 1;
  }
  log::info("imported {} job profiles from {} into {} ({} new)", profiles->size(), file, path, *added);
  return 0;
}

}  // namespace

void add_history_command(CLI::App& app, int* status) {
  auto opts = std::make_shared<HistoryOptions>();
  auto* cmd = app.add_subcommand("history", "past builds, or one build's jobs with predicted and actual memory");
  cmd->add_flag("--json", opts->json, "machine-readable output");
  cmd->add_option("--build", opts->build, "show one build's jobs: its id, or 'last'")
      ->type_name("ID|last")
      ->check(build_ref_check());
  cmd->add_option("--history", opts->history, kHistoryHelp)->type_name("FILE");
  cmd->add_option("--limit", opts->limit, "how many recent builds to list (default 20)")
      ->type_name("N")
      ->check(CLI::PositiveNumber);
  auto file = std::make_shared<std::string>();
  auto* exp = cmd->add_subcommand("export", "write learned job profiles to a portable JSON file (no paths, no user names)");
  exp->add_option("FILE", *file, "the file to write")->required()->type_name("FILE");
  describe_command(exp, "FILE", {"memgate history export team-prior.json"});
  exp->callback([opts, file, status] { *status = export_profiles(opts->history, *file); });
  auto* imp = cmd->add_subcommand("import", "merge job profiles from a file written by 'history export' into history");
  imp->add_option("FILE", *file, "the file to read")->required()->type_name("FILE");
  describe_command(imp, "FILE", {"memgate history import team-prior.json"});
  imp->callback([opts, file, status] { *status = import_profiles(opts->history, *file); });
  cmd->require_subcommand(0, 1);
  exp->fallthrough();  // `history export FILE --history PATH` too
  imp->fallthrough();
  describe_command(cmd, "", {"memgate history", "memgate history --build last", "memgate history --build 12 --json",
                             "memgate history export team-prior.json"});
  cmd->callback([cmd, exp, imp, opts, status] {
    if (cmd->got_subcommand(exp) || cmd->got_subcommand(imp)) return;
    *status = run_history(*opts);
  });
}

}  // namespace memgate
