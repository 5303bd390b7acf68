#include "predict/profile.hpp"

#include <algorithm>

namespace memgate {

PeakTiming peak_timing(const std::vector<MemSample>& profile, double duration_s, double high_frac) {
  PeakTiming t;
  if (profile.empty()) return t;
  size_t peak_i = 0;
  for (size_t i = 1; i < profile.size(); ++i)
    if (profile[i].bytes > profile[peak_i].bytes) peak_i = i;
  t.peak = profile[peak_i].bytes;
  t.t_peak_s = profile[peak_i].t_s;

  const double threshold = high_frac * static_cast<double>(t.peak);
  size_t last_high = peak_i;
  for (size_t i = profile.size(); i-- > peak_i;) {
    if (static_cast<double>(profile[i].bytes) >= threshold) {
      last_high = i;
      break;
    }
  }
  const double duration = duration_s > 0 ? duration_s : profile.back().t_s;
  if (last_high + 1 >= profile.size() || duration <= 0) {
    t.peak_over_frac = 1.0;
    t.after_peak_bytes = t.peak;
    return t;
  }
  t.peak_over_frac = std::clamp(profile[last_high + 1].t_s / duration, 0.0, 1.0);
  for (size_t i = last_high + 1; i < profile.size(); ++i)
    t.after_peak_bytes = std::max(t.after_peak_bytes, profile[i].bytes);
  return t;
}

void interpolate_cpu_clock(std::vector<MemSample>& profile) {
  double most = 0;
  std::size_t last = profile.size();  // the last point that read it
  for (std::size_t i = 0; i < profile.size(); ++i) {
    MemSample& s = profile[i];
    if (s.cpu_s < 0) continue;
    s.cpu_s = most = std::max(most, s.cpu_s);
    if (last < i) {
      const MemSample& a = profile[last];
      const double span = s.t_s - a.t_s;
      for (std::size_t k = last + 1; k < i; ++k) {
        const double f = span > 0 ? std::clamp((profile[k].t_s - a.t_s) / span, 0.0, 1.0) : 1.0;
        profile[k].cpu_s = a.cpu_s + f * (s.cpu_s - a.cpu_s);
      }
    }
    last = i;
  }
}

}  // namespace memgate
