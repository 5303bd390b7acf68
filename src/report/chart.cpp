#include "report/chart.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <iterator>

namespace memgate {
namespace {

// Average advance of a character of the timeline's 9 px sans-serif font,
// and the padding a label keeps from its bar's edges.
constexpr double kCharPx = 5.5;
constexpr int kLabelPadPx = 4;

bool continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

// "1.25" from 1.25, "2" from 2.000: at most three decimals, no trailing zeros.
std::string trimmed(double v) {
  std::string s = fmt::format("{:.3f}", v);
  while (!s.empty() && s.back() == '0') s.pop_back();
  if (!s.empty() && s.back() == '.') s.pop_back();
  return s;
}

}  // namespace

Bytes byte_tick_step(Bytes top, int height_px, int min_px) {
  const Bytes max_steps = std::max(1, height_px / std::max(1, min_px));
  // Powers of two from 64 KiB: binary steps give round labels in the
  // binary units memgate prints everywhere (256 MiB, 1.5 GiB, 32 GiB).
  Bytes step = 64 * KiB;
  while (top > step * max_steps && step < (Bytes{1} << 60)) step *= 2;
  return step;
}

double time_tick_step(double t_end, int width_px, int min_px) {
  static const double kSteps[] = {0.1,  0.2,  0.5,  1,    2,     5,     10,    15,    30,    60,    120,
                                  300,  600,  900,  1800, 3600,  7200,  10800, 21600, 43200, 86400};
  if (!(t_end > 0) || width_px <= 0) return kSteps[std::size(kSteps) - 1];
  const double px_per_s = width_px / t_end;
  for (double step : kSteps) {
    if (step * px_per_s >= min_px) return step;
  }
  const double days = std::ceil(min_px / px_per_s / 86400);
  return days * 86400;
}

std::string axis_bytes(Bytes v) {
  if (v == 0) return "0";
  static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  double x = static_cast<double>(v < 0 ? -v : v);
  while (x >= 1024 && u < 4) {
    x /= 1024;
    ++u;
  }
  return fmt::format("{}{} {}", v < 0 ? "-" : "", trimmed(x), units[u]);
}

std::string axis_time(double seconds) {
  if (!std::isfinite(seconds) || seconds <= 0) return "0";
  if (seconds < 60) {
    const double tenths = std::round(seconds * 10) / 10;
    return trimmed(tenths) + "s";
  }
  const long long s = std::llround(seconds);
  if (s < 3600) {
    const long long sec = s % 60;
    return sec == 0 ? fmt::format("{}m", s / 60) : fmt::format("{}m{:02d}s", s / 60, sec);
  }
  const long long min = (s % 3600) / 60;
  return min == 0 ? fmt::format("{}h", s / 3600) : fmt::format("{}h{:02d}m", s / 3600, min);
}

int peak_band(Bytes peak) {
  int band = 0;
  for (Bytes limit : kPeakBandLimits) {
    if (peak >= limit) ++band;
  }
  return band;
}

std::string fit_label(std::string_view text, int width_px) {
  const int fit = static_cast<int>((width_px - kLabelPadPx) / kCharPx);
  size_t chars = 0;
  for (char c : text) chars += continuation(c) ? 0 : 1;
  if (chars == 0 || fit <= 0) return "";
  if (chars <= static_cast<size_t>(fit)) return std::string(text);
  if (fit < 7) return "";  // six characters and the ellipsis, or nothing: "ker…" says nothing
  // Keep fit - 1 characters: the byte before the (fit)th character start.
  size_t seen = 0, cut = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    if (continuation(text[i])) continue;
    if (seen == static_cast<size_t>(fit - 1)) {
      cut = i;
      break;
    }
    ++seen;
  }
  return std::string(text.substr(0, cut)) + "\u2026";
}

}  // namespace memgate
