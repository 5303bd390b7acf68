// bench_cold_error RECORDING [--jobs] [--tu-size]: replays a first build that nothing
// has seen (bench/cold-error records one) through the Predictor and prints
// how wrong each cold prediction was. Jobs are taken in their recorded
// start order; before each is predicted, every job that had finished by
// then is observed, as `memgate run` learns from its own build. The
// history is empty and no prior is loaded beyond what the recording's own
// jobs teach.
//
// --tu-size gives each job its preprocessed size (JobKey::tu_bytes): the
// recorded command is run again with -E (and without -c, -o and the
// dependency-file flags), its output counted.
//
// A recording line: start_s, end_s, largest RSS (KiB), exit status, cwd and
// the command (words separated by \x1f), tab-separated.
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "predict/identity.hpp"
#include "predict/predictor.hpp"
#include "util/text.hpp"

using namespace memgate;

namespace {

struct Job {
  double start = 0, end = 0;
  Bytes peak = 0;
  JobKey key;
  Bytes predicted = 0;
  PredictionSource source = PredictionSource::fallback;
  double error() const { return static_cast<double>(predicted) / static_cast<double>(peak) - 1.0; }
};

std::string quoted(const std::string& w) {
  std::string q = "'";
  for (char c : w) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The size of the command's preprocessed output; 0 when it fails.
Bytes preprocessed_size(const std::vector<std::string>& argv, const std::string& cwd) {
  std::string cmd = "cd " + quoted(cwd) + " &&";
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "-c" || a == "-MD" || a == "-MMD") continue;
    if (a == "-o" || a == "-MF" || a == "-MT" || a == "-MQ") {
      ++i;
      continue;
    }
    cmd += " " + quoted(a);
  }
  cmd += " -E -o - 2>/dev/null";
  FILE* f = ::popen(cmd.c_str(), "r");
  if (!f) return 0;
  Bytes n = 0;
  char buf[65536];
  for (std::size_t got; (got = std::fread(buf, 1, sizeof buf, f)) > 0;) n += static_cast<Bytes>(got);
  return ::pclose(f) == 0 ? n : 0;
}

std::vector<Job> read_jobs(const std::string& path, bool tu_size) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::vector<Job> jobs;
  std::string line;
  while (std::getline(in, line)) {
    const auto f = split(line, '\t');
    if (f.size() != 6) continue;
    if (std::stoi(std::string(f[3])) != 0) continue;  // a failed compile teaches nothing here
    Job j;
    j.start = std::stod(std::string(f[0]));
    j.end = std::stod(std::string(f[1]));
    j.peak = static_cast<Bytes>(std::stoll(std::string(f[2]))) * 1024;
    std::vector<std::string> argv;
    for (auto w : split(f[5], '\x1f')) argv.emplace_back(w);
    const CommandInfo info = analyze_command(argv, std::string(f[4]));
    if (info.mode == "probe" || j.peak <= 0) continue;
    j.key = info.key;
    if (tu_size) j.key.tu_bytes = preprocessed_size(argv, std::string(f[4]));
    jobs.push_back(std::move(j));
  }
  std::sort(jobs.begin(), jobs.end(), [](const Job& a, const Job& b) { return a.start < b.start; });
  return jobs;
}

JobRecord finished(const Job& j) {
  JobRecord r;
  r.key = j.key;
  r.peak_bytes = j.peak;
  r.start_s = j.start;
  r.end_s = j.end;
  r.cpu_s = j.end - j.start;
  r.attempt_log.push_back({j.start, j.end, Outcome::ok, j.peak});
  return r;
}

void replay(std::vector<Job>& jobs) {
  Predictor p;
  std::vector<const Job*> by_end;
  for (const auto& j : jobs) by_end.push_back(&j);
  std::sort(by_end.begin(), by_end.end(), [](const Job* a, const Job* b) { return a->end < b->end; });
  std::size_t seen = 0;
  for (auto& j : jobs) {
    while (seen < by_end.size() && by_end[seen]->end <= j.start) p.observe(finished(*by_end[seen++]));
    const Prediction pred = p.predict(j.key);
    j.predicted = pred.peak;
    j.source = pred.source;
  }
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string pct(double e) { return fmt::format("{:+.0f}%", 100 * e); }

void row(const std::string& name, const std::vector<const Job*>& js) {
  std::vector<double> e, a;
  for (const Job* j : js) {
    e.push_back(j->error());
    a.push_back(std::abs(j->error()));
  }
  const auto [lo, hi] = std::minmax_element(e.begin(), e.end());
  const auto under20 = std::count_if(e.begin(), e.end(), [](double x) { return x < -0.2; });
  fmt::print("  {:<10} {:>4} {:>8} {:>8} {:>8} {:>8} {:>9}\n", name, js.size(), pct(median(e)), pct(median(a)),
             pct(*lo), pct(*hi), under20);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: bench_cold_error RECORDING [--jobs] [--tu-size]\n";
    return 2;
  }
  bool each = false, tu_size = false;
  for (int i = 2; i < argc; ++i) {
    each = each || std::string(argv[i]) == "--jobs";
    tu_size = tu_size || std::string(argv[i]) == "--tu-size";
  }
  std::vector<Job> jobs;
  try {
    jobs = read_jobs(argv[1], tu_size);
  } catch (const std::exception& e) {
    std::cerr << "bench_cold_error: " << e.what() << "\n";
    return 1;
  }
  if (jobs.empty()) {
    std::cerr << "bench_cold_error: no compiles in " << argv[1] << "\n";
    return 1;
  }
  replay(jobs);
  fmt::print("{}: {} jobs{}, error = predicted / actual peak - 1\n", argv[1], jobs.size(),
             tu_size ? ", preprocessed sizes known" : "");
  if (each) {
    for (const auto& j : jobs)
      fmt::print("  {:>7.1f} MB -> {:>7.1f} MB {:>7} {:<8} {:>9} {}\n", j.peak / 1e6, j.predicted / 1e6,
                 pct(j.error()), name(j.source), j.key.tu_bytes, j.key.stem);
  }
  fmt::print("  {:<10} {:>4} {:>8} {:>8} {:>8} {:>8} {:>9}\n", "source", "n", "median", "med|e|", "worst-", "worst+",
             "under-20%");
  std::vector<const Job*> all;
  std::map<std::string, std::vector<const Job*>> by_source;
  for (const auto& j : jobs) {
    all.push_back(&j);
    by_source[std::string(name(j.source))].push_back(&j);
  }
  row("all", all);
  for (const auto& [s, js] : by_source) row(s, js);
  return 0;
}
