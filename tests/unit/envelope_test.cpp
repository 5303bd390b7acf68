#include "predict/envelope.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "predict/profile.hpp"

using namespace memgate;

namespace {

constexpr Bytes MB = 1000 * 1000;

// A 100 s profile, one sample a second, from a function of the second.
template <class F>
std::vector<MemSample> profile_of(F mb_at) {
  std::vector<MemSample> p;
  for (int t = 0; t <= 100; ++t) p.push_back({static_cast<double>(t), static_cast<Bytes>(mb_at(t)) * MB});
  return p;
}

bool non_increasing(const Envelope& e) {
  for (std::size_t i = 1; i < e.at.size(); ++i)
    if (e.at[i] > e.at[i - 1]) return false;
  return true;
}

}  // namespace

TEST(Envelope, FlatAfterLevel) {
  // Up to 1000 MB by 25 s, then 250 MB to the end.
  auto e = envelope_of(profile_of([](int t) { return t <= 25 ? 40 * t : 250; }));
  ASSERT_EQ(e.at.size(), static_cast<std::size_t>(kEnvelopePoints));
  EXPECT_TRUE(non_increasing(e));
  EXPECT_DOUBLE_EQ(envelope_at(e, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(envelope_at(e, 0.2), 1.0);   // the peak is still ahead
  EXPECT_DOUBLE_EQ(envelope_at(e, 0.27), 1.0);  // the sample at or before 27 s is the peak's own
  EXPECT_DOUBLE_EQ(envelope_at(e, 0.3), 0.25);
  EXPECT_DOUBLE_EQ(envelope_at(e, 1.0), 0.25);
}

TEST(Envelope, GradualDecline) {
  // Peak 1000 MB at 20 s, then down linearly to 100 MB at 100 s: the most
  // still to come at x is what x itself uses.
  auto e = envelope_of(profile_of([](int t) { return t <= 20 ? 50 * t : 1000 - (t - 20) * 900 / 80; }));
  EXPECT_TRUE(non_increasing(e));
  for (double x : {0.3, 0.5, 0.7, 0.9}) {
    const double now = (1000.0 - (x * 100 - 20) * 900 / 80) / 1000.0;
    EXPECT_GE(envelope_at(e, x), now - 1e-9) << x;     // never below what it uses
    EXPECT_LE(envelope_at(e, x), now + 0.05) << x;     // and not much above
  }
  EXPECT_LT(envelope_at(e, 0.5), 0.75);  // after_peak (the max past the peak) would say 0.9+
}

TEST(Envelope, TwoPeaksKeepTheSecond) {
  // 1000 MB at 20 s, 200 MB, then 800 MB at 70 s (a second arch), then 100.
  auto e = envelope_of(profile_of([](int t) {
    if (t <= 20) return 50 * t;
    if (t < 60) return 200;
    if (t <= 70) return 800;
    return 100;
  }));
  EXPECT_TRUE(non_increasing(e));
  EXPECT_DOUBLE_EQ(envelope_at(e, 0.1), 1.0);
  EXPECT_DOUBLE_EQ(envelope_at(e, 0.4), 0.8);  // between the peaks: the second is still to come
  EXPECT_DOUBLE_EQ(envelope_at(e, 0.65), 0.8);
  EXPECT_DOUBLE_EQ(envelope_at(e, 0.8), 0.1);
}

// Where the memory first fell below half its peak after reaching 90% of
// it: the job's own landmark, matched by a running job whatever its CPU
// time says (Governor::envelope_x). The first fall, also when a second
// peak follows (the envelope there still holds it); the earliest over
// runs; unknown for a run that never falls, and then for the runs
// together.
TEST(Envelope, ItsFallIsWhereTheMemoryFirstDroppedBelowHalfItsPeak) {
  auto flat_after = envelope_of(profile_of([](int t) { return t <= 25 ? 40 * t : 250; }));
  EXPECT_DOUBLE_EQ(flat_after.fall_x, 0.26);
  auto two_peaks = envelope_of(profile_of([](int t) {
    if (t <= 20) return 50 * t;
    if (t < 60) return 200;
    if (t <= 70) return 800;
    return 100;
  }));
  EXPECT_DOUBLE_EQ(two_peaks.fall_x, 0.21);
  EXPECT_DOUBLE_EQ(envelope_at(two_peaks, two_peaks.fall_x + 0.05), 0.8) << "the second peak is still ahead";
  auto stays_high = envelope_of(profile_of([](int t) { return t <= 25 ? 40 * t : 800; }));
  EXPECT_LT(stays_high.fall_x, 0);
  auto later = envelope_of(profile_of([](int t) { return t <= 40 ? 25 * t : 250; }));
  EXPECT_DOUBLE_EQ(combine_envelopes({later, flat_after}).fall_x, 0.26);
  EXPECT_LT(combine_envelopes({later, stays_high}).fall_x, 0);
  EXPECT_LT(step_envelope(0.3, 0.25).fall_x, 0) << "two numbers do not say where";
}

TEST(Envelope, ItsClimbIsTheMostMemoryUsedUpToEachPoint) {
  // 40 MB a second to 1000 MB at 25 s, then 250 MB.
  auto e = envelope_of(profile_of([](int t) { return t <= 25 ? 40 * t : 250; }));
  ASSERT_EQ(e.rise.size(), e.at.size());
  EXPECT_DOUBLE_EQ(e.rise.front(), 0.0);
  EXPECT_DOUBLE_EQ(e.rise.back(), 1.0);
  // x = 3/31 is 9.68 s: the memory between the samples at 9 and 10 s is
  // taken as the higher, 400 MB.
  EXPECT_DOUBLE_EQ(e.rise[3], 0.4);
  EXPECT_DOUBLE_EQ(e.rise[8], 1.0);  // 25.8 s: past the peak
  for (std::size_t i = 1; i < e.rise.size(); ++i) EXPECT_GE(e.rise[i], e.rise[i - 1]);
  // Over runs: the fastest climb at each point; unknown if one run's is.
  auto slow = envelope_of(profile_of([](int t) { return t <= 50 ? 20 * t : 250; }));
  auto both = combine_envelopes({slow, e});
  EXPECT_DOUBLE_EQ(both.rise[3], 0.4);
  EXPECT_DOUBLE_EQ(slow.rise[3], 0.2);
  Envelope unknown = slow;
  unknown.rise.clear();
  EXPECT_TRUE(combine_envelopes({unknown, e}).rise.empty());
  EXPECT_TRUE(step_envelope(0.3, 0.25).rise.empty()) << "two numbers do not say how it climbs";
}

TEST(Envelope, OneNoisyRunAmongThreeIsOutvoted) {
  auto quiet = [](int t) { return t <= 25 ? 40 * t : 250; };
  auto noisy = [](int t) { return t <= 80 ? 1000 : 250; };  // stayed high (a neighbour, a bad sample)
  auto a = envelope_of(profile_of(quiet)), b = envelope_of(profile_of(quiet)), c = envelope_of(profile_of(noisy));
  auto three = combine_envelopes({a, c, b});
  EXPECT_TRUE(non_increasing(three));
  EXPECT_DOUBLE_EQ(envelope_at(three, 0.5), 0.25);
  // With two runs there is no majority: the upper envelope keeps the noisy one.
  auto two = combine_envelopes({a, c});
  EXPECT_DOUBLE_EQ(envelope_at(two, 0.5), 1.0);
  EXPECT_DOUBLE_EQ(envelope_at(two, 0.9), 0.25);
  // One run is itself; none is unknown (1 everywhere).
  EXPECT_EQ(combine_envelopes({a}), a);
  EXPECT_TRUE(combine_envelopes({Envelope{}, Envelope{}}).empty());
  EXPECT_DOUBLE_EQ(envelope_at(Envelope{}, 0.7), 1.0);
}

TEST(Envelope, TwoNumbersMakeAStep) {
  auto e = step_envelope(0.3, 0.25);
  EXPECT_DOUBLE_EQ(envelope_at(e, 0.29), 1.0);
  EXPECT_DOUBLE_EQ(envelope_at(e, 0.33), 0.25);
  EXPECT_TRUE(step_envelope(1.0, 0.25).empty());
  EXPECT_TRUE(step_envelope(0.3, 0).empty());
  Prediction p;
  p.peak = 1000;
  p.peak_over_frac = 0.5;
  p.after_peak = 400;
  EXPECT_DOUBLE_EQ(envelope_at(envelope_for(p), 0.6), 0.4);
  p.envelope = step_envelope(0.2, 0.1);
  EXPECT_DOUBLE_EQ(envelope_at(envelope_for(p), 0.6), 0.1);  // its own envelope wins
}

TEST(Envelope, StoredValuesAreMadeSafe) {
  EXPECT_TRUE(sanitized_envelope({1.0}).empty());
  EXPECT_TRUE(sanitized_envelope(std::vector<double>(kEnvelopeMaxPoints + 1, 1.0)).empty());
  EXPECT_TRUE(sanitized_envelope({1.0, std::nan("")}).empty());
  auto e = sanitized_envelope({0.2, 0.9, -3, 7});
  EXPECT_EQ(e.at, (std::vector<double>{1.0, 1.0, 1.0, 1.0}));  // a later 7 (clamped to 1) holds before it
  EXPECT_EQ(sanitized_envelope({1, 0.5, 0.2}).at, (std::vector<double>{1, 0.5, 0.2}));
}

TEST(Envelope, MeasuredNvccJobsAreCoveredAndFall) {
  // The real flash-attn kernels (tests/fixtures/flash-attn): each full
  // profile against the envelope of its 64-point downsample, as history
  // keeps it. Never below what the job still uses, and fallen to under
  // two thirds of the peak by half its life.
  const std::string dir = std::string(MEMGATE_FIXTURES) + "/flash-attn/flash-attn-profiles";
  if (!std::filesystem::is_directory(dir)) GTEST_SKIP() << "no flash-attn profiles";
  int checked = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    std::ifstream in(entry.path());
    std::vector<MemSample> prof;
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      auto comma = line.find(',');
      if (comma != std::string::npos) prof.push_back({std::stod(line.substr(0, comma)), std::stoll(line.substr(comma + 1))});
    }
    if (prof.size() < 10) continue;
    SCOPED_TRACE(entry.path().filename().string());
    const auto e = envelope_of(downsample_profile(prof, 64));
    Bytes peak = 0;
    for (const auto& s : prof) peak = std::max(peak, s.bytes);
    const double d = prof.back().t_s;
    for (double x = 0; x <= 1.0; x += 0.05) {
      Bytes still = 0;
      for (const auto& s : prof)
        if (s.t_s >= x * d) still = std::max(still, s.bytes);
      EXPECT_GE(envelope_at(e, x) + 1e-9, static_cast<double>(still) / static_cast<double>(peak)) << x;
    }
    EXPECT_LT(envelope_at(e, 0.5), 0.67);
    // Its climb: never below the most the job has used by each point.
    ASSERT_EQ(e.rise.size(), e.at.size());
    for (std::size_t i = 0; i < e.rise.size(); ++i) {
      const double x = static_cast<double>(i) / static_cast<double>(e.rise.size() - 1);
      Bytes used = 0;
      for (const auto& s : prof)
        if (s.t_s <= x * d) used = std::max(used, s.bytes);
      EXPECT_GE(e.rise[i] + 1e-9, static_cast<double>(used) / static_cast<double>(peak)) << x;
    }
    ++checked;
  }
  EXPECT_GE(checked, 10);
}

