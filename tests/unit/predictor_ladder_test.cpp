// The prediction ladder (predict/predictor.hpp), one test per rung, and
// the order between them.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "core/job_class.hpp"
#include "predict/envelope.hpp"
#include "predict/predictor.hpp"

using namespace memgate;

namespace {

constexpr Bytes MB = 1000 * 1000;

// An nvcc compile of src/STEM.cu into OUT_DIR/STEM.o for sm_80.
JobKey kernel(const std::string& stem, const std::string& out_dir = "csrc", const std::string& arch = "sm_80") {
  JobIdentity id;
  id.klass = JobClass{"", "nvcc", "compile", {arch}};
  id.source = "src/" + stem + ".cu";
  id.output = out_dir + "/" + stem + ".o";
  return make_job_key(id, stem);
}

JobRecord ran(const JobKey& key, Bytes peak) {
  JobRecord r;
  r.key = key;
  r.peak_bytes = peak;
  r.start_s = 10;
  r.end_s = 110;
  r.cpu_s = 95;
  r.peak_over_frac = 0.3;
  r.after_peak_bytes = peak / 4;
  r.attempt_log.push_back({10, 110, Outcome::ok, peak});
  return r;
}

JobProfile profile(const JobKey& key, Bytes peak, PredictionSource origin = PredictionSource::prior) {
  JobProfile p;
  p.key = key;
  p.peak = peak;
  p.wall_s = 100;
  p.cpu_s = 95;
  p.peak_over_frac = 0.3;
  p.after_peak = peak / 4;
  p.runs = 1;
  p.origin = origin;
  return p;
}

Bytes with_margin(Bytes b) { return static_cast<Bytes>(std::llround(static_cast<double>(b) * 1.07)); }

const std::string kStem = "flash_fwd_hdim128_bf16_causal_sm80";

}  // namespace

TEST(SourceKey, ClassAndSourceOnly) {
  const JobIdentity a = parse_job_identity(kernel(kStem, "csrc").identity);
  const JobIdentity b = parse_job_identity(kernel(kStem, "build/temp/csrc").identity);
  EXPECT_NE(a, b);
  EXPECT_EQ(source_key(a), source_key(b));
  EXPECT_FALSE(source_key(a).empty());
  EXPECT_NE(source_key(a), source_key(parse_job_identity(kernel(kStem, "csrc", "sm_90").identity)));
  EXPECT_TRUE(source_key(parse_job_identity("c++:link->app")).empty());
  EXPECT_EQ(source_key(parse_job_identity("c++:link->app")).str(), "");
}

// Rung 1 beats every other: the identity's own run.
TEST(Ladder, Rung1ExactIdentityInOwnHistory) {
  Predictor p;
  const JobKey k = kernel(kStem);
  p.add_profile(profile(kernel(kStem), 4800 * MB));
  p.add_history(ran(kernel(kStem, "elsewhere"), 3000 * MB));
  p.add_history(ran(k, 4460 * MB));
  const Prediction pred = p.predict(k);
  EXPECT_EQ(pred.source, PredictionSource::history);
  EXPECT_EQ(pred.peak, with_margin(4460 * MB));
}

// Rung 2: the same source and arch under another output, before any prior.
TEST(Ladder, Rung2SameSourceAndArchInOwnHistory) {
  Predictor p;
  p.add_profile(profile(kernel(kStem), 4800 * MB));
  p.add_history(ran(kernel(kStem, "build-old/csrc"), 4460 * MB));
  p.add_history(ran(kernel(kStem, "build-old/csrc", "sm_90"), 9000 * MB));  // another arch: not it
  const Prediction pred = p.predict(kernel(kStem, "build-new/csrc"));
  EXPECT_EQ(pred.source, PredictionSource::history);
  EXPECT_EQ(pred.peak, with_margin(4460 * MB));
  EXPECT_LT(pred.confidence, p.predict(kernel(kStem, "build-old/csrc")).confidence);
}

// A killed attempt of this very identity still holds as a floor on rung 2.
TEST(Ladder, Rung2KeepsTheIdentitysKilledFloor) {
  Predictor p;
  p.add_history(ran(kernel(kStem, "old"), 1000 * MB));
  JobRecord killed = ran(kernel(kStem, "new"), 3000 * MB);
  killed.attempt_log.back().outcome = Outcome::requeued;
  p.observe(killed);
  const Prediction pred = p.predict(kernel(kStem, "new"));
  EXPECT_EQ(pred.source, PredictionSource::history);
  EXPECT_GE(pred.peak, 3000 * MB);
}

