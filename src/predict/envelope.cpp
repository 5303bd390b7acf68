#include "predict/envelope.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

namespace memgate {

namespace {

// Non-increasing from the end (a future max never rises), 1 at x = 0.
void make_future_max(std::vector<double>& at) {
  for (std::size_t i = at.size(); i-- > 1;) at[i - 1] = std::max(at[i - 1], at[i]);
  if (!at.empty()) at[0] = 1.0;
}

}  // namespace

Envelope envelope_of(const std::vector<MemSample>& profile, double duration_s) {
  Envelope e;
  if (profile.empty()) return e;
  Bytes peak = 0;
  for (const auto& s : profile) peak = std::max(peak, s.bytes);
  if (peak <= 0) return e;
  // The clock: the job's CPU time where every point has it (admission
  // reads x as CPU progress), else wall time.
  const bool on_cpu = profile.back().cpu_s > 0 &&
                      std::all_of(profile.begin(), profile.end(), [](const MemSample& p) { return p.cpu_s >= 0; });
  auto clock = [&](const MemSample& p) { return on_cpu ? p.cpu_s : p.t_s; };
  const double duration = on_cpu ? profile.back().cpu_s : duration_s > 0 ? duration_s : profile.back().t_s;
  e.at.assign(kEnvelopePoints, 0.0);
  if (duration <= 0) {
    e.at.assign(kEnvelopePoints, 1.0);
    return e;
  }
  // suffix[k]: the most memory from sample k on.
  std::vector<Bytes> suffix(profile.size());
  Bytes m = 0;
  for (std::size_t k = profile.size(); k-- > 0;) suffix[k] = m = std::max(m, profile[k].bytes);
  std::size_t k = 0;  // the last sample at or before x (or the first one)
  for (int i = 0; i < kEnvelopePoints; ++i) {
    const double t = duration * i / (kEnvelopePoints - 1);
    while (k + 1 < profile.size() && clock(profile[k + 1]) <= t) ++k;
    e.at[i] = static_cast<double>(suffix[k]) / static_cast<double>(peak);
  }
  // The climb: the most memory up to x, counting the first sample at or
  // after it (memory between two samples is taken as the higher).
  e.rise.assign(kEnvelopePoints, 1.0);
  Bytes so_far = 0;
  std::size_t r = 0;  // the samples before r are counted in so_far
  for (int i = 0; i < kEnvelopePoints; ++i) {
    const double t = duration * i / (kEnvelopePoints - 1);
    while (r < profile.size() && clock(profile[r]) < t) so_far = std::max(so_far, profile[r++].bytes);
    const Bytes upto = r < profile.size() ? std::max(so_far, profile[r].bytes) : so_far;
    e.rise[i] = static_cast<double>(upto) / static_cast<double>(peak);
  }
  e.rise.back() = 1.0;
  // The fall: the first sample under half the peak after one at 90% of it.
  bool high = false;
  for (const MemSample& p : profile) {
    if (!high) {
      high = static_cast<double>(p.bytes) >= 0.9 * static_cast<double>(peak);
    } else if (static_cast<double>(p.bytes) < 0.5 * static_cast<double>(peak)) {
      e.fall_x = std::clamp(clock(p) / duration, 0.0, 1.0);
      break;
    }
  }
  make_future_max(e.at);
  return e;
}

Envelope combine_envelopes(const std::vector<Envelope>& runs) {
  std::vector<const Envelope*> some;
  for (const auto& r : runs)
    if (!r.empty()) some.push_back(&r);
  Envelope out;
  if (some.empty()) return out;
  std::size_t n = 0;
  for (const auto* r : some) n = std::max(n, r->at.size());
  out.at.assign(n, 0.0);
  std::vector<double> vals;
  for (std::size_t i = 0; i < n; ++i) {
    vals.clear();
    const double x = n > 1 ? static_cast<double>(i) / static_cast<double>(n - 1) : 0.0;
    for (const auto* r : some) vals.push_back(envelope_at(*r, x));
    std::sort(vals.begin(), vals.end(), std::greater<>());
    out.at[i] = vals.size() >= 3 ? vals[1] : vals[0];
  }
  make_future_max(out.at);
  // The fastest climb, known only if every run knows its own.
  if (std::all_of(some.begin(), some.end(), [&](const Envelope* r) { return r->rise.size() == n; })) {
    out.rise.assign(n, 0.0);
    for (const auto* r : some)
      for (std::size_t i = 0; i < n; ++i) out.rise[i] = std::max(out.rise[i], r->rise[i]);
  }
  // The earliest fall, known only if every run knows its own.
  for (const auto* r : some) {
    if (r->fall_x < 0) {
      out.fall_x = -1;
      break;
    }
    out.fall_x = out.fall_x < 0 ? r->fall_x : std::min(out.fall_x, r->fall_x);
  }
  return out;
}

double rank_quantile(std::vector<double>& v, double q) {
  if (v.empty()) return 0;
  const auto k = static_cast<std::size_t>(std::ceil(std::clamp(q, 0.0, 1.0) * static_cast<double>(v.size() - 1)));
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(k), v.end());
  return v[k];
}

