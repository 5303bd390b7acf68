#include "report/html_time.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>

#include "report/chart.hpp"
#include "report/html.hpp"
#include "report/timeline.hpp"

namespace memgate {
namespace {

using Out = std::back_insert_iterator<std::string>;

constexpr size_t kMaxMemoryPoints = 2000;
constexpr int kAxisColumn = 64;     // the fixed label column left of the plots
constexpr int kPlotLeft = 8;        // x of t = 0 inside the plots (room for the "0" label)
constexpr int kPlotRight = 44;      // room after the end for the last time label
constexpr int kMinPlotWidth = 1200; // fills a 1400 px window without scrolling
constexpr int kMaxPlotWidth = 16000;
constexpr int kMemHeight = 190;
constexpr int kMemTop = 8;
constexpr int kMemBottom = 6;
constexpr int kMinTickPx = 28;      // y labels at least this far apart
constexpr int kMinTimeTickPx = 80;
constexpr int kAxisRow = 18;
constexpr int kEventRow = 11;

// Each governor event kind's lane: its place, label and colour. A switch
// without a default, so a kind added to core/job.hpp without a style here
// does not compile (-Wswitch, made an error for this function).
struct EventStyle {
  int lane;
  const char* label;
  const char* colour;
};
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch"
constexpr EventStyle style_of(EventKind kind) {
  switch (kind) {
    case EventKind::pressure: return {0, "pressure", "#7f7f7f"};
    case EventKind::freeze: return {1, "freeze", "#1f77b4"};
    case EventKind::thaw: return {2, "thaw", "#2ca02c"};
    case EventKind::kill: return {3, "kill", "#ff7f0e"};
    case EventKind::requeue: return {4, "requeue", "#d62728"};
    case EventKind::oom_kill: return {5, "OOM kill", "#9467bd"};
    case EventKind::retry: return {6, "retry", "#8c564b"};
    case EventKind::gave_up: return {7, "gave up", "#000000"};
    case EventKind::alone: return {8, "ran alone", "#e377c2"};
    case EventKind::overshoot: return {9, "overshoot", "#bcbd22"};
    case EventKind::offload: return {10, "offload", "#17becf"};
    case EventKind::decline: return {11, "decline", "#aec7e8"};
    case EventKind::fallback: return {12, "fallback", "#98df8a"};
  }
  return {99, "?", "#000000"};
}
#pragma GCC diagnostic pop

// Maps seconds to integer pixels; the same for both plots.
struct Scale {
  double t_end = 1;
  int width = 1;  // of the plot area, from kPlotLeft
  int x(double t) const {
    return kPlotLeft + static_cast<int>(std::lround(std::clamp(t / t_end, 0.0, 1.0) * width));
  }
  int svg_width() const { return kPlotLeft + width + kPlotRight; }
  // The attributes both plots carry, so a test (or a reader) can check they agree.
  std::string attributes() const {
    return fmt::format("width=\"{}\" data-x0=\"{}\" data-px-per-s=\"{:.6f}\" data-t-end=\"{:.3f}\"", svg_width(),
                       kPlotLeft, width / t_end, t_end);
  }
};

void vertical_grid(std::string& out, const Scale& s, int y1, int y2) {
  const double step = time_tick_step(s.t_end, s.width, kMinTimeTickPx);
  for (double t = 0; t <= s.t_end + 1e-9; t += step) {
    fmt::format_to(Out(out), "<line class=\"grid\" x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\"/>", s.x(t), y1, y2);
  }
  out += '\n';
}

std::string points_of(const std::vector<MemSample>& series, const Scale& s, const auto& y) {
  std::string points;
  for (const auto& m : series) fmt::format_to(Out(points), "{},{} ", s.x(m.t_s), y(m.bytes));
  if (!points.empty()) points.pop_back();
  return points;
}

// The memory plot and its y labels (appended to `labels`, the left column).
void memory_chart(std::string& out, std::string& labels, const BuildRecord& b, const BuildFacts& f,
                  const std::vector<MemSample>& reserved, const Scale& s) {
  Bytes most = std::max({f.peak_bytes, f.budget, Bytes{1}});
  for (const auto& r : reserved) most = std::max(most, r.bytes);
  const int plot_h = kMemHeight - kMemTop - kMemBottom;
  const Bytes step = byte_tick_step(most + most / 20, plot_h, kMinTickPx);
  const Bytes top = (most + most / 20 + step - 1) / step * step;
  auto y = [&](Bytes v) {
    return kMemTop + plot_h - static_cast<int>(std::lround(double(v) / double(top) * plot_h));
  };
  fmt::format_to(Out(out), "<svg class=\"mem\" {} height=\"{}\" role=\"img\" "
                 "aria-label=\"memory used, reserved and budget over the build\">\n", s.attributes(), kMemHeight);
  fmt::format_to(Out(labels), "<svg class=\"yax\" width=\"{}\" height=\"{}\">", kAxisColumn, kMemHeight);
  for (Bytes v = 0; v <= top; v += step) {
    fmt::format_to(Out(out), "<line class=\"grid\" x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\"/>", kPlotLeft,
                   s.x(s.t_end), y(v));
    fmt::format_to(Out(labels), "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>", kAxisColumn - 4, y(v) + 3,
                   axis_bytes(v));
  }
  labels += "</svg>\n";
  vertical_grid(out, s, kMemTop, kMemTop + plot_h);
  const std::vector<MemSample> used = downsample(b.memory, kMaxMemoryPoints);
  if (!used.empty()) {
    const std::string points = points_of(used, s, y);
    fmt::format_to(Out(out), "<polygon class=\"area\" points=\"{0},{1} {2} {3},{1}\"/>\n", s.x(used.front().t_s),
                   y(0), points, s.x(used.back().t_s));
    fmt::format_to(Out(out), "<polyline class=\"used\" points=\"{}\"><title>memory used by the build</title></polyline>\n",
                   points);
  }
  if (!reserved.empty()) {
    fmt::format_to(Out(out), "<polyline class=\"reserved\" points=\"{}\"><title>reserved: predicted peaks of the "
                   "running jobs (derived from the jobs)</title></polyline>\n",
                   points_of(downsample(reserved, kMaxMemoryPoints), s, y));
  }
  if (f.budget > 0) {
    fmt::format_to(Out(out), "<line class=\"budget\" x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\"><title>budget {3}</title></line>"
                   "<text class=\"bt\" x=\"{4}\" y=\"{5}\">budget {3}</text>\n",
                   kPlotLeft, s.x(s.t_end), y(f.budget), format_bytes(f.budget), kPlotLeft + 4, y(f.budget) - 3);
  }
  auto peak = std::max_element(used.begin(), used.end(), [](const MemSample& a, const MemSample& c) { return a.bytes < c.bytes; });
  if (peak != used.end()) {
    // The recorded peak (cgroup high-water mark) may fall between samples:
    // marked at the highest sample's time, at the recorded height.
    const int cx = s.x(peak->t_s), cy = y(std::max(f.peak_bytes, peak->bytes));
    const bool right = cx > s.x(s.t_end) - 120;  // label to the left near the end
    fmt::format_to(Out(out), "<circle class=\"pk\" cx=\"{0}\" cy=\"{1}\" r=\"3.5\"><title>peak {2} (highest sample {7} at {3})</title></circle>"
                   "<text class=\"pt\" x=\"{4}\" y=\"{5}\"{6}>peak {2}</text>\n",
                   cx, cy, format_bytes(std::max(f.peak_bytes, peak->bytes)), format_duration(peak->t_s),
                   right ? cx - 7 : cx + 7, std::max(kMemTop + 8, cy + 3), right ? " text-anchor=\"end\"" : "",
                   format_bytes(peak->bytes));
  }
  out += "</svg>\n";
}

// The kinds of event that occurred, in lane order.
std::vector<EventKind> event_lanes(const BuildRecord& b) {
  std::vector<EventKind> lanes;
  for (const BuildEvent& e : b.events)
    if (std::find(lanes.begin(), lanes.end(), e.kind) == lanes.end()) lanes.push_back(e.kind);
  std::sort(lanes.begin(), lanes.end(), [](EventKind x, EventKind y) { return style_of(x).lane < style_of(y).lane; });
  return lanes;
}

void event_strip(std::string& out, std::string& labels, const BuildRecord& b, const Scale& s) {
  const auto lanes = event_lanes(b);
  for (size_t r = 0; r < lanes.size(); ++r) {
    const int y = kAxisRow + static_cast<int>(r) * kEventRow;
    const std::string_view kind = name(lanes[r]);
    fmt::format_to(Out(out), "<rect class=\"evlane\" data-kind=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>",
                   kind, kPlotLeft, y, s.width, kEventRow - 1);
    fmt::format_to(Out(labels), "<text class=\"evl\" data-kind=\"{}\" x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>",
                   kind, kAxisColumn - 4, y + 8, style_of(lanes[r]).label);
    for (const auto& e : b.events) {
      if (e.kind != lanes[r]) continue;
      std::string who;
      if (e.job >= 0 && static_cast<size_t>(e.job) < b.jobs.size()) who = b.jobs[static_cast<size_t>(e.job)].key.identity;
      fmt::format_to(Out(out), "<rect class=\"ev k-{}\" x=\"{}\" y=\"{}\" width=\"3\" height=\"{}\"><title>{} at {}: {} {}</title></rect>\n",
                     kind, s.x(e.t_s), y, kEventRow - 2, kind, format_duration(e.t_s), html_escape(who),
                     html_escape(e.reason));
    }
  }
  out += '\n';
}

// "job pN" by the peak's band, "job f" if the job failed.
const char* job_class(const JobRecord& j, Bytes peak) {
  static const char* bands[] = {"job p0", "job p1", "job p2", "job p3"};
  if (j.exit_status != 0) return "job f";
  return bands[std::clamp(peak_band(peak), 0, 3)];
}

void append_bar(std::string& out, const BuildRecord& b, const TimelineBar& bar, const Scale& s, int y, int h) {
  const JobRecord& j = b.jobs[static_cast<size_t>(bar.job)];
  const int x = s.x(bar.start_s);
  int w = std::max(1, s.x(bar.end_s) - x);
  if (w > 3) --w;  // a pixel of gap keeps back-to-back jobs in a lane apart
  std::string tip = fmt::format("{}\npeak {}", j.key.identity, format_bytes(bar.peak_bytes));
  if (j.predicted.peak > 0) tip += fmt::format(" (predicted {})", format_bytes(j.predicted.peak));
  tip += ", ";
  if (bar.last) {
    tip += fmt::format("CPU {:.1f}s, waited {}, frozen {}, ran {}", j.cpu_s, format_duration(j.wait_s),
                       format_duration(j.frozen_s), format_duration(bar.end_s - bar.start_s));
  } else {
    tip += fmt::format("ran {}", format_duration(bar.end_s - bar.start_s));
  }
  if (bar.attempts > 1) tip += fmt::format(", attempt {} of {}", bar.attempt + 1, bar.attempts);
  tip += ": ";
  tip += name(bar.outcome);
  if (bar.last && j.exit_status != 0) tip += fmt::format(" (exit status {})", j.exit_status);
  const char* cls = bar.last ? job_class(j, bar.peak_bytes) : "attempt";
  fmt::format_to(Out(out), "<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>{}</title></rect>",
                 cls, x, y, w, h, html_escape(tip));
  const std::string label = bar.last && h >= 10 ? fit_label(short_name(j), w) : std::string();
  if (!label.empty()) {
    const bool dark = j.exit_status != 0 || peak_band(bar.peak_bytes) >= 3;
    fmt::format_to(Out(out), "<text class=\"bl{}\" x=\"{}\" y=\"{}\">{}</text>", dark ? " w" : "", x + 2, y + h - 3,
                   html_escape(label));
  }
  out += '\n';
}

void timeline(std::string& out, std::string& labels, const BuildRecord& b, const Timeline& t, const Scale& s) {
  const int lanes = std::max(t.lanes, 1);
  const int lane_h = lanes > 64 ? 8 : 14;
  const int events = static_cast<int>(event_lanes(b).size());
  const int top = kAxisRow + events * kEventRow + (events > 0 ? 4 : 0);
  const int height = top + lanes * lane_h + 4;
  fmt::format_to(Out(out), "<svg class=\"tl\" {} height=\"{}\" data-jobs=\"{}\" data-lanes=\"{}\">\n", s.attributes(),
                 height, b.jobs.size(), t.lanes);
  fmt::format_to(Out(labels), "<svg class=\"yax\" width=\"{}\" height=\"{}\">", kAxisColumn, height);
  vertical_grid(out, s, kAxisRow - 4, height);
  const double step = time_tick_step(s.t_end, s.width, kMinTimeTickPx);
  for (double x = 0; x <= s.t_end + 1e-9; x += step) {
    fmt::format_to(Out(out), "<text class=\"tk\" x=\"{}\" y=\"11\">{}</text>", s.x(x) + 2, axis_time(x));
  }
  out += '\n';
  event_strip(out, labels, b, s);
  const int label_every = lanes > 64 ? 8 : 1;
  for (int l = 0; l < lanes; ++l) {
    if (l % 2 == 1) {
      fmt::format_to(Out(out), "<rect class=\"lane\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>", kPlotLeft,
                     top + l * lane_h, s.width, lane_h);
    }
    if (l % label_every == 0) {
      fmt::format_to(Out(labels), "<text x=\"{}\" y=\"{}\" text-anchor=\"end\">slot {}</text>", kAxisColumn - 4,
                     top + l * lane_h + lane_h - 4, l + 1);
    }
  }
  out += '\n';
  for (const auto& bar : t.bars) append_bar(out, b, bar, s, top + bar.lane * lane_h + 1, lane_h - 2);
  out += "</svg>\n";
  labels += "</svg>\n";
}

std::string legends(const BuildFacts& f, bool reserved) {
  std::string out = "<p class=\"legend\" id=\"mem-legend\">Memory: <span class=\"sw used\"></span>used by the build";
  if (reserved) out += " <span class=\"sw reserved\"></span>reserved (predicted peaks of running jobs)";
  else out += " (reserved: no predictions recorded)";
  if (f.budget > 0) out += fmt::format(" <span class=\"sw budget\"></span>budget {}", format_bytes(f.budget));
  out += fmt::format(" <span class=\"sw pk\"></span>peak {}</p>\n", format_bytes(f.peak_bytes));
  out += "<p class=\"legend\" id=\"peak-legend\">Job peak: ";
  const char* names[] = {"p0", "p1", "p2", "p3"};
  for (int i = 0; i < 4; ++i) {
    out += fmt::format("<span class=\"sw {}\"></span>", names[i]);
    if (i < 3) out += fmt::format("&lt; {} ", axis_bytes(kPeakBandLimits[static_cast<size_t>(i)]));
    else out += fmt::format("&#8805; {} ", axis_bytes(kPeakBandLimits[2]));
  }
  out += "<span class=\"sw f\"></span>failed <span class=\"sw attempt\"></span>earlier attempt, killed and rerun</p>\n";
  return out;
}

}  // namespace

std::string time_view_style() {
  std::string css = R"css(
.tv{display:flex;border:1px solid #ddd;margin-top:.3em}.tv .ax{flex:none;border-right:1px solid #ddd;background:#fff}
.tv .scroll{overflow-x:auto;flex:1 1 auto;min-width:0}.tv svg{display:block}
svg text{font-size:10px;fill:#555}.tl text{font-size:9px}
.grid{stroke:#eee}.lane{fill:#f6f6f6}.evlane{fill:#fbfbfb}
.used{fill:none;stroke:#2f6fb0;stroke-width:1.5}.area{fill:#2f6fb0;fill-opacity:.14}
.reserved{fill:none;stroke:#e08a00;stroke-width:1.3;stroke-dasharray:5 2}
.budget{stroke:#c00;stroke-width:1.3;stroke-dasharray:8 3}.bt{fill:#c00}.pt{fill:#1d4f80;font-weight:600}.pk{fill:#fff;stroke:#2f6fb0;stroke-width:2}
.job:hover,.attempt:hover{stroke:#000}.bl{pointer-events:none;fill:#111}.bl.w{fill:#fff}
.p0{fill:#b9d7ee}.p1{fill:#6aa6d8}.p2{fill:#f0a83c}.p3{fill:#c8331d}.f{fill:#888;stroke:#c00}
.attempt{fill:none;stroke:#c8331d;stroke-dasharray:2 1}
.legend{margin:.2em 0;color:#333}.sw{display:inline-block;width:14px;height:10px;margin:0 4px 0 12px;vertical-align:middle}
span.used{border-top:2px solid #2f6fb0;height:4px;background:#dde8f3}span.reserved{border-top:2px dashed #e08a00;height:0}
span.budget{border-top:2px dashed #c00;height:0}span.pk{width:7px;height:7px;border:2px solid #2f6fb0;border-radius:50%}
span.p0{background:#b9d7ee}span.p1{background:#6aa6d8}span.p2{background:#f0a83c}span.p3{background:#c8331d}
span.f{background:#888;border:1px solid #c00}span.attempt{border:1px dashed #c8331d;height:8px}
)css";
  for (const EventKind kind : all_event_kinds()) css += fmt::format(".k-{}{{fill:{}}}", name(kind), style_of(kind).colour);
  css += '\n';
  return css;
}

void append_time_view(std::string& out, const BuildRecord& b, const BuildFacts& f) {
  const Timeline t = layout_timeline(b);
  double t_end = std::max({t.end_s, f.wall_s, 1e-3});
  for (const auto& m : b.memory) t_end = std::max(t_end, m.t_s);
  for (const auto& e : b.events) t_end = std::max(t_end, e.t_s);
  const int lanes = std::max(t.lanes, 1);
  // About 6 px per bar on average when the lanes are full, within limits
  // a browser scrolls comfortably.
  const int width = std::clamp(static_cast<int>(6 * b.jobs.size() / static_cast<size_t>(lanes)), kMinPlotWidth,
                               kMaxPlotWidth);
  const Scale s{t_end, width};
  const std::vector<MemSample> reserved = reserved_series(b, t_end / width);

  out += "<h2>Memory and jobs over time</h2>\n";
  out += legends(f, !reserved.empty());
  std::string plots, labels;
  memory_chart(plots, labels, b, f, reserved, s);
  timeline(plots, labels, b, t, s);
  out += "<div class=\"tv\"><div class=\"ax\">\n";
  out += labels;
  out += "</div><div class=\"scroll\">\n";
  out += plots;
  out += "</div></div>\n<p class=\"meta\">One time axis for both: the memory chart lines up with the jobs running "
         "below it. One lane per concurrent slot, one bar per job (hover for details). Reserved memory is derived "
         "from the jobs' predictions and run times, since history does not record it (approximate: the governor "
         "releases a job's reservation once it is past its peak, and raises it for a job that overshoots).</p>\n";
}

}  // namespace memgate
