// Pure numbers behind the HTML report's pictures: axis ticks a reader can
// take in at a glance, their labels, the fixed peak bands that colour job
// bars, and labels cut to fit a bar. No HTML here; html*.cpp draws.
#pragma once

#include <array>
#include <string>
#include <string_view>

#include "util/size.hpp"

namespace memgate {

// The smallest "nice" step (1, 2, 5 x 10^k MiB, then GiB: 1, 2, 5, 10, 20,
// 50 ... GiB) that puts at most `height_px / min_px` steps below `top`, so
// labels on a `height_px` tall axis are at least `min_px` apart. Never 0.
Bytes byte_tick_step(Bytes top, int height_px, int min_px);

// The smallest of 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30 s, 1, 2, 5, 10, 15,
// 30 min, 1, 2, 3, 6, 12, 24 h whose width on a `width_px` axis spanning
// `t_end` seconds is at least `min_px`; a multiple of 24 h beyond.
double time_tick_step(double t_end, int width_px, int min_px);

// Tick labels without noise: "0", "512 MiB", "1.5 GiB", "20 GiB".
std::string axis_bytes(Bytes v);
// "0", "0.5s", "30s", "1m", "1m30s", "2h", "1h30m".
std::string axis_time(double seconds);

// Job colour by absolute peak, the same for every build: band 0 below
// 256 MiB, 1 below 1 GiB, 2 below 4 GiB, 3 at or above 4 GiB.
constexpr std::array<Bytes, 3> kPeakBandLimits = {256 * MiB, 1 * GiB, 4 * GiB};
int peak_band(Bytes peak);

// `text` as a label of a bar `width_px` wide in the timeline's 9 px font:
// whole if it fits, else cut with "…" when at least six characters
// remain, else "" (no label). Cuts only at UTF-8 character boundaries.
std::string fit_label(std::string_view text, int width_px);

}  // namespace memgate