Envelope quantile_envelope(const std::vector<const Envelope*>& members, double q) {
  Envelope out;
  if (members.empty()) return out;
  out.at.assign(kEnvelopePoints, 1.0);
  std::vector<double> vals(members.size());
  for (int i = 1; i < kEnvelopePoints; ++i) {
    const double x = static_cast<double>(i) / (kEnvelopePoints - 1);
    for (std::size_t m = 0; m < members.size(); ++m) vals[m] = members[m] ? envelope_at(*members[m], x) : 1.0;
    out.at[i] = rank_quantile(vals, q);
  }
  make_future_max(out.at);
  return out;
}

Envelope step_envelope(double peak_over_frac, double after_frac) {
  Envelope e;
  if (!(peak_over_frac < 1.0) || !(after_frac > 0)) return e;
  const double after = std::clamp(after_frac, 0.0, 1.0);
  e.at.resize(kEnvelopePoints);
  for (int i = 0; i < kEnvelopePoints; ++i) {
    const double x = static_cast<double>(i) / (kEnvelopePoints - 1);
    e.at[i] = x >= peak_over_frac ? after : 1.0;
  }
  make_future_max(e.at);
  return e;
}

double envelope_at(const Envelope& e, double x) {
  if (e.at.empty()) return 1.0;
  if (e.at.size() == 1) return e.at[0];
  if (!(x > 0)) return e.at[0];
  x = std::min(x, 1.0);
  const auto last = e.at.size() - 1;
  // The small epsilon keeps a progress that lands on a point (0.5 of 33
  // points) from falling one point short through rounding.
  const auto i = std::min(last, static_cast<std::size_t>(std::floor(x * static_cast<double>(last) + 1e-9)));
  return e.at[i];
}

double envelope_after_fall(const Envelope& e) {
  if (e.at.size() < 2 || e.fall_x < 0) return -1;
  const auto last = e.at.size() - 1;
  const auto i = std::min(last, static_cast<std::size_t>(std::ceil(e.fall_x * static_cast<double>(last) - 1e-9)));
  return e.at[i];
}

Envelope envelope_for(const Prediction& p) {
  if (!p.envelope.empty()) return p.envelope;
  if (p.peak <= 0) return {};
  return step_envelope(p.peak_over_frac, static_cast<double>(p.after_peak) / static_cast<double>(p.peak));
}

double envelope_at(const Prediction& p, double x) {
  if (!p.envelope.empty()) return envelope_at(p.envelope, x);
  if (p.peak <= 0 || !(p.peak_over_frac < 1.0) || !(p.after_peak > 0)) return 1.0;  // as step_envelope: empty
  // The point of step_envelope's that envelope_at(Envelope) would read.
  if (!(x > 0)) return 1.0;
  const auto last = kEnvelopePoints - 1;
  const int i = std::min(last, static_cast<int>(std::floor(std::min(x, 1.0) * last + 1e-9)));
  const double at = static_cast<double>(i) / last;
  return at >= p.peak_over_frac ? std::clamp(static_cast<double>(p.after_peak) / static_cast<double>(p.peak), 0.0, 1.0)
                                : 1.0;
}

double envelope_peak_end(const Prediction& p) {
  if (!envelope_declines(p)) return 1.0;
  if (!p.envelope.empty()) {
    const auto& at = p.envelope.at;
    std::size_t i = 0;
    while (i + 1 < at.size() && at[i + 1] >= 1.0) ++i;
    return static_cast<double>(i) / static_cast<double>(at.size() - 1);
  }
  // step_envelope's points: 1 while before peak_over_frac.
  const int last = kEnvelopePoints - 1;
  int i = 0;
  while (i < last && static_cast<double>(i + 1) / last < p.peak_over_frac) ++i;
  return static_cast<double>(i) / last;
}

bool envelope_declines(const Prediction& p) {
  if (!p.envelope.empty()) return p.envelope.at.back() < 1.0;  // non-increasing
  if (p.peak <= 0 || !(p.peak_over_frac < 1.0) || p.after_peak <= 0) return false;  // as step_envelope
  return p.after_peak < p.peak;
}

Bytes envelope_gives_back(const Prediction& p) {
  if (!envelope_declines(p) || p.peak <= 0) return 0;
  const double end = !p.envelope.empty() ? p.envelope.at.back()
                                         : static_cast<double>(p.after_peak) / static_cast<double>(p.peak);
  return std::max<Bytes>(0, p.peak - static_cast<Bytes>(std::llround(static_cast<double>(p.peak) * end)));
}

Envelope sanitized_envelope(const std::vector<double>& at, double fall_x) {
  Envelope e;
  if (at.size() < static_cast<std::size_t>(kEnvelopeMinPoints) || at.size() > static_cast<std::size_t>(kEnvelopeMaxPoints))
    return e;
  for (double v : at)
    if (!std::isfinite(v)) return e;
  e.at = at;
  for (double& v : e.at) v = std::clamp(v, 0.0, 1.0);
  make_future_max(e.at);
  if (std::isfinite(fall_x) && fall_x >= 0 && fall_x <= 1) e.fall_x = fall_x;
  return e;
}

}  // namespace memgate
