#include "report/html.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <ctime>
#include <iterator>
#include <numeric>

#include "report/summary.hpp"
#include "report/timeline.hpp"

namespace memgate {
namespace {

constexpr size_t kMaxMemoryPoints = 2000;
constexpr int kLabelWidth = 56;   // left margin for lane and row labels
constexpr int kAxisHeight = 18;
constexpr int kEventRow = 11;
constexpr int kChartWidth = 1000;
constexpr int kChartHeight = 220;
constexpr int kChartLeft = 70;
constexpr int kChartBottom = 20;

// The kinds of governor event the timeline has a row for; the rest share
// the last row.
constexpr std::array<EventKind, 4> kEventRows = {EventKind::freeze, EventKind::thaw, EventKind::requeue,
                                                 EventKind::oom_kill};

const char kStyle[] = R"css(
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em;color:#222;background:#fff}
h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.1em;margin:1.4em 0 .4em}
.meta{color:#555;margin:0}.meta code{word-break:break-all}
table{border-collapse:collapse}td,th{padding:2px 10px;text-align:left;border-bottom:1px solid #eee}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.verdict{font-weight:600;margin:.6em 0}
.scroll{overflow-x:auto;border:1px solid #ddd}
svg text{font-size:10px;fill:#555}.tl text{font-size:9px}
.grid{stroke:#eee}.lane{fill:#fafafa}
.job{fill:#4c78a8}.job:hover,.attempt:hover{stroke:#000}
.h1{fill:#5b8fbf}.h2{fill:#e3a33b}.h3{fill:#e0702c}.h4{fill:#c4311b}.f{fill:#888;stroke:#c00}
.attempt{fill:none;stroke:#c4311b;stroke-dasharray:2 1}
.ev{fill:#333}.e0{fill:#1f77b4}.e1{fill:#2ca02c}.e2{fill:#d62728}.e3{fill:#9467bd}.e4{fill:#8c564b}
.used{fill:none;stroke:#4c78a8;stroke-width:1.5}.area{fill:#4c78a8;fill-opacity:.15}
.budget{stroke:#c00;stroke-dasharray:6 3}.cap{stroke:#999;stroke-dasharray:2 3}
.key span{display:inline-block;width:10px;height:10px;margin:0 4px 0 12px;vertical-align:middle}
)css";

using Out = std::back_insert_iterator<std::string>;

// Maps seconds to integer pixels.
struct Scale {
  double t_end = 1;
  int left = 0;
  int width = 1;
  int x(double t) const {
    return left + static_cast<int>(std::lround(std::clamp(t / t_end, 0.0, 1.0) * width));
  }
};

int event_row(EventKind kind) {
  for (size_t i = 0; i < kEventRows.size(); ++i) {
    if (kind == kEventRows[i]) return static_cast<int>(i);
  }
  return static_cast<int>(kEventRows.size());
}

// "job hN" by peak against the build's heaviest job, "job f" if it failed.
const char* job_class(const TimelineBar& bar, const JobRecord& j, Bytes max_peak) {
  static const char* heat[] = {"job", "job h1", "job h2", "job h3", "job h4"};
  if (j.exit_status != 0) return "job f";
  if (max_peak <= 0) return heat[0];
  int level = static_cast<int>(4.999 * static_cast<double>(bar.peak_bytes) / static_cast<double>(max_peak));
  return heat[std::clamp(level, 0, 4)];
}

std::string local_time(double unix_s) {
  if (unix_s <= 0) return "unknown";
  std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

// A tick step that keeps labels at least ~90 px apart.
double tick_step(const Scale& s) {
  static const double steps[] = {1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400};
  for (double step : steps) {
    if (step / s.t_end * s.width >= 90) return step;
  }
  return 28800;
}

void append_head(std::string& out, const BuildRecord& b) {
  fmt::format_to(Out(out),
                 "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                 "<meta name=\"viewport\" content=\"width=device-width\">"
                 "<link rel=\"icon\" href=\"data:,\"><title>memgate report: {}</title><style>{}</style>"
                 "</head><body>\n<h1>memgate build report</h1>\n",
                 html_escape(shorten_middle(b.command, 80)), kStyle);
  fmt::format_to(Out(out),
                 "<p class=\"meta\">Command: <code>{}</code></p><p class=\"meta\">Directory: <code>{}</code></p>"
                 "<p class=\"meta\">Started {}, build {}, exit status {}</p>\n",
                 html_escape(b.command), html_escape(b.cwd), local_time(b.start_unix), b.id, b.exit_status);
}

void row(std::string& out, std::string_view label, const std::string& value) {
  fmt::format_to(Out(out), "<tr><th>{}</th><td class=\"n\">{}</td></tr>\n", label, html_escape(value));
}

std::string share(double fraction) {
  return fraction < 0 ? "not recorded" : fmt::format("{:.0f}% of the build", fraction * 100);
}

void append_summary(std::string& out, const BuildRecord& b, const BuildFacts& f) {
  out += "<h2>Summary</h2>\n<table>\n";
  row(out, "Wall time", format_duration(f.wall_s));
  row(out, "Jobs", f.failed > 0 ? fmt::format("{} ({} failed)", f.jobs, f.failed) : std::to_string(f.jobs));
  row(out, "Objects per minute", fmt::format("{:.1f}", f.objects_per_min));
  row(out, "Peak memory", format_bytes(f.peak));
  row(out, "Budget", f.budget > 0 ? format_bytes(f.budget) : "unknown");
  if (f.budget > 0) row(out, "Peak / budget", fmt::format("{:.0f}%", 100.0 * double(f.peak) / double(f.budget)));
  row(out, "Capacity", f.capacity > 0 ? format_bytes(f.capacity) : "unknown");
  row(out, "CPU slots", std::to_string(b.slots));
  row(out, "Time jobs waited for memory", format_duration(f.wait_memory_s));
  row(out, "Jobs held back by memory", std::to_string(f.jobs_waited));
  row(out, "Time jobs were frozen", format_duration(f.frozen_s));
  row(out, "Freezes", std::to_string(f.freezes));
  row(out, "Requeues", std::to_string(f.requeues));
  row(out, "Retries", std::to_string(f.retries));
  row(out, "OOM kills", std::to_string(f.oom_kills));
  row(out, "Ran alone (bigger than the budget)", std::to_string(f.ran_alone));
  row(out, "Memory-bound", share(f.memory_bound));
  row(out, "CPU-bound", share(f.cpu_bound));
  fmt::format_to(Out(out), "</table>\n<p class=\"verdict\">{}</p>\n", html_escape(f.verdict));
}

void append_memory_chart(std::string& out, const BuildRecord& b, const BuildFacts& f, double t_end) {
  const Bytes top = std::max({f.peak, f.budget, Bytes{1}}) * 21 / 20;
  const int plot_h = kChartHeight - kChartBottom - 10;
  const Scale s{t_end, kChartLeft, kChartWidth - kChartLeft - 10};
  auto y = [&](Bytes v) {
    return 10 + plot_h - static_cast<int>(std::lround(double(v) / double(top) * plot_h));
  };
  out += "<h2>Memory</h2>\n";
  fmt::format_to(Out(out),
                 "<svg class=\"mem\" viewBox=\"0 0 {0} {1}\" width=\"100%\" style=\"max-width:{0}px\" "
                 "role=\"img\" aria-label=\"build memory over time\">\n",
                 kChartWidth, kChartHeight);
  for (Bytes v : {Bytes{0}, top / 2, f.peak}) {
    fmt::format_to(Out(out), "<line class=\"grid\" x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\"/>"
                   "<text x=\"4\" y=\"{3}\">{4}</text>\n",
                   kChartLeft, kChartWidth - 10, y(v), y(v) + 3, format_bytes(v));
  }
  const std::vector<MemSample> series = downsample(b.memory, kMaxMemoryPoints);
  if (!series.empty()) {
    std::string points;
    for (const auto& m : series) fmt::format_to(Out(points), "{},{} ", s.x(m.t_s), y(m.bytes));
    points.pop_back();
    fmt::format_to(Out(out), "<polygon class=\"area\" points=\"{0},{1} {2} {3},{1}\"/>\n",
                   s.x(series.front().t_s), y(0), points, s.x(series.back().t_s));
    fmt::format_to(Out(out), "<polyline class=\"used\" points=\"{}\"><title>memory used by the build</title></polyline>\n",
                   points);
  }
  if (f.budget > 0) {
    fmt::format_to(Out(out), "<line class=\"budget\" x1=\"{0}\" x2=\"{1}\" y1=\"{2}\" y2=\"{2}\"><title>budget {3}</title></line>"
                   "<text x=\"{1}\" y=\"{4}\" text-anchor=\"end\">budget {3}</text>\n",
                   kChartLeft, kChartWidth - 10, y(f.budget), format_bytes(f.budget), y(f.budget) - 3);
  }
  for (const auto& e : b.events) {  // ticks along the bottom, coloured as in the timeline
    fmt::format_to(Out(out), "<rect class=\"ev e{}\" x=\"{}\" y=\"{}\" width=\"2\" height=\"6\"/>", event_row(e.kind),
                   s.x(e.t_s), kChartHeight - kChartBottom + 2);
  }
  fmt::format_to(Out(out), "<text x=\"{}\" y=\"{}\">0s</text><text x=\"{}\" y=\"{}\" text-anchor=\"end\">{}</text>\n</svg>\n",
                 kChartLeft, kChartHeight - 2, kChartWidth - 10, kChartHeight - 2, format_duration(t_end));
}

void append_axis(std::string& out, const Scale& s, int height) {
  const double step = tick_step(s);
  for (double t = 0; t <= s.t_end + 1e-9; t += step) {
    fmt::format_to(Out(out), "<line class=\"grid\" x1=\"{0}\" x2=\"{0}\" y1=\"{1}\" y2=\"{2}\"/>"
                   "<text x=\"{3}\" y=\"12\">{4}</text>\n",
                   s.x(t), kAxisHeight - 4, height, s.x(t) + 2, format_duration(t));
  }
}

void append_event_strip(std::string& out, const BuildRecord& b, const Scale& s) {
  static const char* labels[] = {"freeze", "thaw", "requeue", "OOM kill", "other"};
  for (int r = 0; r <= static_cast<int>(kEventRows.size()); ++r) {
    fmt::format_to(Out(out), "<text x=\"2\" y=\"{}\">{}</text>", kAxisHeight + r * kEventRow + 8, labels[r]);
  }
  out += '\n';
  for (const auto& e : b.events) {
    const int r = event_row(e.kind);
    std::string who;
    if (e.job >= 0 && static_cast<size_t>(e.job) < b.jobs.size()) who = b.jobs[static_cast<size_t>(e.job)].key.identity;
    fmt::format_to(Out(out), "<rect class=\"ev e{}\" x=\"{}\" y=\"{}\" width=\"3\" height=\"{}\"><title>{} at {}: {} {}</title></rect>\n",
                   r, s.x(e.t_s), kAxisHeight + r * kEventRow, kEventRow - 2, name(e.kind),
                   format_duration(e.t_s), html_escape(who), html_escape(e.reason));
  }
}

void append_bar(std::string& out, const BuildRecord& b, const TimelineBar& bar, const Scale& s,
                int y, int h, Bytes max_peak) {
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
  fmt::format_to(Out(out), "<rect class=\"{}\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"><title>{}</title></rect>\n",
                 bar.last ? job_class(bar, j, max_peak) : "attempt", x, y, w, h, html_escape(tip));
}

void append_timeline(std::string& out, const BuildRecord& b, const Timeline& t, double t_end) {
  const int lanes = std::max(t.lanes, 1);
  const int lane_h = lanes > 64 ? 8 : 14;
  // About 6 px per bar on average when the lanes are full, within limits
  // a browser scrolls comfortably.
  const int width = std::clamp(static_cast<int>(6 * b.jobs.size() / static_cast<size_t>(lanes)), 1000, 16000);
  const Scale s{t_end, kLabelWidth, width};
  const int strip = static_cast<int>(kEventRows.size() + 1) * kEventRow;
  const int top = kAxisHeight + strip + 6;
  const int height = top + lanes * lane_h + 4;
  Bytes max_peak = 0;
  for (const auto& j : b.jobs) max_peak = std::max(max_peak, j.peak_bytes);

  out += "<h2>Timeline</h2>\n<p class=\"key\">One lane per concurrent slot, one bar per job (hover for details). "
         "Peak memory: light<span style=\"background:#4c78a8\"></span><span style=\"background:#5b8fbf\"></span>"
         "<span style=\"background:#e3a33b\"></span><span style=\"background:#e0702c\"></span>"
         "<span style=\"background:#c4311b\"></span>heavy <span style=\"background:#888;border:1px solid #c00\"></span>failed "
         "<span style=\"border:1px dashed #c4311b\"></span>earlier attempt, killed and rerun</p>\n";
  fmt::format_to(Out(out), "<div class=\"scroll\"><svg class=\"tl\" width=\"{}\" height=\"{}\" data-jobs=\"{}\" data-lanes=\"{}\">\n",
                 kLabelWidth + width + 50, height, b.jobs.size(), t.lanes);
  append_axis(out, s, height);
  append_event_strip(out, b, s);
  const int label_every = lanes > 64 ? 8 : 1;
  for (int l = 0; l < lanes; ++l) {
    if (l % 2 == 1) fmt::format_to(Out(out), "<rect class=\"lane\" x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\"/>", kLabelWidth, top + l * lane_h, width, lane_h);
    if (l % label_every == 0) fmt::format_to(Out(out), "<text x=\"2\" y=\"{}\">slot {}</text>", top + l * lane_h + lane_h - 4, l + 1);
  }
  out += '\n';
  for (const auto& bar : t.bars) append_bar(out, b, bar, s, top + bar.lane * lane_h + 1, lane_h - 2, max_peak);
  out += "</svg></div>\n";
}

void append_heaviest(std::string& out, const BuildRecord& b) {
  const BuildFacts f = build_facts(b, 20);
  if (f.heaviest.empty()) return;
  out += "<h2>Heaviest jobs</h2>\n<table><tr><th>Job</th><th>Tool</th><th>Peak</th><th>Predicted</th>"
         "<th>Wall</th><th>CPU</th><th>Waited</th><th>Attempts</th></tr>\n";
  for (int i : f.heaviest) {
    const JobRecord& j = b.jobs[static_cast<size_t>(i)];
    fmt::format_to(Out(out), "<tr><td>{}</td><td>{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
                   "<td class=\"n\">{:.1f}s</td><td class=\"n\">{}</td><td class=\"n\">{}</td></tr>\n",
                   html_escape(j.key.identity), html_escape(j.key.tool), format_bytes(j.peak_bytes),
                   j.predicted.peak > 0 ? format_bytes(j.predicted.peak) : "-", format_duration(j.wall_s()),
                   j.cpu_s, format_duration(j.wait_s), j.attempts);
  }
  out += "</table>\n";
}

}  // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      case '\n': case '\t': out += c; break;
      default:
        // Control characters are not allowed in HTML text.
        out += (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) ? '?' : c;
    }
  }
  return out;
}

std::string render_html_report(const BuildRecord& b) {
  const BuildFacts facts = build_facts(b);
  const Timeline timeline = layout_timeline(b);
  double t_end = std::max({timeline.end_s, facts.wall_s, 1e-3});
  for (const auto& m : b.memory) t_end = std::max(t_end, m.t_s);
  for (const auto& e : b.events) t_end = std::max(t_end, e.t_s);

  std::string out;
  out.reserve(4096 + b.jobs.size() * 320 + b.events.size() * 200);
  append_head(out, b);
  append_summary(out, b, facts);
  append_memory_chart(out, b, facts, t_end);
  append_timeline(out, b, timeline, t_end);
  append_heaviest(out, b);
  out += "<p class=\"meta\">Generated by memgate " MEMGATE_VERSION ".</p>\n</body></html>\n";
  return out;
}

}  // namespace memgate
