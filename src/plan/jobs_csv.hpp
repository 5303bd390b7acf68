// Measured job tables (`memgate plan --jobs-csv PATH`), in the format of
// the flash-attn measurements (tests/fixtures/flash-attn/):
//
//   file,targets,nvcc_threads,cpu_s,wall_s,peak_tree_bytes,
//   largest_process_peak_bytes,t_peak_s,mean_bytes,cpu_contended,profile
//
// plus, optionally, a directory of profiles (`t_seconds,bytes` per file)
// named in the `profile` column. Columns are found by name; extra ones are
// ignored.
//
// From table to workload:
// 1. Base measurements: per file, one clean single-target row with
//    --threads 1 (cpu_contended = 0, or a `__rerun` profile, which is a
//    clean repeat); an sm80 row is preferred. Contended rows are left out:
//    their wall and CPU times are inflated.
// 2. nvcc --threads T over K targets (data/README.md): with n = min(T, K)
//    pipelines at once, peak = n x the single-target peak, CPU = K x its
//    CPU, wall = CPU / n, and the job keeps n threads (its cpu_weight).
//    Its profile is the single-target profile played in rounds of n
//    pipelines (the last round holds the rest), each round taking its
//    share of the job and scaled by its pipeline count.
// 3. If every base file is a flash-attn kernel, the workload is the whole
//    flash-attn 2.8 kernel build (plan/flash_attn.hpp: 96 files, each
//    unmeasured one taking the figures of the measured file most like it).
//    Otherwise every base file is one job.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/job.hpp"
#include "plan/workload.hpp"
#include "util/result.hpp"

namespace memgate::plan {

// One row of a measured job table: one nvcc run of one file.
struct MeasuredRow {
  std::string file;
  std::string targets;    // "sm80", "sm80+sm90", "all6"
  int target_count = 1;
  int nvcc_threads = 1;
  double cpu_s = 0;
  double wall_s = 0;
  Bytes peak = 0;
  double t_peak_s = 0;
  Bytes mean = 0;
  bool contended = false;
  std::string profile;    // file name in the profiles directory
  std::vector<MemSample> samples;  // the profile, if it was found
};

Result<std::vector<MeasuredRow>> parse_jobs_csv(std::string_view text);
// `t_seconds,bytes` rows (a header line is skipped).
std::vector<MemSample> parse_profile_csv(std::string_view text);
// "sm80" -> 1, "sm80+sm90" -> 2, "all6" -> 6.
int count_targets(std::string_view targets);

// Reads the table and the profiles it names from `profiles_dir`, or, if
// that is empty, from any directory next to the table whose name ends in
// "profiles". A missing profile is not an error (one is synthesized).
Result<std::vector<MeasuredRow>> read_jobs_csv(const std::string& path, const std::string& profiles_dir = "");

struct NvccShape {
  int threads = 1;  // nvcc --threads
  int targets = 1;  // archs in the -gencode list
};
// Targets beyond this are taken as this many (`memgate plan` refuses
// more), so a job's peak, its single-target peak times its pipelines, fits.
constexpr int kMaxNvccTargets = 1024;

std::vector<MeasuredRow> base_measurements(const std::vector<MeasuredRow>& rows);

// One nvcc job compiling `file` with the base file's figures.
PlanJob nvcc_job(const MeasuredRow& base, const std::string& file, const NvccShape& shape);

// One row as the job it measured (for bench/packing.cpp):
// its own peak, CPU time and profile, min(threads, targets) pipelines at
// once. A contended row's wall time is inflated by its neighbour, so its
// duration is taken from its CPU time instead: per-target CPU times the
// rounds of pipelines (ceil(targets / pipelines)), as a compile that
// computes all the time does; a clean row keeps its measured wall time.
PlanJob measured_job(const MeasuredRow& row);

struct Workload {
  std::vector<PlanJob> jobs;
  std::string description;  // for the table's title
};

// Steps 1-3 above. Errors if the table has no usable row.
Result<Workload> workload_from_measurements(const std::vector<MeasuredRow>& rows, const NvccShape& shape);

// Each job's peak in the workload the table `csv` gives for `shape`;
// empty when it has no usable row.
std::vector<Bytes> measured_peaks(std::string_view csv, const NvccShape& shape);

// The flash-attn measurements shipped in the binary
// (tests/fixtures/flash-attn/flash-attn-nvcc-jobs.csv at build time).
std::string_view shipped_flash_attn_measurements();

}  // namespace memgate::plan
