// The predictor: how much memory (and time) will this job need, and when
// does its peak come? Pure logic over numbers; history feeds it records,
// the running build feeds it finished jobs, admission asks it questions.
//
// Where a prediction comes from: a ladder, most specific first, first
// rung that answers wins (the Prediction's source names the rung):
//  1. "history": this identity's own runs, from past builds and earlier
//     attempts in this build. Peak = max over the last `own_runs` runs of
//     peak × decay^age (age 0 = newest), × margin. Failed runs (non-zero
//     exit) count at `failed_weight`; a run killed by memgate or the OOM
//     killer saw only part of its peak, so its peak × `killed_bump` is a
//     floor. If the identity has no complete successful run, its runs are
//     only a floor under the rungs below. If the job's CPU weight changed
//     (another nvcc --threads), its peaks are scaled by the ratio.
//  2. "history": the same source and arch (SourceKey: class and main
//     source) under another identity in own history (another build
//     directory or output name): the newest such identity's runs, as in 1,
//     raised by the ratio of preprocessed sizes where the job's is larger
//     (the same source built again with other defines for another target).
//  3. "imported" / "prior": a profile from elsewhere (add_profile) of this
//     identity, else of the same source and arch, else of the same stem in
//     the same klass (the tree laid out otherwise): its peak × margin. An
//     exact-stem profile of the job beats every sibling measured here.
//  4. "similar": jobs of the same klass whose stems share leading tokens
//     ("flash_bwd_hdim128_fp16_causal_sm80" ~ "flash_bwd_hdim128_bf16_sm80"),
//     the deepest shared prefix of at least `min_similar_depth` tokens (or
//     the whole stem); then the same across the family (same tool and
//     mode, other archs); runs of this build and history before profiles.
//     Peak = the `similar_quantile` of their peaks.
//  5. "build" / "similar": class statistics, the whole klass, then the
//     whole family: the `klass_quantile` of their peaks, with a margin of
//     up to 50% while fewer than `prior_jobs` jobs are known (never above
//     the default). "build" when jobs of this build are among them.
//     Before the klass-wide quantile, where the job's preprocessed size
//     is known (JobKey::tu_bytes) and `size_jobs` finished jobs of its
//     klass were measured with theirs: peak = the `size_quantile` of their
//     peak / size ratios × the job's size, also "build". A C++ compile's
//     peak follows what it parses (memgate's compiles: 79-125 bytes of
//     peak per preprocessed byte, fmt's 71-216) far more closely than the
//     source file's own size (14k-180k per byte, worse than no feature).
//  6. "default": per-tool conservative defaults (default_prediction).
// A guess from elsewhere (rung 3, and 4 from profiles alone) is scaled by
// how this build's own jobs compared with it: every job of the current
// build that finishes while its prediction still came from a profile gives
// a ratio (its peak / that prediction, per tool family), and so does every
// job seen running well below a peak above its prediction (observe_peak:
// its peak only; a peak below may not be the job's last, see there). Once the largest
// ratio × `calibration_margin` leaves [1/band, band], profile guesses of the
// family are multiplied by it (the largest: a prior that is wrong by a
// different factor for different jobs is trusted for none below its worst
// miss); wall and CPU time by the median ratio. So a prior measured for
// another nvcc, other flags or a scaled-down test tree still orders the
// jobs, and this build sets the scale. Inside the band the prior is taken
// as it is.
// Probe jobs (klass TOOL:probe: CMake/Meson/autoconf checks, version
// queries) feed only their own identity's runs, never rungs 2, 4 and 5.
// Rungs 4 and 5 compare peaks per CPU weight (nvcc's peak grows with
// the pipelines it runs at once) and scale by the asked job's weight.
//
// Per-tool defaults (peak per unit of CPU weight):
//   cc, gcc, clang, icx, icc, nvc, cpp, as          512 MiB
//   c++, g++, clang++, icpx, icpc, nvc++, cl, ...   1 GiB
//   nvcc, hipcc                                      4 GiB × cpu_weight
//   ld, ld.*, lld, mold, link, lld-link             1 GiB
//   rustc                                            2 GiB
//   anything else                                    1 GiB
//   any link job (klass ":link") at least            1 GiB
//   a remote job's local side ("ENGINE>" classes)    128 MiB
//
// Not thread-safe: predict() fills caches. The governor uses one thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/job.hpp"

