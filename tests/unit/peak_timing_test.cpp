// When a job's memory peaks and what it keeps after (predict/profile.hpp):
// peak_timing and downsample_profile on made-up curves and on the
// measured flash-attn nvcc jobs of tests/fixtures/flash-attn.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "predict/profile.hpp"

using namespace memgate;

namespace {
constexpr Bytes MB = 1000 * 1000;
}  // namespace

TEST(PeakTiming, SinglePeakThenLow) {
  std::vector<MemSample> prof;
  for (int t = 0; t <= 100; ++t) {
    Bytes b = t <= 20 ? t * 200 * MB : 1000 * MB;
    prof.push_back({static_cast<double>(t), b});
  }
  auto pt = peak_timing(prof);
  EXPECT_EQ(pt.peak, 4000 * MB);
  EXPECT_DOUBLE_EQ(pt.t_peak_s, 20);
  EXPECT_NEAR(pt.peak_over_frac, 0.21, 1e-9);  // the sample after the last high one
  EXPECT_EQ(pt.after_peak_bytes, 1000 * MB);
  EXPECT_NEAR(peak_timing(prof, 210).peak_over_frac, 0.1, 1e-9);  // a longer job (explicit duration)
}

TEST(PeakTiming, SeveralPeaksReleaseOnlyAfterTheLast) {
  // Two archs compiled one after the other: two equal peaks.
  std::vector<MemSample> prof;
  for (int t = 0; t <= 100; ++t) {
    Bytes b = (t == 20 || t == 60) ? 4000 * MB : (t == 61 ? 3700 * MB : 900 * MB);
    prof.push_back({static_cast<double>(t), b});
  }
  auto pt = peak_timing(prof);
  EXPECT_DOUBLE_EQ(pt.t_peak_s, 20);
  EXPECT_NEAR(pt.peak_over_frac, 0.62, 1e-9);  // 61 is still within 90%
  EXPECT_EQ(pt.after_peak_bytes, 900 * MB);
}

TEST(PeakTiming, HighToTheEndKeepsTheReservation) {
  std::vector<MemSample> prof = {{0, 100}, {1, 500}, {2, 1000}, {3, 990}};
  auto pt = peak_timing(prof);
  EXPECT_DOUBLE_EQ(pt.peak_over_frac, 1.0);
  EXPECT_EQ(pt.after_peak_bytes, 1000);
  auto none = peak_timing({});
  EXPECT_EQ(none.peak, 0);
  EXPECT_DOUBLE_EQ(none.peak_over_frac, 1.0);
}

TEST(PeakTiming, DownsamplingKeepsPeakAndEnd) {
  std::vector<MemSample> prof;
  for (int t = 0; t < 1000; ++t) prof.push_back({t * 0.2, (t == 377 ? 5000 : 100 + t % 7) * MB});
  auto small = downsample_profile(prof, 64);
  EXPECT_LE(small.size(), 64u);
  EXPECT_DOUBLE_EQ(small.back().t_s, prof.back().t_s);
  EXPECT_EQ(peak_timing(small).peak, 5000 * MB);
  EXPECT_TRUE(std::is_sorted(small.begin(), small.end(),
                             [](const MemSample& a, const MemSample& b) { return a.t_s < b.t_s; }));
  EXPECT_EQ(downsample_profile(small, 64).size(), small.size());
}

// --- the measured flash-attn jobs (see /work/shared/data/README.md) ---

namespace {

// The data files have CRLF line ends.
bool get_line(std::istream& in, std::string& line) {
  if (!std::getline(in, line)) return false;
  if (!line.empty() && line.back() == '\r') line.pop_back();
  return true;
}

// The measurements ship with the tests when tests/fixtures/flash-attn is
// there; otherwise the shared copy they came from.
std::string data_dir() {
  if (const char* d = std::getenv("MEMGATE_DATA")) return d;
  std::string fixtures = std::string(MEMGATE_FIXTURES) + "/flash-attn";
  if (std::ifstream(fixtures + "/flash-attn-nvcc-jobs.csv").good()) return fixtures;
  return "/work/shared/data";
}

std::vector<MemSample> load_profile(const std::string& path) {
  std::ifstream in(path);
  std::vector<MemSample> out;
  std::string line;
  get_line(in, line);  // header
  while (get_line(in, line)) {
    auto comma = line.find(',');
    if (comma == std::string::npos) continue;
    out.push_back({std::stod(line.substr(0, comma)), std::stoll(line.substr(comma + 1))});
  }
  return out;
}

struct MeasuredRow {
  std::string targets, profile;
  double wall_s = 0, t_peak_s = 0;
  Bytes peak = 0;
  bool contended = false;
};

std::vector<MeasuredRow> load_jobs() {
  std::ifstream in(data_dir() + "/flash-attn-nvcc-jobs.csv");
  std::vector<MeasuredRow> out;
  std::string line;
  get_line(in, line);
  while (get_line(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');) f.push_back(cell);
    if (f.size() < 11) continue;
    out.push_back({f[1], f[10], std::stod(f[4]), std::stod(f[7]), std::stoll(f[5]), f[9] == "1"});
  }
  return out;
}

}  // namespace

TEST(PeakTiming, MeasuredFlashAttnJobs) {
  auto jobs = load_jobs();
  if (jobs.empty()) GTEST_SKIP() << "no flash-attn data in " << data_dir();
  int checked = 0;
  for (const auto& j : jobs) {
    auto prof = load_profile(data_dir() + "/flash-attn-profiles/" + j.profile);
    if (prof.empty() || j.contended || (j.targets != "sm80" && j.targets != "sm90")) continue;
    auto pt = peak_timing(downsample_profile(prof, 64), j.wall_s);
    SCOPED_TRACE(j.profile);
    EXPECT_GE(pt.peak_over_frac, 0.10);  // README: the peak comes 10-32% in
    EXPECT_LE(pt.peak_over_frac, 0.40);
    EXPECT_NEAR(pt.t_peak_s, j.t_peak_s, 1.5);
    EXPECT_LE(pt.peak, j.peak);
    EXPECT_GE(static_cast<double>(pt.peak), 0.97 * static_cast<double>(j.peak));
    EXPECT_GE(pt.after_peak_bytes, pt.peak / 5);  // falls to a quarter-ish, not to nothing
    EXPECT_LE(pt.after_peak_bytes, pt.peak * 7 / 10);
    ++checked;
  }
  EXPECT_GE(checked, 10);
}

TEST(PeakTiming, MeasuredJobsBackToBackReleaseAfterTheSecondPeak) {
  // sm80 then sm90 of the same kernel, as one job compiling two archs
  // with --threads 1 runs them.
  auto a = load_profile(data_dir() + "/flash-attn-profiles/flash_fwd_hdim128_fp16_sm80__sm80__t1__rerun.csv");
  auto b = load_profile(data_dir() + "/flash-attn-profiles/flash_fwd_hdim128_fp16_sm80__sm90__t1.csv");
  if (a.empty() || b.empty()) GTEST_SKIP() << "no flash-attn profiles in " << data_dir();
  const double offset = a.back().t_s + 1;
  std::vector<MemSample> both = a;
  for (auto s : b) both.push_back({s.t_s + offset, s.bytes});
  auto pt = peak_timing(both);
  auto second = peak_timing(b);
  EXPECT_GE(pt.peak_over_frac * both.back().t_s, offset + second.t_peak_s);
  EXPECT_GT(pt.peak_over_frac, 0.5);
  EXPECT_LT(pt.peak_over_frac, 0.7);
}