// A run slowed to half speed for its first 40 s (its cores shared): 20 s
// of CPU by then, 80 by its end at 100 s. Its 1000 MB peak holds from 15
// to 20 CPU-s (30 to 40 s of wall), then 250 MB. Admission reads x as CPU
// progress: on the CPU clock the peak ends at 25%; on the wall clock it
// would end at 40% and the job would hold its peak for 15% of its life
// longer. Slowed late instead, the wall clock would release it early.
TEST(Envelope, IsLearnedOnTheJobsCpuClockWhereEveryPointHasOne) {
  auto cpu_at = [](double t) { return t < 40 ? t / 2 : 20 + (t - 40); };
  std::vector<MemSample> prof;
  for (int t = 0; t <= 100; ++t) {
    const double c = cpu_at(t);
    const Bytes mb = c < 15 ? static_cast<Bytes>(1000 * c / 15) : c <= 20 ? 1000 : 250;
    prof.push_back({static_cast<double>(t), mb * MB, c});
  }
  const auto on_cpu = envelope_of(prof, 100);
  EXPECT_DOUBLE_EQ(envelope_at(on_cpu, 0.24), 1.0);   // the peak is the job's until 20 of 80 CPU-s
  EXPECT_DOUBLE_EQ(envelope_at(on_cpu, 0.3), 0.25);   // then what it still uses
  EXPECT_NEAR(envelope_peak_end(Prediction{.peak = 1000 * MB, .envelope = on_cpu}), 0.26, 0.02);

  // One point without its clock: the wall clock, as before there was one.
  prof[50].cpu_s = -1;
  const auto on_wall = envelope_of(prof, 100);
  EXPECT_DOUBLE_EQ(envelope_at(on_wall, 0.3), 1.0);
  EXPECT_DOUBLE_EQ(envelope_at(on_wall, 0.45), 0.25);
}

