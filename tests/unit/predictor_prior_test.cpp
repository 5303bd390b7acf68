// Profiles from elsewhere (imported, the shipped flash-attn prior) in the
// predictor: what they answer for, how this build's runs outweigh and scale
// them (predict/predictor.hpp, rung 3 and the calibration).
#include "predict/predictor.hpp"

#include <gtest/gtest.h>

#include <cmath>

#include "predict/envelope.hpp"
#include "predict/profile.hpp"
#include "predictor_fixture.hpp"

using namespace memgate;
using namespace memgate::predictor_test;

namespace {
JobProfile profile_of(const JobKey& key, Bytes peak, PredictionSource origin) {
  JobProfile p;
  p.key = key;
  p.peak = peak;
  p.wall_s = 100;
  p.cpu_s = 95;
  p.peak_over_frac = 0.3;
  p.after_peak = peak / 4;
  p.runs = 3;
  p.origin = origin;
  return p;
}
}  // namespace

TEST(Predictor, AProfileAnswersForItsIdentityAndSaysWhereFrom) {
  Predictor p;
  auto k = key_for("flash_bwd_hdim128_fp16_sm80");
  p.add_profile(profile_of(k, 6370 * MB, PredictionSource::imported));
  Prediction pred = p.predict(k);
  EXPECT_EQ(pred.source, PredictionSource::imported);
  EXPECT_EQ(pred.peak, static_cast<Bytes>(std::llround(6370.0 * MB * 1.07)));
  EXPECT_EQ(pred.peak_over_frac, 0.3);
  // A later profile of the identity replaces it; a prior says so.
  p.add_profile(profile_of(k, 5000 * MB, PredictionSource::prior));
  EXPECT_EQ(p.predict(k).source, PredictionSource::prior);
  // The job's own run comes first.
  p.observe(record(k, 6000 * MB));
  EXPECT_EQ(p.predict(k).source, PredictionSource::history);
}

// The shipped flash-attn prior predicts unmeasured kernels of the same
// kind by stem, and nothing about unrelated nvcc jobs.
TEST(Predictor, APriorPredictsLikeStemsOnly) {
  Predictor p;
  p.add_profile(profile_of(key_for("flash_bwd_hdim128_fp16_sm80"), 6370 * MB, PredictionSource::prior));
  p.add_profile(profile_of(key_for("flash_bwd_hdim256_bf16_sm80"), 6960 * MB, PredictionSource::prior));
  p.add_profile(profile_of(key_for("flash_fwd_hdim128_fp16_sm80"), 4260 * MB, PredictionSource::prior));
  Prediction bwd = p.predict(key_for("flash_bwd_hdim96_fp16_sm80"));
  EXPECT_EQ(bwd.source, PredictionSource::similar);
  EXPECT_GE(bwd.peak, 6370 * MB);
  EXPECT_LE(bwd.peak, 6960 * MB);
  Prediction other = p.predict(key_for("my_kernel"));
  EXPECT_EQ(other.source, PredictionSource::fallback);
  EXPECT_EQ(other.peak, default_prediction(key_for("my_kernel")).peak);
}

// A job nothing like it has been seen for gets the default, and with it,
// from the profiles of its klass (same tool, same archs), the most they
// used once their memory had halved: what it holds once its own has.
TEST(Predictor, ADefaultCarriesItsKlasssShareAfterTheFall) {
  Predictor p;
  auto with_fall = [](const JobKey& k, std::vector<double> at, double fall) {
    JobProfile pr = profile_of(k, 6000 * MB, PredictionSource::prior);
    pr.envelope = sanitized_envelope(at, fall);
    return pr;
  };
  p.add_profile(with_fall(key_for("flash_bwd_hdim128_fp16_sm80"), {1, 1, 0.4, 0.3, 0.1}, 0.3));
  p.add_profile(with_fall(key_for("flash_fwd_split_hdim128_fp16_sm80"), {1, 0.6, 0.5, 0.3, 0.1}, 0.2));
  p.add_profile(with_fall(key_for("flash_fwd_hdim64_fp16_sm80", "nvcc:compile[sm_90]"), {1, 0.9, 0.9, 0.9, 0.9}, 0.2));
  Prediction unseen = p.predict(key_for("attn_bwd_hdim128_fp16_sm80"));
  EXPECT_EQ(unseen.source, PredictionSource::fallback);
  EXPECT_DOUBLE_EQ(unseen.fallen_share, 0.6) << "the highest of its klass's, not sm_90's";
  EXPECT_DOUBLE_EQ(p.predict(key_for("attn_bwd", "nvcc:compile[sm_80,sm_90]")).fallen_share, 0)
      << "a job of more archs may climb again for the next";
  EXPECT_DOUBLE_EQ(p.predict(key_for("flash_bwd_hdim96_fp16_sm80")).fallen_share, 0)
      << "a guess from similar stems has their curve, and their time";
}