// Rung 3: a prior of the same source and arch, although its output path
// (another build directory) differs from the job's.
TEST(Ladder, Rung3PriorOfTheSameSourceAndArch) {
  Predictor p;
  p.add_profile(profile(kernel(kStem, "csrc/flash_attn/src"), 4800 * MB));
  const Prediction pred = p.predict(kernel(kStem, "build/temp.linux-x86_64/csrc/flash_attn/src"));
  EXPECT_EQ(pred.source, PredictionSource::prior);
  EXPECT_EQ(pred.peak, with_margin(4800 * MB));
  // An imported profile says so.
  Predictor q;
  q.add_profile(profile(kernel(kStem, "a"), 4800 * MB, PredictionSource::imported));
  EXPECT_EQ(q.predict(kernel(kStem, "b")).source, PredictionSource::imported);
  // A tree laid out otherwise: the same stem in the same klass.
  JobIdentity moved = parse_job_identity(kernel(kStem, "out").identity);
  moved.source = "kernels/" + kStem + ".cu";
  EXPECT_EQ(p.predict(make_job_key(moved, kStem)).source, PredictionSource::prior);
  EXPECT_EQ(p.predict(make_job_key(moved, kStem)).peak, with_margin(4800 * MB));
  EXPECT_EQ(p.predict(kernel(kStem, "out", "sm_90")).source, PredictionSource::similar) << "another arch: rung 4";
  // The exact identity's profile before a same-source one.
  q.add_profile(profile(kernel(kStem, "b"), 5000 * MB));
  EXPECT_EQ(q.predict(kernel(kStem, "b")).peak, with_margin(5000 * MB));
}

// The real case: the shipped prior measured this kernel at 4.80 GB, a
// smaller sibling finished in this build at 3.07 GB; the kernel was
// predicted from the sibling ("similar", 3.07 GB) and peaked at 4.46 GB.
TEST(Ladder, ExactStemPriorBeatsASiblingOfThisBuild) {
  Predictor p;
  const std::string sibling = "flash_fwd_hdim128_bf16_sm80";
  p.add_profile(profile(kernel(kStem, "csrc/flash_attn/src"), 4800 * MB));
  p.add_profile(profile(kernel(sibling, "csrc/flash_attn/src"), 3000 * MB));
  p.observe(ran(kernel(sibling, "build/temp/csrc/flash_attn/src"), 3070 * MB));
  const Prediction pred = p.predict(kernel(kStem, "build/temp/csrc/flash_attn/src"));
  EXPECT_EQ(pred.source, PredictionSource::prior);
  EXPECT_GE(pred.peak, 4460 * MB) << "at least what the kernel peaked at";
  EXPECT_EQ(pred.peak, with_margin(4800 * MB));
}

// A record without a curve (the shipped prior's backward hdim64 kernel:
// high to its end) takes the shape of its kind, the similar stems, but
// not their climb or fall; with nothing similar that falls, it stays high.
TEST(Ladder, Rung3ARecordWithoutACurveTakesItsKindsShape) {
  Predictor p;
  JobProfile flat = profile(kernel("flash_bwd_hdim64_fp16_sm80"), 5800 * MB);
  flat.peak_over_frac = 1.0;
  flat.after_peak = 0;
  flat.envelope.at.assign(32, 1.0);
  p.add_profile(flat);
  const JobKey key = kernel("flash_bwd_hdim64_fp16_sm80", "build/csrc");
  EXPECT_DOUBLE_EQ(envelope_at(p.predict(key), 0.5), 1.0) << "nothing like it falls";
  JobProfile sibling = profile(kernel("flash_bwd_hdim128_fp16_sm80"), 6000 * MB);
  sibling.envelope.at.assign(32, 1.0);
  for (int i = 10; i < 32; ++i) sibling.envelope.at[i] = 0.25;
  sibling.envelope.rise.assign(32, 1.0);
  sibling.envelope.fall_x = 0.3;
  p.add_profile(sibling);
  const Prediction pred = p.predict(key);
  EXPECT_EQ(pred.source, PredictionSource::prior);
  EXPECT_EQ(pred.peak, with_margin(5800 * MB)) << "its own peak";
  EXPECT_DOUBLE_EQ(envelope_at(pred, 0.5), 0.25) << "its kind's shape";
  EXPECT_TRUE(pred.envelope.rise.empty()) << "not their climb";
  EXPECT_LT(pred.envelope.fall_x, 0) << "nor their fall";
  EXPECT_DOUBLE_EQ(envelope_at(p.predict(kernel("flash_bwd_hdim128_fp16_sm80")), 0.5), 0.25);
}