// Readings of the CPU clock taken every few seconds fill in the points
// between them; points after the last reading stay unread, and a reading
// lower than an earlier one (two ways of counting) does not go back.
TEST(Envelope, TheCpuClockIsFilledInBetweenItsReadings) {
  std::vector<MemSample> prof = {{0, 0, 0}, {1, 10}, {2, 20}, {4, 40, 2}, {5, 50}, {6, 60, 1.5}, {7, 70}};
  interpolate_cpu_clock(prof);
  EXPECT_DOUBLE_EQ(prof[1].cpu_s, 0.5);
  EXPECT_DOUBLE_EQ(prof[2].cpu_s, 1.0);
  EXPECT_DOUBLE_EQ(prof[3].cpu_s, 2.0);
  EXPECT_DOUBLE_EQ(prof[4].cpu_s, 2.0);
  EXPECT_DOUBLE_EQ(prof[5].cpu_s, 2.0);
  EXPECT_LT(prof[6].cpu_s, 0);
  // The job's end adds its CPU time: every point has a clock, and the
  // envelope is on it.
  prof.push_back({8, 0, 6});
  interpolate_cpu_clock(prof);
  EXPECT_DOUBLE_EQ(prof[6].cpu_s, 4.0);
  for (const auto& p : prof) EXPECT_GE(p.cpu_s, 0);
}

