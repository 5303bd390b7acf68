#include "predict/predictor.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <sstream>

#include "predict/identity.hpp"
#include "predict/profile.hpp"

using namespace memgate;

namespace {

constexpr Bytes MB = 1000 * 1000;

JobKey key_for(const std::string& stem, const std::string& klass = "nvcc:compile[sm_80]", int weight = 1) {
  JobKey k;
  k.tool = klass.substr(0, klass.find(':'));
  k.klass = klass;
  k.stem = stem;
  k.identity = k.tool + ":compile:src/" + stem + ".cu->" + stem + ".o" + klass.substr(std::min(klass.find('['), klass.size()));
  k.cpu_weight = weight;
  return k;
}

JobRecord record(const JobKey& key, Bytes peak, int exit_status = 0) {
  JobRecord r;
  r.key = key;
  r.peak_bytes = peak;
  r.exit_status = exit_status;
  r.start_s = 10;
  r.end_s = 110;
  r.cpu_s = 95;
  r.peak_over_frac = 0.25;
  r.after_peak_bytes = peak / 4;
  r.attempt_log.push_back({10, 110, exit_status == 0 ? Outcome::ok : Outcome::failed, peak});
  return r;
}

double rel_error(Bytes predicted, Bytes actual) {
  return std::abs(static_cast<double>(predicted - actual)) / static_cast<double>(actual);
}

}  // namespace

TEST(Predictor, DefaultsAreConservativePerTool) {
  auto d = [](const std::string& tool, const std::string& klass, int w = 1) {
    JobKey k;
    k.tool = tool;
    k.klass = klass;
    k.cpu_weight = w;
    return default_prediction(k);
  };
  EXPECT_EQ(d("nvcc", "nvcc:compile[sm_80]").peak, 4 * GiB);
  EXPECT_EQ(d("nvcc", "nvcc:compile[sm_80,sm_90]", 2).peak, 8 * GiB);
  EXPECT_EQ(d("hipcc", "hipcc:compile").peak, 4 * GiB);
  EXPECT_EQ(d("g++", "g++:compile").peak, 1 * GiB);
  EXPECT_EQ(d("clang++", "clang++:compile").peak, 1 * GiB);
  EXPECT_EQ(d("cc", "cc:compile").peak, 512 * MiB);
  EXPECT_EQ(d("cc", "cc:link").peak, 1 * GiB);  // links are never guessed small
  EXPECT_EQ(d("ld.lld", "ld.lld:link").peak, 1 * GiB);
  EXPECT_EQ(d("rustc", "rustc:compile").peak, 2 * GiB);
  EXPECT_EQ(d("frobnicate", "frobnicate:link").peak, 1 * GiB);
  auto p = d("nvcc", "nvcc:compile");
  EXPECT_EQ(p.source, PredictionSource::fallback);
  EXPECT_EQ(p.confidence, 0);
  EXPECT_EQ(p.peak_over_frac, 1.0);  // never release a guess early
  Predictor empty;
  EXPECT_EQ(empty.predict(key_for("x")).peak, 4 * GiB);
  EXPECT_EQ(empty.predict(key_for("x")).source, PredictionSource::fallback);
}

TEST(Predictor, OwnHistoryWinsOverSimilarJobs) {
  Predictor p;
  for (int i = 0; i < 5; ++i) p.add_history(record(key_for("flash_bwd_hdim" + std::to_string(i)), 6000 * MB));
  auto mine = key_for("flash_bwd_small");
  p.add_history(record(mine, 300 * MB));
  auto pred = p.predict(mine);
  EXPECT_EQ(pred.source, PredictionSource::history);
  EXPECT_GE(pred.peak, 300 * MB);
  EXPECT_LE(pred.peak, 330 * MB);  // a small margin, not the neighbours' 6 GB
  EXPECT_DOUBLE_EQ(pred.wall_s, 100);
  EXPECT_DOUBLE_EQ(pred.cpu_s, 95);
  EXPECT_DOUBLE_EQ(pred.peak_over_frac, 0.25);
  EXPECT_GE(pred.after_peak, 75 * MB);
  EXPECT_LE(pred.after_peak, pred.peak);
}