// A prior names jobs like these; a run of this build measured one. The bench's
// scaled-down flash-attn fakes (real kernel names, 1/16 of the memory) ran
// one at a time while the prior's 6 GB outweighed their 400 MB.
TEST(Predictor, RunsSeenHereOutweighAPriorOfTheirKind) {
  Predictor p;
  p.add_profile(profile_of(key_for("flash_bwd_hdim128_fp16_sm80"), 6370 * MB, PredictionSource::prior));
  p.add_profile(profile_of(key_for("flash_bwd_hdim256_bf16_sm80"), 6960 * MB, PredictionSource::prior));
  Prediction guess = p.predict(key_for("flash_bwd_hdim96_fp16_sm80"));
  EXPECT_EQ(guess.source, PredictionSource::similar);
  EXPECT_LE(guess.confidence, 0.35) << "a guess from elsewhere is cold";
  p.observe(record(key_for("flash_bwd_hdim64_fp16_sm80_v1"), 400 * MB));
  Prediction seen = p.predict(key_for("flash_bwd_hdim96_fp16_sm80"));
  EXPECT_EQ(seen.source, PredictionSource::similar);
  EXPECT_EQ(seen.peak, 400 * MB);
  EXPECT_GT(seen.confidence, 0.35);
}

// The same when the prior knows the very kernel and the build has only
// seen its neighbours: the bench fakes' flash_fwd_hdim32 waited 113 s at the
// prior's 3.1 GB while its siblings had finished at 200-400 MB.
TEST(Predictor, ShallowerRunsSeenHereBeatADeeperPrior) {
  Predictor p;
  p.add_profile(profile_of(key_for("flash_fwd_hdim32_fp16_sm80"), 3300 * MB, PredictionSource::prior));
  p.observe(record(key_for("flash_fwd_hdim128_fp16_sm80_v1"), 250 * MB));
  Prediction pred = p.predict(key_for("flash_fwd_hdim32_fp16_sm80_v1"));
  EXPECT_EQ(pred.source, PredictionSource::similar);
  EXPECT_EQ(pred.peak, 250 * MB);
}

namespace {
// A run of this build: 400 MB-class jobs take 7 s here, the prior says 100 s.
JobRecord quick_record(const JobKey& key, Bytes peak) {
  JobRecord r = record(key, peak);
  r.start_s = 0;
  r.end_s = 7;
  r.cpu_s = 6;
  r.attempt_log.back() = {0, 7, Outcome::ok, peak};
  return r;
}

Predictor flash_prior() {
  Predictor p;
  p.add_profile(profile_of(key_for("flash_bwd_hdim128_fp16_sm80"), 6370 * MB, PredictionSource::prior));
  p.add_profile(profile_of(key_for("flash_bwd_hdim256_bf16_sm80"), 6960 * MB, PredictionSource::prior));
  p.add_profile(profile_of(key_for("flash_fwd_hdim128_fp16_sm80"), 4260 * MB, PredictionSource::prior));
  return p;
}
}  // namespace

// The prior orders the jobs, the build sets the scale: one kernel measured
// at 1/16 of the prior (the bench's scaled fakes; a prior from another nvcc
// or other flags) scales every guess from the prior of its family, exact
// and similar, peak and time, and nothing else.
TEST(Predictor, ABuildScalesAPriorThatIsOffByAFactor) {
  Predictor p = flash_prior();
  const auto fwd = key_for("flash_fwd_hdim128_fp16_sm80");
  const Bytes before = p.predict(fwd).peak;
  EXPECT_EQ(before, static_cast<Bytes>(std::llround(4260.0 * MB * 1.07)));
  p.observe(quick_record(key_for("flash_bwd_hdim128_fp16_sm80"), 400 * MB));

  Prediction exact = p.predict(fwd);
  EXPECT_EQ(exact.source, PredictionSource::prior);
  const double f = 400.0 / (6370.0 * 1.07) * 1.15;  // the largest miss, with the margin
  EXPECT_NEAR(static_cast<double>(exact.peak), 4260.0 * MB * 1.07 * f, 2.0);
  EXPECT_NEAR(exact.wall_s, 7.0, 1e-9);
  EXPECT_NEAR(exact.cpu_s, 6.0, 1e-9);
  EXPECT_LE(exact.after_peak, exact.peak);

  Prediction similar = p.predict(key_for("flash_fwd_hdim256_bf16_sm80_v2"));
  EXPECT_EQ(similar.source, PredictionSource::similar);
  EXPECT_LT(similar.peak, 400 * MB);
  EXPECT_GT(similar.peak, 200 * MB);

  // Not a guess from the prior: untouched (the klass-wide estimate from
  // this build's run, with its few-jobs margin; another family's default).
  Prediction klass_wide = p.predict(key_for("my_kernel"));
  EXPECT_EQ(klass_wide.source, PredictionSource::build);
  EXPECT_EQ(klass_wide.peak, 550 * MB);
  const auto gxx = key_for("flash_fwd_hdim128_fp16_sm80", "g++:compile[x86_64]");
  EXPECT_EQ(p.predict(gxx).peak, default_prediction(gxx).peak);

  // What a killed attempt reached holds under the scaled guess.
  JobRecord killed = quick_record(fwd, 1000 * MB);
  killed.attempt_log.back().outcome = Outcome::requeued;
  p.observe(killed);
  EXPECT_GE(p.predict(fwd).peak, 1250 * MB);
}

