// The report's pure chart numbers (report/chart.hpp) and the derived
// reserved-memory curve (report/timeline.hpp).
#include "report/chart.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "report/timeline.hpp"

using namespace memgate;

TEST(ByteTicks, LabelsNeverCloserThanTheMinimum) {
  for (Bytes top : {Bytes{1}, 300 * KiB, 40 * MiB, 300 * MiB, 1100 * MiB, 3 * GiB, 63 * GiB, 900 * GiB}) {
    for (int height : {60, 176, 400}) {
      const Bytes step = byte_tick_step(top, height, 28);
      ASSERT_GT(step, 0);
      const Bytes ticks = (top + step - 1) / step;  // steps up to the rounded-up top
      EXPECT_LE(ticks * 28, std::max(height, 28)) << format_bytes(top) << " on " << height << " px";
    }
  }
}

TEST(ByteTicks, StepsAreBinaryRoundNumbers) {
  EXPECT_EQ(byte_tick_step(1100 * MiB, 176, 28), 256 * MiB);  // 6 ticks at most: 0..1.25 GiB
  EXPECT_EQ(byte_tick_step(63 * GiB, 176, 28), 16 * GiB);
  EXPECT_EQ(byte_tick_step(100 * MiB, 176, 28), 32 * MiB);
}

TEST(ByteTicks, SmallValuesDoNotCrowdTheAxis) {
  // The old chart labelled 0, top/2 and the peak: at small values two of
  // them fell on one another. Nice ticks are evenly spaced.
  const Bytes step = byte_tick_step(12 * MiB, 176, 28);
  EXPECT_EQ(step, 2 * MiB);
  EXPECT_EQ(axis_bytes(step * 3), "6 MiB");
}

TEST(TimeTicks, NiceStepsAtLeastTheMinimumApart) {
  EXPECT_DOUBLE_EQ(time_tick_step(30, 1200, 80), 2);       // 40 px/s
  EXPECT_DOUBLE_EQ(time_tick_step(185, 1200, 80), 15);     // 6.5 px/s
  EXPECT_DOUBLE_EQ(time_tick_step(3000, 1200, 80), 300);
  EXPECT_DOUBLE_EQ(time_tick_step(0.8, 1200, 80), 0.1);
  EXPECT_DOUBLE_EQ(time_tick_step(40 * 86400, 1000, 80), 4 * 86400);
  for (double t_end : {0.5, 7.0, 95.0, 1234.0, 99999.0}) {
    const double step = time_tick_step(t_end, 1200, 80);
    EXPECT_GE(step / t_end * 1200, 80) << t_end;
  }
}

TEST(AxisLabels, ReadWithoutNoise) {
  EXPECT_EQ(axis_bytes(0), "0");
  EXPECT_EQ(axis_bytes(512 * MiB), "512 MiB");
  EXPECT_EQ(axis_bytes(1536 * MiB), "1.5 GiB");
  EXPECT_EQ(axis_bytes(1280 * MiB), "1.25 GiB");
  EXPECT_EQ(axis_bytes(32 * GiB), "32 GiB");
  EXPECT_EQ(axis_time(0), "0");
  EXPECT_EQ(axis_time(0.5), "0.5s");
  EXPECT_EQ(axis_time(30), "30s");
  EXPECT_EQ(axis_time(60), "1m");
  EXPECT_EQ(axis_time(90), "1m30s");
  EXPECT_EQ(axis_time(7200), "2h");
  EXPECT_EQ(axis_time(5400), "1h30m");
}

TEST(PeakBands, AreAbsoluteNotRelativeToTheBuild) {
  EXPECT_EQ(peak_band(64 * MiB), 0);
  EXPECT_EQ(peak_band(256 * MiB - 1), 0);
  EXPECT_EQ(peak_band(256 * MiB), 1);
  EXPECT_EQ(peak_band(1 * GiB), 2);
  EXPECT_EQ(peak_band(4 * GiB - 1), 2);
  EXPECT_EQ(peak_band(4 * GiB), 3);
  EXPECT_EQ(peak_band(40 * GiB), 3);
}