// Rung 4: similar stems, runs of this build and history before profiles.
TEST(Ladder, Rung4SimilarStems) {
  Predictor p;
  p.add_profile(profile(kernel("flash_bwd_hdim64_bf16_sm80"), 2000 * MB));
  p.add_history(ran(kernel("flash_fwd_hdim128_fp16_sm80"), 3000 * MB));
  p.observe(ran(kernel("flash_fwd_hdim128_bf16_sm80"), 3070 * MB));
  const Prediction pred = p.predict(kernel("flash_fwd_hdim128_fp16_causal_sm80"));
  EXPECT_EQ(pred.source, PredictionSource::similar);
  EXPECT_GE(pred.peak, 3000 * MB);
  EXPECT_LE(pred.peak, 3070 * MB);
  // From the prior's stems alone when nothing like it ran.
  EXPECT_EQ(p.predict(kernel("flash_bwd_hdim64_fp16_sm80")).source, PredictionSource::similar);
  EXPECT_EQ(p.predict(kernel("flash_bwd_hdim64_fp16_sm80")).peak, 2000 * MB);
}

// Rung 5: class statistics, "build" when this build's jobs are among them.
TEST(Ladder, Rung5ClassStatistics) {
  Predictor p;
  for (int i = 0; i < 4; ++i) p.add_history(ran(kernel("k" + std::to_string(i) + "_a"), (1000 + 100 * i) * MB));
  const Prediction hist = p.predict(kernel("unrelated_kernel"));
  EXPECT_EQ(hist.source, PredictionSource::similar);
  EXPECT_EQ(hist.peak, 1300 * MB);  // the 0.9 quantile of four, nearest rank up
  p.observe(ran(kernel("k9_b"), 1200 * MB));
  EXPECT_EQ(p.predict(kernel("unrelated_kernel")).source, PredictionSource::build);
  // A profile alone never makes class statistics.
  Predictor q;
  q.add_profile(profile(kernel("k0_a"), 1000 * MB));
  EXPECT_EQ(q.predict(kernel("unrelated_kernel")).source, PredictionSource::fallback);
}

// Rung 6: nothing known of the class.
TEST(Ladder, Rung6Default) {
  Predictor p;
  p.add_history(ran(kernel(kStem, "csrc", "sm_90"), 9000 * MB));  // the family knows nvcc, not this tool
  JobIdentity id;
  id.klass = JobClass{"", "g++", "compile", {}};
  id.source = "src/a.cpp";
  id.output = "a.o";
  const JobKey k = make_job_key(id, "a");
  const Prediction pred = p.predict(k);
  EXPECT_EQ(pred.source, PredictionSource::fallback);
  EXPECT_EQ(pred.peak, default_prediction(k).peak);
}

namespace {

// A C++ compile of src/STEM.cpp whose preprocessed size is TU bytes.
JobKey cxx(const std::string& stem, Bytes tu) {
  JobIdentity id;
  id.klass = JobClass{"", "c++", "compile", {}};
  id.source = "src/" + stem + ".cpp";
  id.output = stem + ".o";
  JobKey k = make_job_key(id, stem);
  k.tu_bytes = tu;
  return k;
}

}  // namespace

// Rung 5 with sizes: the klass's peak per preprocessed byte, calibrated by
// the build's finished jobs, times the job's own size.
TEST(Ladder, Rung5ScalesByPreprocessedSize) {
  Predictor p;
  p.observe(ran(cxx("alpha_x", 1 * MB), 100 * MB));
  const Prediction one = p.predict(cxx("gamma", 4 * MB));
  EXPECT_EQ(one.source, PredictionSource::build);
  EXPECT_LT(one.peak, 200 * MB) << "one job is not enough to scale by size";
  p.observe(ran(cxx("beta_y", 2 * MB), 220 * MB));
  const Prediction big = p.predict(cxx("gamma", 4 * MB));
  EXPECT_EQ(big.source, PredictionSource::build);
  EXPECT_EQ(big.peak, 440 * MB);  // the 0.8 quantile of 100 and 110 per byte, nearest rank up
  EXPECT_EQ(p.predict(cxx("delta", 1 * MB / 2)).peak, 55 * MB);
  // Unknown size: the klass-wide quantile.
  const Prediction unknown = p.predict(cxx("gamma", 0));
  EXPECT_GE(unknown.peak, 220 * MB);
  EXPECT_LT(unknown.peak, 440 * MB);
  // Similar stems (rung 4) still come first.
  EXPECT_EQ(p.predict(cxx("beta_y_extra", 4 * MB)).source, PredictionSource::similar);
}