TEST(Predictor, ConfidenceGrowsWithConsistentRuns) {
  Predictor p;
  auto k = key_for("a");
  p.add_history(record(k, 1000 * MB));
  double one = p.predict(k).confidence;
  p.add_history(record(k, 1020 * MB));
  p.add_history(record(k, 990 * MB));
  EXPECT_DOUBLE_EQ(p.predict(k).confidence, 1.0);
  EXPECT_LT(one, 1.0);
  p.add_history(record(k, 3000 * MB));
  EXPECT_LT(p.predict(k).confidence, 1.0);
}

TEST(Predictor, OlderPeaksDecay) {
  Predictor p;
  auto k = key_for("decaying");
  p.add_history(record(k, 2000 * MB));
  Bytes after_big = p.predict(k).peak;
  std::vector<Bytes> preds;
  for (int i = 0; i < 7; ++i) {
    p.add_history(record(k, 1000 * MB));
    preds.push_back(p.predict(k).peak);
  }
  EXPECT_GE(after_big, 2000 * MB);
  // The old 2 GB run still counts right after, then fades out.
  EXPECT_GT(preds.front(), 1600 * MB);
  EXPECT_TRUE(std::is_sorted(preds.rbegin(), preds.rend()));
  EXPECT_GE(preds.back(), 1000 * MB);  // never below the newest run
  EXPECT_LE(preds.back(), 1100 * MB);
  // A newer, higher run counts at once.
  p.observe(record(k, 1500 * MB));
  EXPECT_GE(p.predict(k).peak, 1500 * MB);
}

TEST(Predictor, FailedRunsCountLess) {
  Predictor p;
  auto k = key_for("broken");
  p.add_history(record(k, 1000 * MB));
  p.add_history(record(k, 3000 * MB, /*exit_status=*/1));
  auto pred = p.predict(k);
  EXPECT_EQ(pred.source, PredictionSource::history);
  EXPECT_LT(pred.peak, 2000 * MB);
  EXPECT_GE(pred.peak, 1000 * MB);

  // Only failed runs: they are a floor, not the answer.
  auto only_failed = key_for("never_built", "g++:compile");
  p.add_history(record(only_failed, 100 * MB, 1));
  EXPECT_EQ(p.predict(only_failed).source, PredictionSource::fallback);
  EXPECT_EQ(p.predict(only_failed).peak, 1 * GiB);
}

TEST(Predictor, KilledAttemptIsAFloorForTheRetry) {
  Predictor p;
  auto k = key_for("oom_victim");
  JobRecord killed = record(k, 5000 * MB, 137);
  killed.attempt_log.back().outcome = Outcome::oom;
  p.observe(killed);
  EXPECT_GE(p.predict(k).peak, 6250 * MB);  // it needed more than it got
  JobRecord requeued = record(key_for("frozen_then_killed"), 9 * GiB, 0);
  requeued.attempt_log.back().outcome = Outcome::requeued;
  p.observe(requeued);
  EXPECT_GE(p.predict(requeued.key).peak, 9 * GiB);
  // Once it completes, the complete run is the answer again.
  p.observe(record(k, 5500 * MB));
  EXPECT_EQ(p.predict(k).source, PredictionSource::history);
  EXPECT_GE(p.predict(k).peak, 5500 * MB);
  EXPECT_LE(p.predict(k).peak, 6000 * MB);
}

TEST(Predictor, SimilarStemsShareTheirPeaks) {
  Predictor p;
  p.add_history(record(key_for("flash_bwd_hdim128_fp16_sm80"), 6370 * MB));
  p.add_history(record(key_for("flash_bwd_hdim64_fp16_sm80"), 6260 * MB));
  p.add_history(record(key_for("flash_bwd_hdim32_fp16_sm80"), 4520 * MB));
  p.add_history(record(key_for("flash_fwd_hdim128_fp16_sm80"), 4260 * MB));
  p.add_history(record(key_for("flash_fwd_hdim64_fp16_sm80"), 3680 * MB));
  p.add_history(record(key_for("flash_fwd_hdim32_fp16_sm80"), 3300 * MB));

  auto bwd = p.predict(key_for("flash_bwd_hdim128_bf16_causal_sm80"));
  EXPECT_EQ(bwd.source, PredictionSource::similar);
  EXPECT_GE(bwd.peak, 6260 * MB);  // the flash_bwd_hdim128 neighbour
  EXPECT_LE(bwd.peak, 6370 * MB);
  auto fwd = p.predict(key_for("flash_fwd_hdim256_bf16_sm80"));
  EXPECT_EQ(fwd.source, PredictionSource::similar);
  EXPECT_GE(fwd.peak, 3680 * MB);  // a high quantile of the forward kernels only
  EXPECT_LE(fwd.peak, 4260 * MB);
  EXPECT_DOUBLE_EQ(fwd.peak_over_frac, 0.25);
  EXPECT_GT(fwd.confidence, 0);
  EXPECT_LT(fwd.confidence, 1);
}

