#include "plan/workload.hpp"

#include <algorithm>
#include <cmath>

#include "predict/envelope.hpp"
#include "predict/profile.hpp"

namespace memgate::plan {

double PlanJob::cpu_fraction() const {
  if (work_s <= 0 || cpu_s <= 0) return 0;
  return std::clamp(cpu_s / (work_s * std::max(1, threads)), 0.0, 1.0);
}

double PlanJob::cpu_demand() const { return cpu_fraction() * std::max(1, threads); }

namespace {

Bytes lerp(Bytes a, Bytes b, double f) {
  return a + static_cast<Bytes>(std::llround(static_cast<double>(b - a) * f));
}

}  // namespace

Bytes memory_at(const std::vector<ProfilePoint>& profile, double p) {
  if (profile.empty()) return 0;
  if (p <= profile.front().p) return profile.front().bytes;
  if (p >= profile.back().p) return profile.back().bytes;
  auto hi = std::upper_bound(profile.begin(), profile.end(), p,
                             [](double v, const ProfilePoint& pt) { return v < pt.p; });
  auto lo = hi - 1;
  double span = hi->p - lo->p;
  if (span <= 0) return hi->bytes;
  return lerp(lo->bytes, hi->bytes, (p - lo->p) / span);
}

Bytes max_between(const std::vector<ProfilePoint>& profile, double a, double b) {
  Bytes best = std::max(memory_at(profile, a), memory_at(profile, b));
  auto it = std::upper_bound(profile.begin(), profile.end(), a,
                             [](double v, const ProfilePoint& pt) { return v < pt.p; });
  for (; it != profile.end() && it->p < b; ++it) best = std::max(best, it->bytes);
  return best;
}

std::vector<ProfilePoint> downsample(const std::vector<ProfilePoint>& profile, size_t max_points) {
  return downsample_keeping_peaks(profile, max_points);
}

std::vector<ProfilePoint> simplify(const std::vector<ProfilePoint>& profile, Bytes tolerance) {
  if (profile.size() < 3) return profile;
  std::vector<char> keep(profile.size(), 0);
  keep.front() = keep.back() = 1;
  auto top = std::max_element(profile.begin(), profile.end(),
                              [](const ProfilePoint& a, const ProfilePoint& b) { return a.bytes < b.bytes; });
  size_t peak_at = static_cast<size_t>(top - profile.begin());
  keep[peak_at] = 1;
  // Douglas-Peucker on the vertical distance to the chord, without
  // recursion, on each side of the peak.
  std::vector<std::pair<size_t, size_t>> todo{{0, peak_at}, {peak_at, profile.size() - 1}};
  while (!todo.empty()) {
    auto [a, b] = todo.back();
    todo.pop_back();
    if (b <= a + 1) continue;
    const ProfilePoint &pa = profile[a], &pb = profile[b];
    double far = -1;
    size_t at = a;
    for (size_t i = a + 1; i < b; ++i) {
      double f = pb.p > pa.p ? (profile[i].p - pa.p) / (pb.p - pa.p) : 0;
      double chord = static_cast<double>(pa.bytes) + f * static_cast<double>(pb.bytes - pa.bytes);
      double d = std::fabs(static_cast<double>(profile[i].bytes) - chord);
      if (d > far) far = d, at = i;
    }
    if (far > static_cast<double>(tolerance)) {
      keep[at] = 1;
      todo.push_back({a, at});
      todo.push_back({at, b});
    }
  }
  std::vector<ProfilePoint> out;
  for (size_t i = 0; i < profile.size(); ++i)
    if (keep[i]) out.push_back(profile[i]);
  return out;
}

std::vector<ProfilePoint> profile_from_samples(const std::vector<MemSample>& samples, double duration_s,
                                               Bytes peak, double t_peak_s) {
  std::vector<ProfilePoint> out;
  double d = duration_s > 0 ? duration_s : 1;
  for (const MemSample& s : samples) out.push_back({std::clamp(s.t_s / d, 0.0, 1.0), std::max<Bytes>(0, s.bytes)});
  std::stable_sort(out.begin(), out.end(), [](const ProfilePoint& a, const ProfilePoint& b) { return a.p < b.p; });
  Bytes seen = 0;
  for (const auto& pt : out) seen = std::max(seen, pt.bytes);
  if (peak > seen) {
    ProfilePoint top{std::clamp(t_peak_s / d, 0.0, 1.0), peak};
    auto at = std::upper_bound(out.begin(), out.end(), top.p, [](double v, const ProfilePoint& pt) { return v < pt.p; });
    out.insert(at, top);
  }
  if (out.empty()) return synthesize_profile(peak, 0.1, 1.0, peak);
  if (out.front().p > 0) out.insert(out.begin(), {0.0, out.front().bytes});
  if (out.back().p < 1) out.push_back({1.0, out.back().bytes});
  return downsample(simplify(out, std::max(peak, seen) / 100), kMaxProfilePoints);
}

std::vector<ProfilePoint> synthesize_profile(Bytes peak, double peak_at, double peak_over, Bytes after) {
  peak = std::max<Bytes>(0, peak);
  peak_at = std::clamp(peak_at, 0.0, 1.0);
  peak_over = std::clamp(peak_over, peak_at, 1.0);
  after = std::clamp<Bytes>(after, 0, peak);
  // A compiler starts small: a tenth of its peak once it has loaded.
  std::vector<ProfilePoint> out{{0.0, peak / 10}};
  out.push_back({peak_at, peak});
  if (peak_over < 1.0) {
    out.push_back({peak_over, peak});
    // The fall takes a moment (cicc freeing its IR); then the rest is flat.
    double fall_end = std::min(1.0, peak_over + 0.02);
    out.push_back({fall_end, after});
    if (fall_end < 1.0) out.push_back({1.0, after});
  } else {
    out.push_back({1.0, peak});
  }
  return out;
}

// The recorder's rule (predict/profile.hpp peak_timing), on progress
// instead of seconds: a profile is a job of duration 1.
void fill_prediction_from_profile(const std::vector<ProfilePoint>& profile, Prediction& p) {
  std::vector<MemSample> samples;
  samples.reserve(profile.size());
  for (const auto& pt : profile) samples.push_back(MemSample{pt.p, pt.bytes});
  PeakTiming t = peak_timing(samples, 1.0);
  p.peak = t.peak;
  p.peak_over_frac = t.peak_over_frac;
  p.after_peak = t.peak_over_frac < 1.0 ? t.after_peak_bytes : 0;
  p.envelope = envelope_of(samples, 1.0);
}

Envelope envelope_of_profile(const std::vector<ProfilePoint>& profile) {
  std::vector<MemSample> samples;
  samples.reserve(profile.size());
  for (const auto& pt : profile) samples.push_back(MemSample{pt.p, pt.bytes});
  return envelope_of(samples, 1.0);
}

void normalize(PlanJob& job) {
  if (!(job.work_s > 0)) job.work_s = 1e-3;
  job.threads = std::max(1, job.threads);
  job.cpu_s = std::max(0.0, job.cpu_s);
  if (job.profile.empty()) job.profile = synthesize_profile(job.peak, 0.1, 1.0, job.peak);
  Bytes peak = 0;
  for (const auto& pt : job.profile) peak = std::max(peak, pt.bytes);
  job.peak = peak;
  if (job.predicted.peak <= 0) {
    fill_prediction_from_profile(job.profile, job.predicted);
    job.predicted.wall_s = job.work_s;
    job.predicted.cpu_s = job.cpu_s;
    job.predicted.source = PredictionSource::profile;
  }
  if (job.key.identity.empty()) job.key.identity = job.name;
  job.key.cpu_weight = std::max(1, job.key.cpu_weight);
}

}  // namespace memgate::plan
