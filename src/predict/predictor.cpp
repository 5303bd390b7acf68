#include "predict/predictor.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "core/job_class.hpp"
#include "predict/envelope.hpp"
#include "predict/stem_trie.hpp"

namespace memgate {
namespace {

bool ends_killed(const JobRecord& job) {
  if (job.attempt_log.empty()) return false;
  Outcome o = job.attempt_log.back().outcome;
  return o == Outcome::requeued || o == Outcome::oom;
}

Bytes default_peak_per_weight(const std::string& tool) {
  static const std::set<std::string> kSmall = {"cc", "gcc", "clang", "icx", "icc", "nvc", "cpp", "as"};
  static const std::set<std::string> kGpu = {"nvcc", "hipcc"};
  if (kSmall.count(tool)) return 512 * MiB;
  if (kGpu.count(tool)) return 4 * GiB;
  if (tool == "rustc") return 2 * GiB;
  return 1 * GiB;  // C++ compilers, linkers, and anything unknown
}

Bytes to_bytes(double v) { return static_cast<Bytes>(std::llround(v)); }

// How long the job's last attempt ran: a job requeued once is not twice
// as long (its record spans every attempt and the waits between).
double last_attempt_s(const JobRecord& job) {
  if (job.attempt_log.empty()) return std::max(0.0, job.wall_s());
  const Attempt& a = job.attempt_log.back();
  return std::max(0.0, a.end_s - a.start_s);
}

// The key rungs 2 and 3 share: "" for a job without a main source.
std::string source_key_of(const std::string& identity) { return source_key(parse_job_identity(identity)).str(); }

}  // namespace

Prediction default_prediction(const JobKey& key) {
  Prediction p;
  Bytes per_weight = default_peak_per_weight(key.tool);
  const JobClass klass = parse_job_class(key.klass);
  if (klass.is_link()) per_weight = std::max(per_weight, 1 * GiB);
  p.peak = per_weight * std::max(1, key.cpu_weight);
  if (klass.remote()) p.peak = kRemoteDefaultPeak;  // only the engine's local side runs here
  p.peak_over_frac = 1.0;
  p.confidence = 0;
  p.source = PredictionSource::fallback;
  return p;
}

Predictor::Predictor() = default;
Predictor::Predictor(PredictorConfig config) : config_(config) {}
Predictor::~Predictor() = default;
Predictor::Predictor(Predictor&&) noexcept = default;
Predictor& Predictor::operator=(Predictor&&) noexcept = default;

void Predictor::add_history(const JobRecord& job) { learn(job, false); }
void Predictor::observe(const JobRecord& job) {
  note_calibration(job);
  learn(job, true);
}
std::size_t Predictor::known_identities() const { return runs_.size(); }

int Predictor::intern(const std::string& identity) {
  auto [it, inserted] = ids_.try_emplace(identity, static_cast<int>(ids_.size()));
  return it->second;
}

void Predictor::learn(const JobRecord& job, bool in_build) {
  if (job.peak_bytes <= 0 || job.key.identity.empty()) return;  // nothing measured
  Run r;
  r.killed = ends_killed(job);
  r.failed = !r.killed && job.exit_status != 0;
  r.peak = r.killed ? to_bytes(static_cast<double>(job.peak_bytes) * config_.killed_bump) : job.peak_bytes;
  r.wall_s = last_attempt_s(job);
  r.cpu_s = job.cpu_s;
  r.peak_over_frac = std::clamp(job.peak_over_frac, 0.0, 1.0);
  r.after_peak = job.after_peak_bytes;
  r.envelope = envelope_of(job.profile, r.wall_s);
  r.cpu_weight = std::max(1, job.key.cpu_weight);
  r.tu_bytes = std::max<Bytes>(0, job.key.tu_bytes);
  auto& runs = runs_[job.key.identity];
  runs.push_back(r);
  if (runs.size() > static_cast<std::size_t>(std::max(1, config_.own_runs))) runs.erase(runs.begin());
  if (r.failed || r.killed) return;  // only complete runs describe a kind of job
  // A configure probe says nothing about the tree's real compiles (see
  // identity.hpp): its own identity remembers it, no group does.
  if (is_probe_klass(job.key.klass)) return;
  if (std::string sk = source_key_of(job.key.identity); !sk.empty()) run_by_source_[sk] = job.key.identity;

  const double w = std::max(1, job.key.cpu_weight);
  if (job.key.tu_bytes > 0) {
    size_ratios_[job.key.klass].push_back(static_cast<double>(r.peak) / w / static_cast<double>(job.key.tu_bytes));
  }
  index(job.key,
        StemEntry{static_cast<double>(r.peak) / w, r.wall_s, r.cpu_s, r.peak_over_frac,
                  static_cast<double>(r.after_peak) / w, in_build, /*profile=*/false,
                  entry_envelope(r.envelope, r.peak_over_frac, r.after_peak, r.peak)},
        /*at_root=*/true);
}

// A run's or profile's envelope as its group entries share it: its own,
// else the step of its two numbers; null when neither says it falls.
std::shared_ptr<const Envelope> Predictor::entry_envelope(const Envelope& e, double peak_over_frac, Bytes after_peak,
                                                          Bytes peak) {
  Envelope out = !e.empty() ? e
                 : peak > 0 ? step_envelope(peak_over_frac, static_cast<double>(after_peak) / static_cast<double>(peak))
                            : Envelope{};
  if (out.empty()) return nullptr;
  return std::make_shared<const Envelope>(std::move(out));
}

void Predictor::add_profile(const JobProfile& p) {
  if (p.peak <= 0 || p.key.identity.empty()) return;
  profiles_[p.key.identity] = p;
  if (is_probe_klass(p.key.klass)) return;
  if (std::string sk = source_key_of(p.key.identity); !sk.empty()) profile_by_source_[sk] = p.key.identity;
  if (!p.key.stem.empty()) profile_by_stem_[p.key.klass + '\n' + p.key.stem] = p.key.identity;
  const double w = std::max(1, p.key.cpu_weight);
  // Below the root only: a profile tells what jobs with a stem like its
  // own need (a flash_bwd kernel's prior predicts other flash_bwd
  // kernels), not what every job of its klass needs.
  const double pof = std::clamp(p.peak_over_frac, 0.0, 1.0);
  if (const double f = envelope_after_fall(p.envelope); f > 0) {
    double& share = fallen_share_[p.key.klass];
    share = std::max(share, f);
  }
  index(p.key,
        StemEntry{static_cast<double>(p.peak) / w, p.wall_s, p.cpu_s, pof, static_cast<double>(p.after_peak) / w, false,
                  /*profile=*/true, entry_envelope(p.envelope, pof, p.after_peak, p.peak)},
        /*at_root=*/false);
}

// The identity's entry in its klass's and family's tries, at every depth
// of its stem.
void Predictor::index(const JobKey& key, const StemEntry& e, bool at_root) {
  const int id = intern(key.identity);
  const auto tokens = stem_tokens(key.stem);
  for (auto* groups : {&by_klass_, &by_family_}) {
    const std::string name = groups == &by_klass_ ? key.klass : klass_family(key.klass);
    auto& root = (*groups)[name];
    if (!root) root = std::make_unique<StemTrie>();
    StemTrie* n = root.get();
    if (at_root) n->put(id, e);
    for (const auto& t : tokens) {
      auto& child = n->children[t];
      if (!child) child = std::make_unique<StemTrie>();
      n = child.get();
      n->put(id, e);
    }
  }
}

// Max with decay over the newest runs. Returns nothing when no run of the
// identity completed; *floor then holds what its other runs imply.
std::optional<Prediction> Predictor::own_estimate(const std::vector<Run>& runs, int cpu_weight,
                                                  Bytes* floor) const {
  double best = 0;
  std::vector<double> walls, cpus, complete_peaks;
  double pof = 0;
  double after = 0;
  std::vector<Envelope> envelopes;
  double weight = 1.0;
  for (auto it = runs.rbegin(); it != runs.rend(); ++it, weight *= config_.decay) {
    const double scale = static_cast<double>(std::max(1, cpu_weight)) / it->cpu_weight;
    const double peak = static_cast<double>(it->peak) * scale;
    best = std::max(best, peak * weight * (it->failed ? config_.failed_weight : 1.0));
    if (it->failed || it->killed || complete_peaks.size() >= 3) continue;
    complete_peaks.push_back(peak);
    if (it->wall_s > 0) walls.push_back(it->wall_s);
    if (it->cpu_s > 0) cpus.push_back(it->cpu_s);
    pof = std::max(pof, it->peak_over_frac);
    after = std::max(after, static_cast<double>(it->after_peak) * scale);
    envelopes.push_back(it->envelope.empty() && it->peak > 0
                            ? step_envelope(it->peak_over_frac, static_cast<double>(it->after_peak) / static_cast<double>(it->peak))
                            : it->envelope);
  }
  const Bytes peak = to_bytes(best * config_.margin);
  if (complete_peaks.empty()) {
    *floor = peak;
    return std::nullopt;
  }
  Prediction p;
  p.peak = peak;
  p.wall_s = median_of(walls);
  p.cpu_s = median_of(cpus);
  p.peak_over_frac = pof > 0 ? pof : 1.0;
  p.after_peak = std::min(peak, to_bytes(after * config_.margin));
  // A run whose step is empty (it stayed high) counts as high to the end.
  for (auto& e : envelopes)
    if (e.empty()) e.at.assign(kEnvelopePoints, 1.0);
  p.envelope = combine_envelopes(envelopes);
  auto [lo, hi] = std::minmax_element(complete_peaks.begin(), complete_peaks.end());
  const bool consistent = *lo > 0 && *hi / *lo <= 1.25;
  p.confidence = !consistent ? 0.7 : complete_peaks.size() >= 3 ? 1.0 : complete_peaks.size() == 2 ? 0.9 : 0.75;
  p.source = PredictionSource::history;
  return p;
}

std::optional<Prediction> Predictor::from_groups(const JobKey& key, bool* only_profiles) const {
  const auto tokens = stem_tokens(key.stem);
  const int need = std::max(1, std::min(config_.min_similar_depth, static_cast<int>(tokens.size())));
  const int weight = std::max(1, key.cpu_weight);
  auto make = [&](const GroupStats& s, PredictionSource source, double confidence, double peak_w) {
    Prediction p;
    p.peak = to_bytes(peak_w * weight);
    p.wall_s = s.wall_s;
    p.cpu_s = s.cpu_s;
    p.peak_over_frac = s.peak_over_frac;
    p.after_peak = std::min(p.peak, to_bytes(s.after_w * weight));
    p.envelope = s.envelope;
    p.confidence = confidence;
    p.source = source;
    return p;
  };
  const StemTrie* klass = nullptr;
  const StemTrie* family = nullptr;
  if (auto it = by_klass_.find(key.klass); it != by_klass_.end()) klass = it->second.get();
  if (auto it = by_family_.find(klass_family(key.klass)); it != by_family_.end()) family = it->second.get();

  // Similar stems: the klass first, then other archs of the same tool;
  // runs seen here before profiles (a prior names jobs like these, the
  // runs measured them).
  for (const auto& [root, runs] : {std::pair{klass, true}, std::pair{family, true}, std::pair{klass, false},
                                   std::pair{family, false}}) {
    if (!root) continue;
    auto [node, depth] = root->deepest(tokens, runs);
    if (depth < need) continue;
    const GroupStats& s = node->stats(config_.similar_quantile);
    // From profiles alone the guess is weak (cold admission may do better
    // on what this build's running jobs show).
    const double confidence = s.only_profiles ? 0.3 : root == klass ? 0.6 : 0.45;
    *only_profiles = s.only_profiles;
    return make(s, PredictionSource::similar, confidence, s.peak_w);
  }
  // The klass's peak per preprocessed byte × this job's size.
  if (auto it = size_ratios_.find(key.klass);
      klass && key.tu_bytes > 0 && it != size_ratios_.end() &&
      it->second.size() >= static_cast<std::size_t>(std::max(1, config_.size_jobs))) {
    std::vector<double> ratios = it->second;
    const double peak_w = rank_quantile(ratios, config_.size_quantile) * static_cast<double>(key.tu_bytes);
    const GroupStats& s = klass->stats(config_.klass_quantile);
    return make(s, PredictionSource::build, 0.35, peak_w);
  }
  // The whole klass or family, pulled towards the default while small.
  const double prior_w = static_cast<double>(default_prediction(key).peak) / weight;
  for (const StemTrie* root : {klass, family}) {
    if (!root || root->entries.empty()) continue;
    const GroupStats& s = root->stats(config_.klass_quantile);
    double peak_w = s.peak_w;
    const auto n = static_cast<double>(s.n), prior = static_cast<double>(config_.prior_jobs);
    // Few jobs seen: a margin that shrinks as evidence grows, capped by
    // the default. Pulling all the way towards the default made a cold
    // build run its first jobs one at a time wherever the default exceeds
    // the budget (nvcc's 4 GiB on a small machine); pressure control
    // catches the rare job that outgrows the margin.
    if (n < prior) peak_w = std::max(peak_w, std::min(prior_w, peak_w * (1.0 + 0.5 * (prior - n) / prior)));
    const bool build = root == klass && s.in_build;
    return make(s, build ? PredictionSource::build : PredictionSource::similar, root == klass ? (build ? 0.35 : 0.3) : 0.2, peak_w);
  }
  return std::nullopt;
}

// The shape of a job's kind: the deepest group of similar stems (as rung
// 4) with another job than this one in it, over its members that have a
// curve that falls (the similar quantile, point by point); not their
// climb or fall. None where no member has one.
std::optional<Envelope> Predictor::kind_shape(const JobKey& key) const {
  const auto tokens = stem_tokens(key.stem);
  const int need = std::max(1, std::min(config_.min_similar_depth, static_cast<int>(tokens.size())));
  for (const auto* tries : {&by_klass_, &by_family_}) {
    auto it = tries->find(tries == &by_klass_ ? key.klass : klass_family(key.klass));
    if (it == tries->end()) continue;
    auto [node, depth] = it->second->deepest(tokens, false, 2);
    if (depth < need) continue;
    std::vector<const Envelope*> curves;  // members without one say nothing of the shape
    for (const auto& [id, entry] : node->entries)
      if (entry.envelope && std::any_of(entry.envelope->at.begin(), entry.envelope->at.end(), [](double v) { return v < 1.0; }))
        curves.push_back(entry.envelope.get());
    if (curves.empty()) continue;
    Envelope e = quantile_envelope(curves, config_.similar_quantile);
    e.rise.clear();
    e.fall_x = -1;
    return e;
  }
  return std::nullopt;
}

// Rung 3: a profile of this identity, else of the same source and arch,
// else of the same stem in the same klass.
const JobProfile* Predictor::profile_of(const JobKey& key) const {
  if (auto it = profiles_.find(key.identity); it != profiles_.end()) return &it->second;
  const std::string* identity = nullptr;
  if (const std::string sk = source_key_of(key.identity); !sk.empty()) {
    if (auto by = profile_by_source_.find(sk); by != profile_by_source_.end()) identity = &by->second;
  }
  if (!identity && !key.stem.empty()) {
    if (auto by = profile_by_stem_.find(key.klass + '\n' + key.stem); by != profile_by_stem_.end()) identity = &by->second;
  }
  if (!identity) return nullptr;
  auto it = profiles_.find(*identity);
  return it == profiles_.end() ? nullptr : &it->second;
}

std::optional<Prediction> Predictor::from_profile(const JobKey& key, Bytes floor) const {
  const JobProfile* found = profile_of(key);
  if (!found) return std::nullopt;
  const JobProfile& pr = *found;
  const double scale = static_cast<double>(std::max(1, key.cpu_weight)) / std::max(1, pr.key.cpu_weight);
  Prediction p;
  p.peak = std::max(floor, to_bytes(static_cast<double>(pr.peak) * scale * config_.margin));
  p.wall_s = pr.wall_s;
  p.cpu_s = pr.cpu_s;
  p.peak_over_frac = pr.peak_over_frac > 0 ? pr.peak_over_frac : 1.0;
  p.after_peak = std::min(p.peak, to_bytes(static_cast<double>(pr.after_peak) * scale * config_.margin));
  p.envelope = pr.envelope;
  p.confidence = pr.runs >= 3 ? 0.8 : 0.7;
  p.source = pr.origin;
  return p;
}

// The ladder (predictor.hpp), before calibration.
Prediction Predictor::guess(const JobKey& key, bool* elsewhere, Bytes* floor_out) const {
  *elsewhere = false;
  Bytes& floor = *floor_out;
  floor = 0;
  // 1. This identity's own runs.
  if (auto it = runs_.find(key.identity); it != runs_.end()) {
    if (auto own = own_estimate(it->second, key.cpu_weight, &floor)) return *own;
  }
  // 2. The same source and arch under another identity, own history.
  if (const std::string sk = source_key_of(key.identity); !sk.empty()) {
    auto by = run_by_source_.find(sk);
    auto it = by == run_by_source_.end() || by->second == key.identity ? runs_.end() : runs_.find(by->second);
    Bytes other_floor = 0;
    if (it != runs_.end()) {
      if (auto same = own_estimate(it->second, key.cpu_weight, &other_floor)) {
        if (const Bytes theirs = it->second.back().tu_bytes; theirs > 0 && key.tu_bytes > theirs) {
          const double f = static_cast<double>(key.tu_bytes) / static_cast<double>(theirs);
          same->peak = to_bytes(static_cast<double>(same->peak) * f);
          same->after_peak = to_bytes(static_cast<double>(same->after_peak) * f);
        }
        same->peak = std::max(same->peak, floor);
        same->confidence *= 0.9;
        return *same;
      }
    }
  }
  // 3. A profile from elsewhere: imported or prior. One recorded without
  // a curve (it stays at its peak to the end) takes its kind's shape
  // where the similar stems have one, without their climb or fall: the
  // shipped flash-attn prior has no curve for two backward kernels, and
  // the first of them held its whole 6.2 GiB prediction alone for all of
  // its 253 s, 2 GiB for the last two thirds of it (bench/real-kernels).
  if (auto p = from_profile(key, floor)) {
    *elsewhere = true;
    if (!envelope_declines(*p)) {
      if (auto shape = kind_shape(key)) p->envelope = std::move(*shape);
    }
    return *p;
  }
  // 4, 5: similar stems, class statistics; 6: the default, which knows
  // nothing of its job's time or shape, only, where profiles of its klass
  // (same tool, same archs: the shipped flash-attn prior's sm_80 kernels)
  // say it, how much of its peak such a job uses once its memory has
  // halved: 0.26-0.63 for those kernels, their ptxas and host-side tails
  // (a backward kernel that outgrew nvcc's 4 GiB default held 1.2 times
  // its 5.9 GiB peak to its end, and ran alone for the 70% of its life it
  // spent at under 2.6 GiB). Only the klass: a job of more archs may climb
  // again for the next, and a klass no profile has keeps its hold.
  std::optional<Prediction> grouped = from_groups(key, elsewhere);
  Prediction p = grouped.value_or(default_prediction(key));
  if (!grouped) {
    if (auto it = fallen_share_.find(key.klass); it != fallen_share_.end()) p.fallen_share = it->second;
  }
  p.peak = std::max(p.peak, floor);
  return p;
}

Prediction Predictor::predict(const JobKey& key) const {
  bool elsewhere = false;
  Bytes floor = 0;
  Prediction p = guess(key, &elsewhere, &floor);
  if (elsewhere) {
    calibrate(key, p);
    p.peak = std::max(p.peak, floor);  // what a killed attempt reached holds
  }
  return p;
}

// Before the job's own run is learned: what did the profiles say of it?
void Predictor::note_calibration(const JobRecord& job) {
  if (job.peak_bytes <= 0 || job.exit_status != 0 || ends_killed(job) || is_probe_klass(job.key.klass)) return;
  bool elsewhere = false;
  Bytes floor = 0;
  const Prediction p = guess(job.key, &elsewhere, &floor);
  if (!elsewhere || p.peak <= 0 || floor > 0) return;  // a rerun's guess was its floor
  Calibration& c = calibration_[klass_family(job.key.klass)];
  c.peak_ratio = std::max(c.peak_ratio, static_cast<double>(job.peak_bytes) / static_cast<double>(p.peak));
  if (const double w = last_attempt_s(job); p.wall_s > 0 && w > 0) c.wall_ratios.push_back(w / p.wall_s);
  if (p.cpu_s > 0 && job.cpu_s > 0) c.cpu_ratios.push_back(job.cpu_s / p.cpu_s);
}

void Predictor::observe_peak(const JobKey& key, Bytes peak) {
  if (peak <= 0 || is_probe_klass(key.klass)) return;
  bool elsewhere = false;
  Bytes floor = 0;
  const Prediction p = guess(key, &elsewhere, &floor);
  if (!elsewhere || p.peak <= 0 || floor > 0) return;
  // Only a peak above the guess says something before the job ends: a
  // real nvcc job's host side peaks at 0.8 GiB and falls before cicc
  // climbs to 6 GiB, so a peak below the guess may not be the job's. It
  // scaled a flash-attn prior to 0.15 of itself, and the next backward
  // kernel, admitted at 0.85 GiB beside another, was frozen and then
  // killed at 6 GiB. A prior too high is scaled when a job ends.
  if (peak <= p.peak) return;
  Calibration& c = calibration_[klass_family(key.klass)];
  c.peak_ratio = std::max(c.peak_ratio, static_cast<double>(peak) / static_cast<double>(p.peak));
}

void Predictor::calibrate(const JobKey& key, Prediction& p) const {
  auto it = calibration_.find(klass_family(key.klass));
  if (it == calibration_.end()) return;
  const Calibration& c = it->second;
  const double band = std::max(1.0, config_.calibration_band);
  auto off = [band](double f) { return f > 0 && (f < 1.0 / band || f > band); };
  const double f = c.peak_ratio * config_.calibration_margin;
  if (off(f)) {
    p.peak = std::max<Bytes>(1, to_bytes(static_cast<double>(p.peak) * f));
    p.after_peak = std::min(p.peak, to_bytes(static_cast<double>(p.after_peak) * f));
  }
  if (const double w = median_of(c.wall_ratios); off(w)) p.wall_s *= w;
  if (const double u = median_of(c.cpu_ratios); off(u)) p.cpu_s *= u;
}

}  // namespace memgate