TEST(Predictor, OtherArchsOfTheSameStemScaleByWeight) {
  Predictor p;
  p.add_history(record(key_for("flash_bwd_hdim128_fp16_sm80"), 6370 * MB));
  auto two_archs = key_for("flash_bwd_hdim128_fp16_sm80", "nvcc:compile[sm_80,sm_90]", 2);
  auto pred = p.predict(two_archs);
  EXPECT_EQ(pred.source, PredictionSource::similar);
  EXPECT_EQ(pred.peak, 2 * 6370 * MB);  // measured: 12.6 GB
}

TEST(Predictor, OwnHistoryScalesWhenThreadsChange) {
  Predictor p;
  auto t1 = key_for("flash_bwd_hdim128_fp16_sm80", "nvcc:compile[sm_80,sm_90]", 1);
  p.add_history(record(t1, 6370 * MB));
  auto t4 = t1;
  t4.cpu_weight = 2;  // --threads 4 now runs both archs at once
  auto pred = p.predict(t4);
  EXPECT_EQ(pred.source, PredictionSource::history);
  EXPECT_GE(pred.peak, 2 * 6370 * MB);
  EXPECT_LE(pred.peak, 2 * 6370 * MB * 11 / 10);
}

TEST(Predictor, LearnsFromThisBuild) {
  Predictor p;
  auto fresh = key_for("main", "c++:compile");
  EXPECT_EQ(p.predict(fresh).source, PredictionSource::fallback);
  p.observe(record(key_for("alpha", "c++:compile"), 200 * MB));
  auto after_one = p.predict(fresh);
  EXPECT_EQ(after_one.source, PredictionSource::build);
  EXPECT_LT(after_one.peak, 1 * GiB);  // moved off the default...
  EXPECT_GT(after_one.peak, 250 * MB);  // ...but with a margin: one job is weak evidence
  for (const char* s : {"beta", "gamma", "delta", "epsilon"}) p.observe(record(key_for(s, "c++:compile"), 200 * MB));
  auto learned = p.predict(fresh);
  EXPECT_EQ(learned.source, PredictionSource::build);
  EXPECT_EQ(learned.peak, 200 * MB);
  // Another klass learns nothing from it.
  EXPECT_EQ(p.predict(key_for("main", "nvcc:compile[sm_80]")).source, PredictionSource::fallback);
}

// The probe skew: CMake's 4.5 MiB checks predicted the tree's
// 64 MiB compiles 10x too low. Probes and preprocess-only runs are
// recorded for their own identity but teach the compiles nothing.
TEST(Predictor, ProbesAndPreprocessingDoNotTeachCompiles) {
  Predictor p;
  const std::string scratch = "/p/build/CMakeFiles/CMakeScratch/TryCompile-";
  for (int i = 0; i < 8; ++i) {
    JobRecord probe;
    probe.key = analyze_command({"/usr/bin/c++", "-o", "CMakeFiles/cmTC_" + std::to_string(i) + ".dir/src.cxx.o", "-c",
                                 scratch + std::to_string(i) + "/src.cxx"},
                                scratch + std::to_string(i))
                    .key;
    probe.peak_bytes = 4 * MiB + MiB / 2;
    probe.start_s = 0;
    probe.end_s = 0.05;
    p.observe(probe);
  }
  for (const char* cmd : {"c++ -E /p/src/a.cpp -o a.ii", "c++ -M /p/src/b.cpp"}) {
    std::istringstream in(cmd);
    std::vector<std::string> argv;
    for (std::string w; in >> w;) argv.push_back(w);
    JobRecord pre;
    pre.key = analyze_command(argv, "/p/build").key;
    pre.peak_bytes = 3 * MiB;
    pre.end_s = 0.1;
    p.observe(pre);
  }
  JobKey real = analyze_command({"/usr/bin/c++", "-o", "CMakeFiles/app.dir/src/main.cpp.o", "-c", "/p/src/main.cpp"},
                                "/p/build")
                    .key;
  Prediction pred = p.predict(real);
  EXPECT_EQ(pred.source, PredictionSource::fallback);
  EXPECT_EQ(pred.peak, default_prediction(real).peak);
  // The probe's own identity still remembers it.
  JobKey again = analyze_command({"/usr/bin/c++", "-o", "CMakeFiles/cmTC_3.dir/src.cxx.o", "-c", scratch + "3/src.cxx"},
                                 scratch + "3")
                     .key;
  EXPECT_EQ(p.predict(again).source, PredictionSource::history);
}