namespace memgate {

struct StemEntry;  // what one identity puts in the similarity tries (stem_trie.hpp)
struct StemTrie;   // a stem-token trie over one klass or family

// Conservative first guess for a job never seen before, by tool.
Prediction default_prediction(const JobKey& key);

// What a remote job's local side is predicted to need before anything of
// its kind was measured: the launcher and a preprocessor run, far below a
// compile's cold default (512 MiB to 1 GiB) but not nothing (heavy C++
// headers preprocess in ~100-200 MB). The first one measured replaces it.
inline constexpr Bytes kRemoteDefaultPeak = 128 * MiB;

struct PredictorConfig {
  int own_runs = 6;              // runs of one identity remembered
  double decay = 0.85;           // weight of a run per newer run after it
  double margin = 1.07;          // added to estimates from own history
  double failed_weight = 0.5;    // a failed run's peak counts this much
  double killed_bump = 1.25;     // a killed attempt's peak × this is a floor
  double similar_quantile = 0.8;
  double klass_quantile = 0.9;
  int min_similar_depth = 2;     // stem tokens two jobs must share to be similar
  int prior_jobs = 4;            // jobs a klass needs before its estimate goes without a margin
  double calibration_margin = 1.15;  // on the largest peak ratio of this build's jobs to their profile guess
  double calibration_band = 1.25;    // a profile guess within this factor of the build's is left alone
  int size_jobs = 2;                 // finished jobs with a size a klass needs before sizes predict
  double size_quantile = 0.8;        // of their peak / size ratios
};

class Predictor {
 public:
  Predictor();
  explicit Predictor(PredictorConfig config);
  ~Predictor();
  Predictor(Predictor&&) noexcept;
  Predictor& operator=(Predictor&&) noexcept;

  // A job from a past build (history), oldest first.
  void add_history(const JobRecord& job);
  // A profile from elsewhere: imported into history (origin imported) or
  // a prior file for this run (origin prior). It answers for its identity
  // when the identity has no own complete run, and joins the similarity
  // groups of its stem (never the klass-wide or family-wide estimate),
  // and what it used after its fall joins its klass's share for a default
  // (Prediction::fallen_share). A later profile of one identity replaces an
  // earlier one.
  void add_profile(const JobProfile& profile);
  // A job of the current build finished: predictions change from now on.
  // Also call it for an attempt memgate or the kernel killed (the record's
  // last attempt_log outcome "requeued" or "oom"), before it is retried.
  void observe(const JobRecord& job);
  // A job of the current build is running well past its peak: a peak
  // above its guess joins the calibration of profile guesses (above)
  // before the job ends; one below waits for its end (it may rise again).
  void observe_peak(const JobKey& key, Bytes peak);
  Prediction predict(const JobKey& key) const;

  // Identities with own runs (for tests and the status line).
  std::size_t known_identities() const;

 private:
  // One run of one identity, as far as prediction cares.
  struct Run {
    Bytes peak = 0;          // killed runs: already multiplied by killed_bump
    double wall_s = 0;
    double cpu_s = 0;
    double peak_over_frac = 1.0;
    Bytes after_peak = 0;
    Envelope envelope;       // from its recorded profile (predict/envelope.hpp)
    bool failed = false;     // non-zero exit, not killed
    bool killed = false;     // memgate or the OOM killer ended it
    int cpu_weight = 1;      // peaks scale with it when --threads changes
    Bytes tu_bytes = 0;      // the job's preprocessed size, 0 = unknown
  };

  // How this build's jobs compared with their profile guesses, per family.
  struct Calibration {
    double peak_ratio = 0;  // largest actual / guessed peak
    std::vector<double> wall_ratios;
    std::vector<double> cpu_ratios;
  };

  void learn(const JobRecord& job, bool in_build);
  // The prediction before calibration; *elsewhere: it came from profiles;
  // *floor: what the identity's killed or failed runs imply at least.
  Prediction guess(const JobKey& key, bool* elsewhere, Bytes* floor) const;
  void calibrate(const JobKey& key, Prediction& p) const;
  void note_calibration(const JobRecord& job);
  void index(const JobKey& key, const StemEntry& e, bool at_root);
  static std::shared_ptr<const Envelope> entry_envelope(const Envelope& e, double peak_over_frac, Bytes after_peak,
                                                        Bytes peak);
  std::optional<Prediction> own_estimate(const std::vector<Run>& runs, int cpu_weight, Bytes* floor) const;
  std::optional<Prediction> from_groups(const JobKey& key, bool* only_profiles) const;
  std::optional<Envelope> kind_shape(const JobKey& key) const;
  std::optional<Prediction> from_profile(const JobKey& key, Bytes floor) const;
  const JobProfile* profile_of(const JobKey& key) const;
  int intern(const std::string& identity);

  PredictorConfig config_;
  std::unordered_map<std::string, std::vector<Run>> runs_;  // by identity, oldest first
  std::unordered_map<std::string, JobProfile> profiles_;    // imported and prior, by identity
  // SourceKey::str() -> the identity whose complete run (or profile) came
  // last: rungs 2 and 3 for a job whose identity has none.
  std::unordered_map<std::string, std::string> run_by_source_;
  std::unordered_map<std::string, std::string> profile_by_source_;
  std::unordered_map<std::string, std::string> profile_by_stem_;  // klass + '\n' + stem -> identity
  std::unordered_map<std::string, int> ids_;                // identity -> small int for the tries
  std::unordered_map<std::string, std::unique_ptr<StemTrie>> by_klass_;
  std::unordered_map<std::string, std::unique_ptr<StemTrie>> by_family_;
  std::unordered_map<std::string, Calibration> calibration_;  // by klass family
  std::unordered_map<std::string, std::vector<double>> size_ratios_;  // by klass: peak per weight / tu_bytes
  // By klass: the highest envelope_after_fall of its profiles that fall,
  // a default's fallen_share (Prediction).
  std::unordered_map<std::string, double> fallen_share_;
};

}  // namespace memgate
