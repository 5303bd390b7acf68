#include "run/run_stats.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/core.h>

#include "util/atomic_file.hpp"
#include "util/log.hpp"

namespace memgate {

double quantile(std::vector<double> values, double q) {
  if (values.empty()) return 0;
  q = std::clamp(q, 0.0, 1.0);
  std::size_t rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size())));
  std::size_t i = rank == 0 ? 0 : rank - 1;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(i), values.end());
  return values[i];
}

void RunStats::grant(double requested, double now) {
  waits_.push_back(std::max(0.0, now - requested));
  reactions_.push_back(std::max(0.0, now - std::max(requested, last_release_)));
}

namespace {
std::string ms_fields(const char* name, const std::vector<double>& v) {
  double mx = v.empty() ? 0 : *std::max_element(v.begin(), v.end());
  return fmt::format(R"("{0}_n":{1},"{0}_p50_ms":{2:.3f},"{0}_p99_ms":{3:.3f},"{0}_max_ms":{4:.3f})", name,
                     v.size(), quantile(v, 0.5) * 1e3, quantile(v, 0.99) * 1e3, mx * 1e3);
}
}  // namespace

std::string RunStats::json(double cpu_s, std::int64_t maxrss_kib, double wall_s, std::int64_t jobs) const {
  double per_job_ms = jobs > 0 ? cpu_s * 1e3 / static_cast<double>(jobs) : 0;
  return fmt::format(R"({{"cpu_s":{:.3f},"cpu_ms_per_job":{:.3f},"maxrss_kib":{},"wall_s":{:.3f},"jobs":{},)"
                     R"("loop_turns":{},{},{},{},{},{},{}}})"
                     "\n",
                     cpu_s, per_job_ms, maxrss_kib, wall_s, jobs, turns_, ms_fields("tick", ticks_),
                     ms_fields("tick_cpu", tick_cpus_), ms_fields("scan", scans_), ms_fields("scan_cpu", scan_cpus_),
                     ms_fields("wait", waits_), ms_fields("reaction", reactions_));
}

void RunStats::write(double wall_s, std::int64_t jobs) const {
  const char* path = std::getenv("MEMGATE_RUN_STATS");
  if (!path || !*path) return;
  rusage ru{};
  ::getrusage(RUSAGE_SELF, &ru);
  auto secs = [](const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6; };
  std::string text = json(secs(ru.ru_utime) + secs(ru.ru_stime), ru.ru_maxrss, wall_s, jobs);
  if (auto st = write_file_atomically(path, text); !st) log::warn("MEMGATE_RUN_STATS: {}", st.error());
}

}  // namespace memgate