TEST(Envelope, DeclinesWhenItFallsBelowThePeak) {
  Prediction p;
  EXPECT_FALSE(envelope_declines(p)) << "nothing known";
  p.peak = 4 * GiB;
  p.after_peak = 4 * GiB;
  p.peak_over_frac = 0.5;
  EXPECT_FALSE(envelope_declines(p)) << "a flat tail";
  p.after_peak = 1 * GiB;
  EXPECT_TRUE(envelope_declines(p)) << "a step";
  EXPECT_EQ(envelope_declines(p), envelope_at(envelope_for(p), 1) < 1);
  p.envelope = sanitized_envelope({1, 1, 1, 1});
  EXPECT_FALSE(envelope_declines(p)) << "its own envelope wins";
  p.envelope = sanitized_envelope({1, 0.9, 0.5, 0.5});
  EXPECT_TRUE(envelope_declines(p));
}

TEST(Envelope, ItsPeakEndsAtItsLastPointAtOne) {
  Prediction p;
  EXPECT_DOUBLE_EQ(envelope_peak_end(p), 1.0) << "nothing known";
  p.peak = 4 * GiB;
  p.after_peak = 1 * GiB;
  p.peak_over_frac = 0.5;
  // The step and the envelope it makes agree: the last point before 0.5.
  EXPECT_DOUBLE_EQ(envelope_peak_end(p), 15.0 / 31);
  Prediction stepped = p;
  stepped.envelope = envelope_for(p);
  EXPECT_DOUBLE_EQ(envelope_peak_end(stepped), 15.0 / 31);
  EXPECT_DOUBLE_EQ(envelope_at(p, envelope_peak_end(p)), 1.0);
  EXPECT_LT(envelope_at(p, envelope_peak_end(p) + 1.0 / 31), 1.0);
  p.envelope = sanitized_envelope({1, 1, 0.5, 0.5, 0.2});  // x = 0, 0.25, ..., 1
  EXPECT_DOUBLE_EQ(envelope_peak_end(p), 0.25);
  p.envelope = sanitized_envelope({1, 1, 1, 1});
  EXPECT_DOUBLE_EQ(envelope_peak_end(p), 1.0) << "it never declines";
}