// Within the band the prior is taken as it is; a prior that is too low is
// raised by the worst miss.
TEST(Predictor, APriorCloseToTheBuildStandsAndOneTooLowIsRaised) {
  Predictor close = flash_prior();
  close.observe(record(key_for("flash_bwd_hdim128_fp16_sm80"), 6000 * MB));
  EXPECT_EQ(close.predict(key_for("flash_fwd_hdim128_fp16_sm80")).peak,
            static_cast<Bytes>(std::llround(4260.0 * MB * 1.07)));
  EXPECT_EQ(close.predict(key_for("flash_fwd_hdim128_fp16_sm80")).wall_s, 100);

  Predictor low = flash_prior();
  low.observe(record(key_for("flash_bwd_hdim128_fp16_sm80"), 5000 * MB));
  low.observe(record(key_for("flash_bwd_hdim256_bf16_sm80"), 12000 * MB));
  const double worst = 12000.0 / (6960.0 * 1.07) * 1.15;
  EXPECT_NEAR(static_cast<double>(low.predict(key_for("flash_fwd_hdim128_fp16_sm80")).peak),
              4260.0 * MB * 1.07 * worst, 2.0);
}

// A job requeued once is as long as its last attempt, not the span of both
// and the wait between (which made longest-first start it too early).
TEST(Predictor, ARequeuedJobIsAsLongAsItsLastAttempt) {
  Predictor p;
  auto k = key_for("requeued_once");
  JobRecord r = record(k, 500 * MB);
  r.attempt_log = {{10, 40, Outcome::requeued, 400 * MB}, {60, 110, Outcome::ok, 500 * MB}};
  p.observe(r);
  EXPECT_EQ(p.predict(k).wall_s, 50);
}

// A running job past a peak above its guess calibrates the prior's peaks
// before it ends; times wait for a finished job. A peak below its guess
// does not: a real nvcc job's host side peaks at 0.8 GiB and falls before
// cicc climbs to 6 GiB (bench/real-kernels scaled a flash-attn prior to
// 0.15 of itself on it, and the next kernel was admitted at 0.85 GiB).
TEST(Predictor, AJobPastAPeakAboveItsGuessCalibratesThePeaksBeforeItEnds) {
  Predictor p = flash_prior();
  const auto fwd = key_for("flash_fwd_hdim128_fp16_sm80");
  const Bytes before = p.predict(fwd).peak;
  p.observe_peak(key_for("flash_bwd_hdim128_fp16_sm80"), 800 * MB);
  EXPECT_EQ(p.predict(fwd).peak, before) << "the host side's peak, before cicc";

  const double above = 6370.0 * 1.07 * 1.5;  // a prior measured for a smaller config
  p.observe_peak(key_for("flash_bwd_hdim128_fp16_sm80"), static_cast<Bytes>(above * MB));
  Prediction exact = p.predict(fwd);
  const double f = 1.5 * 1.15;
  EXPECT_NEAR(static_cast<double>(exact.peak), 4260.0 * MB * 1.07 * f, 2.0);
  EXPECT_EQ(exact.wall_s, 100) << "no time seen yet";
  p.observe_peak(key_for("my_kernel"), 100 * GiB);  // nothing guessed it from a profile
  EXPECT_NEAR(static_cast<double>(p.predict(fwd).peak), 4260.0 * MB * 1.07 * f, 2.0);
}

// A klass-wide quantile over a large group is not worked out again after
// every finished job (that made N jobs cost N^2): once the jobs put since
// number a sixteenth of the group. A few more do not move it; many do.
TEST(Predictor, ALargeGroupsStatisticsFollowItInSixteenths) {
  Predictor p;
  for (int i = 0; i < 160; ++i) p.observe(record(key_for("small" + std::to_string(i)), 100 * MB));
  const Bytes before = p.predict(key_for("fresh")).peak;
  for (int i = 0; i < 5; ++i) p.observe(record(key_for("big" + std::to_string(i)), 1000 * MB));
  EXPECT_EQ(p.predict(key_for("fresh")).peak, before) << "5 in 165: as worked out before";
  for (int i = 5; i < 40; ++i) p.observe(record(key_for("big" + std::to_string(i)), 1000 * MB));
  EXPECT_GT(p.predict(key_for("fresh")).peak, 5 * before) << "40 in 200 are a tenth above the 0.9 quantile";
}
