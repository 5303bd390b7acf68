// The envelope a prediction carries, learned from the recorded profiles
// of the identity's own runs (predict/envelope.hpp).
#include <gtest/gtest.h>

#include "predict/envelope.hpp"
#include "predict/predictor.hpp"

using namespace memgate;

namespace {

constexpr Bytes MB = 1000 * 1000;

// A 100 s run that peaks at 1000 MB at 25 s and falls to 100 MB at
// `falls_at` s, with a 64-point-ish profile as history keeps it.
JobRecord run(int falls_at) {
  JobRecord r;
  r.key = {"nvcc", "nvcc:compile:src/k.cu->k.o[sm_80]", "nvcc:compile[sm_80]", "k", 1};
  r.start_s = 0;
  r.end_s = 100;
  r.cpu_s = 98;
  r.peak_bytes = 1000 * MB;
  r.peak_over_frac = 0.3;
  r.after_peak_bytes = 900 * MB;  // what a slow decline makes of after_peak
  r.attempt_log.push_back({0, 100, Outcome::ok, r.peak_bytes});
  for (int t = 0; t <= 100; t += 2)
    r.profile.push_back({static_cast<double>(t), t <= 25 ? 40 * t * MB : t < falls_at ? 1000 * MB : 100 * MB});
  return r;
}

}  // namespace

TEST(PredictorEnvelope, OwnRunsGiveTheirRobustUpperEnvelope) {
  Predictor p;
  p.add_history(run(30));
  p.add_history(run(90));  // a noisy one
  p.add_history(run(30));
  const Prediction pred = p.predict(run(30).key);
  ASSERT_EQ(pred.source, PredictionSource::history);
  ASSERT_FALSE(pred.envelope.empty());
  EXPECT_DOUBLE_EQ(envelope_at(pred.envelope, 0.2), 1.0);
  EXPECT_NEAR(envelope_at(pred.envelope, 0.5), 0.1, 1e-9);  // not after_peak's 0.9, not the noisy run
}

TEST(PredictorEnvelope, RunsWithoutProfilesFallBackToTheirStep) {
  Predictor p;
  JobRecord r = run(30);
  r.profile.clear();
  p.add_history(r);
  const Prediction pred = p.predict(r.key);
  EXPECT_DOUBLE_EQ(envelope_at(pred.envelope, 0.2), 1.0);
  EXPECT_NEAR(envelope_at(pred.envelope, 0.5), 0.9, 1e-9);
}

TEST(PredictorEnvelope, SimilarStemsAndTheKlassGiveTheirMembersEnvelope) {
  // Two kernels of this build that fall to 10% of their peaks by 30% of
  // their lives (their after_peak says 90%). A third with a similar stem,
  // and a fourth with none, take the group's envelope, not the step.
  Predictor p;
  for (const char* stem : {"attn_fwd_a", "attn_fwd_b"}) {
    JobRecord r = run(30);
    r.key.stem = stem;
    r.key.identity = std::string("nvcc:compile:src/") + stem + ".cu->o[sm_80]";
    p.observe(r);
  }
  JobKey similar = run(30).key;
  similar.stem = "attn_fwd_c";
  similar.identity = "nvcc:compile:src/attn_fwd_c.cu->o[sm_80]";
  JobKey other = similar;
  other.stem = "gemm";
  other.identity = "nvcc:compile:src/gemm.cu->o[sm_80]";
  for (const JobKey& k : {similar, other}) {
    const Prediction pred = p.predict(k);
    SCOPED_TRACE(k.stem);
    EXPECT_NE(pred.source, PredictionSource::history);
    ASSERT_FALSE(pred.envelope.empty());
    EXPECT_DOUBLE_EQ(envelope_at(pred.envelope, 0.2), 1.0);
    EXPECT_NEAR(envelope_at(pred.envelope, 0.5), 0.1, 1e-9);
  }
  // One member that stays high to its end: the group (the higher of two)
  // does too.
  JobRecord high = run(30);
  high.key.stem = "attn_fwd_d";
  high.key.identity = "nvcc:compile:src/attn_fwd_d.cu->o[sm_80]";
  high.profile.clear();
  high.peak_over_frac = 1.0;
  p.observe(high);
  EXPECT_DOUBLE_EQ(envelope_at(p.predict(similar).envelope, 0.5), 1.0);
}