TEST(Envelope, AGroupsQuantilePointByPoint) {
  const Envelope early = step_envelope(0.2, 0.1), late = step_envelope(0.6, 0.3);
  // The highest of two, point by point.
  Envelope two = quantile_envelope({&early, &late}, 0.8);
  EXPECT_DOUBLE_EQ(envelope_at(two, 0.4), 1.0);
  EXPECT_DOUBLE_EQ(envelope_at(two, 0.7), 0.3);
  // Of five, 0.5 takes the middle; a member without one counts as high.
  const Envelope mid = step_envelope(0.4, 0.2);
  Envelope five = quantile_envelope({&early, &early, &mid, &late, nullptr}, 0.5);
  EXPECT_TRUE(non_increasing(five));
  EXPECT_DOUBLE_EQ(envelope_at(five, 0.1), 1.0);
  EXPECT_DOUBLE_EQ(envelope_at(five, 0.3), 1.0);
  EXPECT_DOUBLE_EQ(envelope_at(five, 0.5), 0.2);
  EXPECT_DOUBLE_EQ(envelope_at(five, 0.9), 0.2);  // the middle of 0.1, 0.1, 0.2, 0.3, 1
  EXPECT_TRUE(quantile_envelope({}, 0.8).empty());
}

TEST(Envelope, ReadOnAPredictionAsOnTheEnvelopeItMakes) {
  std::vector<Prediction> ps(4);
  for (auto& p : ps) p.peak = 1000 * MB;
  ps[1].peak_over_frac = 0.3;
  ps[1].after_peak = 250 * MB;  // a step
  ps[2].peak_over_frac = 0.5;   // a step that says nothing
  ps[3].envelope = step_envelope(0.6, 0.4);
  ps[3].peak_over_frac = 0.3;
  ps[3].after_peak = 100 * MB;  // its own envelope wins
  for (const auto& p : ps)
    for (int i = -1; i <= 110; ++i) {
      const double x = i / 100.0;
      EXPECT_DOUBLE_EQ(envelope_at(p, x), envelope_at(envelope_for(p), x)) << x;
    }
}

// What a job used once its memory had first halved: read at the first
// point at or after the fall, not the last before it (still the peak).
TEST(Envelope, AfterItsFall) {
  // x = 0, 0.25, ..., 1: the fall at 0.3 lies between the peak's point and
  // 0.5's; a bump to 0.45 after it counts.
  Envelope e = sanitized_envelope({1, 1, 0.45, 0.2, 0.1}, 0.3);
  EXPECT_DOUBLE_EQ(envelope_after_fall(e), 0.45);
  e.fall_x = 0.5;  // on a point
  EXPECT_DOUBLE_EQ(envelope_after_fall(e), 0.45);
  e.fall_x = -1;
  EXPECT_DOUBLE_EQ(envelope_after_fall(e), -1) << "no fall known";
  EXPECT_DOUBLE_EQ(envelope_after_fall(Envelope{}), -1);
}