// Jobs of other klasses, and probes, teach a klass nothing of sizes.
TEST(Ladder, Rung5SizesPerKlass) {
  Predictor p;
  p.observe(ran(cxx("alpha", 1 * MB), 100 * MB));
  p.observe(ran(cxx("beta", 2 * MB), 220 * MB));
  JobKey other = kernel("flash_fwd_hdim64_fp16_sm80");
  other.tu_bytes = 4 * MB;
  p.observe(ran(kernel("my_kernel_a"), 3000 * MB));
  EXPECT_NE(p.predict(other).peak, 440 * MB);
  JobKey probe = cxx("conftest", 1 * MB);
  probe.klass = "c++:probe";
  Predictor q;
  q.observe(ran(probe, 900 * MB));
  q.observe(ran(cxx("alpha", 1 * MB), 100 * MB));
  q.observe(ran(cxx("beta", 1 * MB), 100 * MB));
  EXPECT_EQ(q.predict(cxx("gamma", 2 * MB)).peak, 200 * MB);
}

// Rung 2 for the same source built again with other defines (fmt builds
// os.cc for the library and again for a test at 1.4 times the size): the
// other identity's peak, raised by the ratio of sizes, never lowered.
TEST(Ladder, Rung2ScalesUpByPreprocessedSize) {
  Predictor p;
  JobKey lib = cxx("os", 1200 * 1000);
  p.observe(ran(lib, 100 * MB));
  JobKey test = cxx("os", 1800 * 1000);
  JobIdentity id = parse_job_identity(lib.identity);
  id.output = "test/os.o";
  test.identity = id.str();
  const Prediction bigger = p.predict(test);
  EXPECT_EQ(bigger.source, PredictionSource::history);
  EXPECT_EQ(bigger.peak, static_cast<Bytes>(std::llround(100.0 * MB * 1.07 * 1.5)));
  test.tu_bytes = 600 * 1000;
  EXPECT_EQ(p.predict(test).peak, with_margin(100 * MB));
  test.tu_bytes = 0;
  EXPECT_EQ(p.predict(test).peak, with_margin(100 * MB));
}

// Rung 4 when every job of a build shares a prefix of two tokens
// (fa_flash_): the prefix counts as one token, so forward kernels are not
// alike to backward ones only because the whole project is named alike.
// With fewer than four jobs known the prefix still counts in full.
TEST(Ladder, Rung4AProjectWidePrefixCountsAsOneToken) {
  Predictor p;
  p.observe(ran(kernel("fa_flash_bwd_hdim128_fp16"), 6000 * MB));
  p.observe(ran(kernel("fa_flash_bwd_hdim64_fp16"), 5800 * MB));
  p.observe(ran(kernel("fa_flash_fwd_hdim128_fp16"), 4000 * MB));
  p.observe(ran(kernel("fa_flash_fwd_hdim64_fp16"), 3600 * MB));
  const Prediction fwd = p.predict(kernel("fa_flash_fwd_hdim256_bf16"));
  EXPECT_EQ(fwd.source, PredictionSource::similar);
  EXPECT_LE(fwd.peak, with_margin(4000 * MB));  // the forward kernels, not the backward ones
  const Prediction other = p.predict(kernel("fa_flash_splitkv_hdim64"));
  EXPECT_NE(other.source, PredictionSource::similar);  // alike in the project's prefix only

  Predictor few;
  few.observe(ran(kernel("fa_flash_bwd_hdim128_fp16"), 6000 * MB));
  few.observe(ran(kernel("fa_flash_fwd_hdim64_fp16"), 3600 * MB));
  EXPECT_EQ(few.predict(kernel("fa_flash_splitkv_hdim64")).source, PredictionSource::similar);
}