TEST(Predictor, MixedClassUsesAHighQuantileNotTheMax) {
  Predictor p;
  for (int i = 0; i < 19; ++i) p.observe(record(key_for("light" + std::to_string(i), "g++:compile"), (100 + i) * MB));
  p.observe(record(key_for("heavy", "g++:compile"), 2000 * MB));
  auto pred = p.predict(key_for("unrelated", "g++:compile"));
  EXPECT_LT(pred.peak, 2000 * MB);
  EXPECT_GE(pred.peak, 110 * MB);  // above the median of the light ones
}

// The acceptance figure: a second identical build is predicted
// within 15% (median) and 2x (every job) of what it really uses.
TEST(Predictor, SecondRunOfAMixedWorkloadIsAccurate) {
  std::mt19937 rng(12345);
  std::uniform_real_distribution<double> peak_dist(200e6, 1.2e9);
  std::uniform_real_distribution<double> noise(0.95, 1.05);
  const char* families[] = {"parser", "codegen", "kernel_fwd", "kernel_bwd", "util"};
  std::vector<std::pair<JobKey, double>> jobs;
  for (int i = 0; i < 100; ++i) {
    std::string stem = std::string(families[i % 5]) + "_part" + std::to_string(i);
    jobs.emplace_back(key_for(stem, i % 3 ? "c++:compile" : "nvcc:compile[sm_80]"), peak_dist(rng));
  }
  Predictor first;
  for (const auto& [k, peak] : jobs) first.observe(record(k, static_cast<Bytes>(peak * noise(rng))));

  Predictor second;  // a new build, seeded from the first one's history
  for (const auto& [k, peak] : jobs) second.add_history(record(k, static_cast<Bytes>(peak * noise(rng))));
  std::vector<double> errors;
  for (const auto& [k, peak] : jobs) {
    Bytes actual = static_cast<Bytes>(peak * noise(rng));
    Prediction pred = second.predict(k);
    EXPECT_EQ(pred.source, PredictionSource::history);
    errors.push_back(rel_error(pred.peak, actual));
    EXPECT_LE(pred.peak, 2 * actual) << k.identity;
    EXPECT_GE(2 * pred.peak, actual) << k.identity;
    EXPECT_GE(static_cast<double>(pred.peak), 0.9 * static_cast<double>(actual)) << k.identity;
  }
  std::nth_element(errors.begin(), errors.begin() + 50, errors.end());
  EXPECT_LE(errors[50], 0.15);
}

TEST(Predictor, ManyJobsStayIndexed) {
  Predictor p;
  for (int i = 0; i < 5000; ++i)
    p.add_history(record(key_for("f" + std::to_string(i % 50) + "_x" + std::to_string(i)), (100 + i % 100) * MB));
  EXPECT_EQ(p.known_identities(), 5000u);
  for (int i = 0; i < 5000; ++i) {
    auto pred = p.predict(key_for("f" + std::to_string(i % 50) + "_x" + std::to_string(i)));
    ASSERT_EQ(pred.source, PredictionSource::history);
    ASSERT_GE(pred.peak, (100 + i % 100) * MB);
  }
}

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
