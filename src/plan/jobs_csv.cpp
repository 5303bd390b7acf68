#include "plan/jobs_csv.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <map>

#include "core/job_class.hpp"
#include "plan/flash_attn.hpp"
#include "util/fs.hpp"
#include "util/text.hpp"

namespace memgate::plan {

namespace {

// Fields of a CSV line (no quoting: the table's fields never need it),
// without trailing spaces or a '\r'.
std::vector<std::string> fields_of(std::string_view line) {
  std::vector<std::string> out;
  for (std::string_view f : split(line, ',')) {
    while (!f.empty() && (f.back() == '\r' || f.back() == ' ')) f.remove_suffix(1);
    out.emplace_back(f);
  }
  return out;
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (!line.empty() && line.find_first_not_of(" \r\t") != std::string_view::npos) out.push_back(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  return out;
}

std::optional<double> number(const std::string& s) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

// Byte counts and counts as the integers they become. A value outside
// its range is not converted (a double beyond the integer's range is
// undefined behaviour), so a damaged table cannot overflow them. 1 PiB
// is far above any job, and leaves room to multiply a peak by the
// pipelines of an nvcc job (at most 1024 targets, `memgate plan`).
std::optional<Bytes> bytes_value(const std::string& s) {
  auto v = number(s);
  if (!v || *v < 0 || *v > 0x1p50) return std::nullopt;
  return static_cast<Bytes>(*v);
}

std::optional<int> count_value(const std::string& s) {
  auto v = number(s);
  if (!v || *v < 1 || *v > 1 << 20) return std::nullopt;
  return static_cast<int>(*v);
}

}  // namespace

int count_targets(std::string_view targets) {
  if (targets.starts_with("all")) return count_value(std::string(targets.substr(3))).value_or(1);
  return 1 + static_cast<int>(std::count(targets.begin(), targets.end(), '+'));
}

Result<std::vector<MeasuredRow>> parse_jobs_csv(std::string_view text) {
  auto lines = lines_of(text);
  if (lines.empty()) return Error{"empty job table"};
  std::vector<std::string> header = fields_of(lines[0]);
  auto col = [&](std::string_view name) -> std::optional<size_t> {
    auto it = std::find(header.begin(), header.end(), name);
    if (it == header.end()) return std::nullopt;
    return static_cast<size_t>(it - header.begin());
  };
  auto c_file = col("file"), c_cpu = col("cpu_s"), c_wall = col("wall_s"), c_peak = col("peak_tree_bytes");
  if (!c_file || !c_cpu || !c_wall || !c_peak)
    return Error{"job table needs the columns file, cpu_s, wall_s and peak_tree_bytes"};
  auto c_targets = col("targets"), c_threads = col("nvcc_threads"), c_tpeak = col("t_peak_s"),
       c_mean = col("mean_bytes"), c_cont = col("cpu_contended"), c_prof = col("profile");

  std::vector<MeasuredRow> out;
  for (size_t i = 1; i < lines.size(); ++i) {
    std::vector<std::string> f = fields_of(lines[i]);
    auto get = [&](std::optional<size_t> c) { return c && *c < f.size() ? f[*c] : std::string(); };
    MeasuredRow j;
    j.file = get(c_file);
    auto cpu = number(get(c_cpu)), wall = number(get(c_wall));
    auto peak = bytes_value(get(c_peak));
    if (j.file.empty() || !cpu || !wall || !peak || *wall <= 0)
      return Error{fmt::format("job table line {}: expected a file, cpu_s, wall_s > 0 and peak_tree_bytes", i + 1)};
    j.cpu_s = *cpu;
    j.wall_s = *wall;
    j.peak = *peak;
    j.targets = c_targets ? get(c_targets) : "sm80";
    j.target_count = count_targets(j.targets);
    j.nvcc_threads = count_value(get(c_threads)).value_or(1);
    j.t_peak_s = number(get(c_tpeak)).value_or(0);
    j.mean = bytes_value(get(c_mean)).value_or(0);
    j.contended = number(get(c_cont)).value_or(0) != 0;
    j.profile = get(c_prof);
    out.push_back(std::move(j));
  }
  if (out.empty()) return Error{"job table has no rows"};
  return out;
}

std::vector<MemSample> parse_profile_csv(std::string_view text) {
  std::vector<MemSample> out;
  for (std::string_view line : lines_of(text)) {
    std::vector<std::string> f = fields_of(line);
    if (f.size() < 2) continue;
    auto t = number(f[0]);
    auto b = bytes_value(f[1]);
    if (!t || !b) continue;  // the header, or a damaged line
    out.push_back({*t, *b});
  }
  return out;
}

Result<std::vector<MeasuredRow>> read_jobs_csv(const std::string& path, const std::string& profiles_dir) {
  auto text = read_file(path);
  if (!text) return Error{fmt::format("cannot read the job table {}", path)};
  auto rows = parse_jobs_csv(*text);
  if (!rows) return Error{fmt::format("{}: {}", path, rows.error())};
  std::vector<std::string> dirs;
  if (!profiles_dir.empty()) {
    dirs.push_back(profiles_dir);
  } else {
    std::error_code ec;
    std::filesystem::path parent = std::filesystem::path(path).parent_path();
    if (parent.empty()) parent = ".";
    for (const auto& entry : std::filesystem::directory_iterator(parent, ec))
      if (entry.is_directory(ec) && entry.path().filename().string().ends_with("profiles"))
        dirs.push_back(entry.path().string());
    std::sort(dirs.begin(), dirs.end());
  }
  for (MeasuredRow& j : *rows) {
    if (j.profile.empty()) continue;
    for (const std::string& d : dirs) {
      if (auto p = read_file(join_path(d, j.profile))) {
        j.samples = parse_profile_csv(*p);
        break;
      }
    }
  }
  return rows;
}

std::vector<MeasuredRow> base_measurements(const std::vector<MeasuredRow>& rows) {
  std::vector<MeasuredRow> out;
  std::map<std::string, size_t> at;
  for (const MeasuredRow& r : rows) {
    bool clean = !r.contended || r.profile.find("__rerun") != std::string::npos;
    if (!clean || r.target_count != 1 || r.nvcc_threads != 1) continue;
    auto it = at.find(r.file);
    if (it == at.end()) {
      at[r.file] = out.size();
      out.push_back(r);
    } else if (r.targets == "sm80" && out[it->second].targets != "sm80") {
      out[it->second] = r;
    }
  }
  return out;
}

namespace {

// The single-target profile, in rounds of `n` pipelines over `k` targets.
std::vector<ProfilePoint> rounds_profile(const std::vector<ProfilePoint>& single, int n, int k) {
  std::vector<ProfilePoint> out;
  double start = 0;
  for (int done = 0; done < k;) {
    int m = std::min(n, k - done);
    double span = static_cast<double>(m) / k;
    for (const ProfilePoint& pt : single) {
      ProfilePoint q{start + pt.p * span, pt.bytes * m};
      if (!out.empty() && q.p <= out.back().p) q.p = out.back().p;
      out.push_back(q);
    }
    start += span;
    done += m;
  }
  out.back().p = 1.0;
  return downsample(out, kMaxProfilePoints);
}

std::vector<ProfilePoint> single_profile(const MeasuredRow& m) {
  if (!m.samples.empty()) return profile_from_samples(m.samples, m.wall_s, m.peak, m.t_peak_s);
  // synthesize_profile's shape (ramp from a tenth of the peak, a short
  // hold and fall), with the level after it that gives the measured mean.
  double at = m.wall_s > 0 ? std::clamp(m.t_peak_s / m.wall_s, 0.0, 1.0) : 0.2;
  double hold = std::min(0.02, 1 - at), fall = std::min(0.02, 1 - at - hold), rest = 1 - at - hold - fall;
  double peak = static_cast<double>(m.peak);
  double level = peak / 4;
  if (m.mean > 0 && rest + fall > 0)
    level = (static_cast<double>(m.mean) - peak * (0.55 * at + hold + 0.5 * fall)) / (0.5 * fall + rest);
  return synthesize_profile(m.peak, at, at + hold, static_cast<Bytes>(std::clamp(level, 0.0, peak)));
}

// A table's jobs are told apart by how many targets they compile, not
// which: the measurements are per target.
JobClass nvcc_class(int targets) { return JobClass{"", "nvcc", "compile", {fmt::format("{} targets", targets)}}; }

}  // namespace

PlanJob nvcc_job(const MeasuredRow& base, const std::string& file, const NvccShape& shape) {
  int k = std::clamp(shape.targets, 1, kMaxNvccTargets);
  int n = std::min(std::max(1, shape.threads), k);
  PlanJob job;
  job.name = file;
  job.key = make_job_key(JobIdentity{nvcc_class(k), file, "", ""}, file, n);
  job.threads = n;
  job.cpu_s = base.cpu_s * k;
  // A clean single-target job computes nearly all of its wall time; keep
  // the measured ratio rather than assume it.
  job.work_s = base.wall_s * k / n;
  job.profile = rounds_profile(single_profile(base), n, k);
  normalize(job);
  job.predicted.source = PredictionSource::profile;
  return job;
}

PlanJob measured_job(const MeasuredRow& row) {
  int k = std::clamp(row.target_count, 1, kMaxNvccTargets);
  int n = std::min(std::max(1, row.nvcc_threads), k);
  PlanJob job;
  job.name = fmt::format("{} ({}, --threads {})", row.file, row.targets, row.nvcc_threads);
  // The tag tells the rows of one file apart: its targets, its threads,
  // and whether it was measured alone.
  std::string tag = fmt::format("{}-t{}{}", row.targets, row.nvcc_threads, row.contended ? "" : "-clean");
  job.key = make_job_key(JobIdentity{nvcc_class(k), row.file, "", tag}, row.file, n);
  job.threads = n;
  job.cpu_s = row.cpu_s;
  int rounds = (k + n - 1) / n;
  job.work_s = row.contended ? row.cpu_s / k * rounds : row.wall_s;
  job.profile = single_profile(row);
  normalize(job);
  job.predicted.source = PredictionSource::profile;
  return job;
}

Result<Workload> workload_from_measurements(const std::vector<MeasuredRow>& rows, const NvccShape& shape) {
  std::vector<MeasuredRow> bases = base_measurements(rows);
  if (bases.empty()) return Error{"the job table has no clean single-target --threads 1 row to build jobs from"};
  Workload w;
  bool flash = std::all_of(bases.begin(), bases.end(), [](const MeasuredRow& b) { return is_flash_attn_kernel(b.file); });
  int k = std::clamp(shape.targets, 1, kMaxNvccTargets), n = std::min(std::max(1, shape.threads), k);
  if (flash) {
    int measured = 0;
    for (const std::string& file : flash_attn_kernel_files()) {
      const MeasuredRow* b = nearest_flash_attn_kernel(bases, file);
      if (!b) continue;  // no measured kernel of this kind at all
      measured += b->file == file;
      w.jobs.push_back(nvcc_job(*b, file, shape));
    }
    w.description = fmt::format("flash-attn 2.8 kernels: {} files ({} measured, the rest from their nearest measured file)",
                                w.jobs.size(), measured);
  } else {
    for (const MeasuredRow& b : bases) w.jobs.push_back(nvcc_job(b, b.file, shape));
    w.description = fmt::format("{} measured nvcc jobs", w.jobs.size());
  }
  w.description += fmt::format(", {} target{}, nvcc --threads {} ({} at once)", k, k == 1 ? "" : "s",
                               std::max(1, shape.threads), n);
  return w;
}

std::vector<Bytes> measured_peaks(std::string_view csv, const NvccShape& shape) {
  auto rows = parse_jobs_csv(csv);
  if (!rows) return {};
  auto w = workload_from_measurements(*rows, shape);
  if (!w) return {};
  std::vector<Bytes> peaks;
  for (const PlanJob& j : w->jobs) peaks.push_back(j.peak);
  return peaks;
}

}  // namespace memgate::plan