TEST(FitLabel, WholeCutOrNothing) {
  EXPECT_EQ(fit_label("a.cpp", 200), "a.cpp");
  EXPECT_EQ(fit_label("kernel_12_hdim64.cu", 60), "kernel_12\u2026");  // (60-4)/5.5 = 10 chars: 9 and the ellipsis
  EXPECT_EQ(fit_label("kernel_12_hdim64.cu", 20), "");               // 2 chars would fit: no label
  EXPECT_EQ(fit_label("", 200), "");
  // Never cuts inside a UTF-8 character.
  EXPECT_EQ(fit_label("\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9.c", 45),
            "\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u2026");  // (45-4)/5.5 = 7 chars
  EXPECT_EQ(fit_label("kernel_12_hdim64.cu", 40), "") << "'kern\u2026' would say nothing";
}

namespace {

JobRecord job(double start, double end, Bytes predicted, Bytes peak) {
  JobRecord j;
  j.start_s = start;
  j.end_s = end;
  j.predicted.peak = predicted;
  j.peak_bytes = peak;
  j.attempt_log.push_back({start, end, Outcome::ok, peak});
  return j;
}

Bytes at(const std::vector<MemSample>& s, double t) {
  Bytes level = 0;
  for (const auto& m : s) {
    if (m.t_s <= t) level = m.bytes;
  }
  return level;
}

}  // namespace

TEST(ReservedSeries, SumsThePredictionsOfRunningJobs) {
  BuildRecord b;
  b.jobs.push_back(job(0, 10, 500 * MiB, 400 * MiB));
  b.jobs.push_back(job(2, 6, 300 * MiB, 350 * MiB));
  b.jobs.push_back(job(10, 12, 200 * MiB, 100 * MiB));  // takes the first job's slot at t = 10
  const auto r = reserved_series(b);
  EXPECT_EQ(at(r, 1), 500 * MiB);
  EXPECT_EQ(at(r, 3), 800 * MiB);
  EXPECT_EQ(at(r, 7), 500 * MiB);
  EXPECT_EQ(at(r, 10), 200 * MiB) << "an end and a start at one instant leave no dip";
  EXPECT_EQ(at(r, 13), 0);
  for (size_t i = 1; i < r.size(); ++i) EXPECT_LE(r[i - 1].t_s, r[i].t_s);
  for (const auto& m : r) EXPECT_GE(m.bytes, 0);
}

TEST(ReservedSeries, ARerunHoldsAtLeastWhatItsKilledAttemptReached) {
  BuildRecord b;
  JobRecord j = job(0, 20, 500 * MiB, 900 * MiB);
  j.attempt_log = {{0, 5, Outcome::requeued, 900 * MiB}, {8, 20, Outcome::ok, 880 * MiB}};
  b.jobs.push_back(j);
  const auto r = reserved_series(b);
  EXPECT_EQ(at(r, 1), 500 * MiB);
  EXPECT_EQ(at(r, 6), 0);
  EXPECT_EQ(at(r, 9), 900 * MiB);
}

TEST(ReservedSeries, ChangesWithinAPixelAreOneStep) {
  BuildRecord b;
  b.jobs.push_back(job(0, 10, 500 * MiB, 400 * MiB));
  b.jobs.push_back(job(10.004, 20, 300 * MiB, 300 * MiB));  // admitted 4 ms after the first ended
  EXPECT_EQ(at(reserved_series(b), 10.002), 0) << "without merging, the hand-over dips to 0";
  const auto merged = reserved_series(b, 0.01);
  EXPECT_EQ(at(merged, 10.002), 300 * MiB);
  EXPECT_EQ(at(merged, 5), 500 * MiB);
  EXPECT_EQ(at(merged, 21), 0);
}

TEST(ReservedSeries, EmptyWithoutPredictions) {
  BuildRecord b;
  b.jobs.push_back(job(0, 10, 0, 400 * MiB));
  EXPECT_TRUE(reserved_series(b).empty());
}
