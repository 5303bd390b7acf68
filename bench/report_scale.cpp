// How the report scales: renders the HTML report and the Chrome trace of
// a synthetic build (10,000 jobs by default) and prints their sizes and
// times. The bar: the HTML report in under 2 s and under 5 MB.
//
//   bench_report_scale [--jobs N] [--slots N] [--seed N] [--out FILE.html] [--trace FILE.json]
//                      [--history PATH]
//
// With --out/--trace the rendered files are kept (the synthetic browser
// test uses this to get a report without a real run). With --history the
// build is also saved to that SQLite history and loaded back (timed), and
// the report is rendered from the loaded record, as `memgate report` does.
#include <CLI/CLI.hpp>
#include <fmt/core.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

#include "history/history.hpp"
#include "report/html.hpp"
#include "support/synthetic.hpp"
#include "report/trace.hpp"
#include "util/fs.hpp"

using namespace memgate;

namespace {

double seconds_of(const std::function<void()>& f) {
  auto t0 = std::chrono::steady_clock::now();
  f();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

bool keep(const std::string& path, const std::string& content) {
  if (path.empty()) return true;
  auto st = write_file(path, content, true);
  if (!st) std::fprintf(stderr, "bench_report_scale: %s\n", st.error().c_str());
  return st.ok();
}

// Saves `build` to the history at `path` and replaces it with what loads
// back, timing both, so the renderers below see exactly what history keeps.
bool round_trip(const std::string& path, BuildRecord& build) {
  auto history = History::open(path);
  if (!history) {
    std::fprintf(stderr, "bench_report_scale: %s\n", history.error().c_str());
    return false;
  }
  std::int64_t id = 0;
  bool saved = false;
  double t_save = seconds_of([&] {
    auto r = (*history)->save_build(build);
    if ((saved = r.ok())) id = *r;
    else std::fprintf(stderr, "bench_report_scale: save: %s\n", r.error().c_str());
  });
  if (!saved) return false;
  std::optional<BuildRecord> loaded;
  double t_load = seconds_of([&] { loaded = (*history)->load_build(id); });
  if (!loaded) {
    std::fprintf(stderr, "bench_report_scale: build %lld did not load back\n", static_cast<long long>(id));
    return false;
  }
  fmt::print("history: saved build {} in {:.3f} s, loaded it in {:.3f} s ({} jobs back)\n", id, t_save, t_load,
             loaded->jobs.size());
  build = std::move(*loaded);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  SyntheticOptions opt;
  opt.jobs = 10000;
  opt.slots = 16;
  std::string html_path, trace_path, history_path;
  CLI::App app{"render the report of a synthetic build and time it"};
  app.add_option("--jobs", opt.jobs, "jobs in the synthetic build")->check(CLI::Range(1, 10000000));
  app.add_option("--slots", opt.slots, "CPU slots")->check(CLI::Range(1, 4096));
  app.add_option("--seed", opt.seed, "random seed");
  app.add_option("--out", html_path, "keep the HTML report here");
  app.add_option("--trace", trace_path, "keep the trace JSON here");
  app.add_option("--history", history_path, "also save the build to this history and load it back");
  CLI11_PARSE(app, argc, argv);

  BuildRecord build;
  double t_make = seconds_of([&] { build = make_synthetic_build(opt); });
  size_t attempts = 0, samples = 0;
  for (const auto& j : build.jobs) {
    attempts += j.attempt_log.size();
    samples += j.profile.size();
  }
  fmt::print("synthetic build: {} jobs, {} attempts, {} slots, {} profile samples, {} memory points, {} events ({:.3f} s)\n",
             build.jobs.size(), attempts, build.slots, samples, build.memory.size(), build.events.size(), t_make);

  if (!history_path.empty() && !round_trip(history_path, build)) return 1;

  std::string html, trace;
  double t_html = seconds_of([&] { html = render_html_report(build); });
  double t_trace = seconds_of([&] { trace = render_trace_json(build); });
  fmt::print("html report: {} ({} bytes) in {:.3f} s  [limit: 5 MB, 2 s]\n", format_bytes(static_cast<Bytes>(html.size())),
             html.size(), t_html);
  fmt::print("trace json:  {} ({} bytes) in {:.3f} s\n", format_bytes(static_cast<Bytes>(trace.size())), trace.size(),
             t_trace);
  if (!keep(html_path, html) || !keep(trace_path, trace)) return 1;
  const bool within = html.size() < 5'000'000 && t_html < 2.0;
  if (opt.jobs >= 10000) fmt::print("html within the 10,000-job bar: {}\n", within ? "yes" : "NO");
  return 0;
}
