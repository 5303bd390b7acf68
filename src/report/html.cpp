#include "report/html.hpp"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <ctime>
#include <iterator>

#include "report/html_time.hpp"
#include "report/summary.hpp"
#include "report/timeline.hpp"

namespace memgate {
namespace {

const char kStyle[] = R"css(
body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",sans-serif;margin:1.5em;color:#222;background:#fff}
h1{font-size:1.4em;margin:0 0 .2em}h2{font-size:1.1em;margin:1.2em 0 .3em}h3{font-size:.85em;margin:0 0 .3em;color:#666;font-weight:600;text-transform:uppercase;letter-spacing:.04em}
.meta{color:#555;margin:0}.meta code{word-break:break-all}
table{border-collapse:collapse}td,th{padding:2px 10px;text-align:left;border-bottom:1px solid #eee}
td.n{text-align:right;font-variant-numeric:tabular-nums}
.first{display:grid;grid-template-columns:repeat(3,minmax(0,1fr)) minmax(0,2fr);gap:12px;margin-top:.8em}
.card{border:1px solid #ddd;border-radius:6px;padding:8px 12px}.card p{margin:.2em 0}
.big{font-size:1.35em;font-weight:600}.verdict{font-weight:400;color:#333}
.gauge{position:relative;height:10px;background:#eee;border-radius:5px;margin:.4em 0;overflow:hidden}
.gauge span{position:absolute;left:0;top:0;bottom:0;border-radius:5px}.gauge .lo{background:#4a9d4a}.gauge .mid{background:#e0a030}.gauge .hi{background:#c8331d}
#top-jobs{font-size:13px}#top-jobs td,#top-jobs th{padding:1px 6px}#top-jobs .nm{max-width:18em;overflow:hidden;text-overflow:ellipsis;white-space:nowrap}
)css";

using Out = std::back_insert_iterator<std::string>;

std::string local_time(double unix_s) {
  if (unix_s <= 0) return "unknown";
  std::time_t t = static_cast<std::time_t>(unix_s);
  std::tm tm{};
  localtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
  return buf;
}

void append_head(std::string& out, const BuildRecord& b) {
  fmt::format_to(Out(out),
                 "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                 "<meta name=\"viewport\" content=\"width=device-width\">"
                 "<link rel=\"icon\" href=\"data:,\"><title>memgate report: {}</title><style>{}{}</style>"
                 "</head><body>\n<h1>memgate build report</h1>\n",
                 html_escape(shorten_middle(b.command, 80)), kStyle, time_view_style());
  fmt::format_to(Out(out),
                 "<p class=\"meta\"><code>{}</code> in <code>{}</code></p>"
                 "<p class=\"meta\">Started {}, build {}, exit status {}</p>\n",
                 html_escape(b.command), html_escape(b.cwd), local_time(b.start_unix), b.id, b.exit_status);
}

// How close: the peak against the budget, as words and a gauge.
void headroom_card(std::string& out, const BuildFacts& f) {
  out += "<div class=\"card\" id=\"headroom\"><h3>How close to the budget</h3>";
  if (f.budget <= 0) {
    fmt::format_to(Out(out), "<p class=\"big\">Peak {}</p><p>budget not recorded</p></div>\n", format_bytes(f.peak_bytes));
    return;
  }
  const double ratio = double(f.peak_bytes) / double(f.budget);
  const char* level = ratio > 0.95 ? "hi" : ratio > 0.8 ? "mid" : "lo";  // gauge colour
  fmt::format_to(Out(out),
                 "<p class=\"big\">{:.0f}% of the budget</p>"
                 "<div class=\"gauge\" title=\"peak / budget\"><span class=\"{}\" style=\"width:{:.1f}%\"></span></div>"
                 "<p>peak {} of {} budget",
                 100 * ratio, level, std::min(100.0, 100 * ratio), format_bytes(f.peak_bytes), format_bytes(f.budget));
  if (f.capacity > 0) fmt::format_to(Out(out), " ({} machine)", format_bytes(f.capacity));
  out += "</p></div>\n";
}

// What limited the build: the summary's verdict, and what memgate did.
void limit_card(std::string& out, const BuildFacts& f) {
  const bool mem = f.memory_bound >= kBoundThreshold, cpu = f.cpu_bound >= kBoundThreshold;
  const char* headline = f.job_count == 0                                  ? "Nothing gated"
                         : f.memory_bound < 0 && f.cpu_bound < 0    ? "Not recorded"
                         : mem && cpu                               ? "Memory and CPU"
                         : mem                                      ? "Memory"
                         : cpu                                      ? "CPU"
                                                                    : "The build's own parallelism";
  fmt::format_to(Out(out), "<div class=\"card\" id=\"limit\"><h3>What limited the build</h3><p class=\"big\">{}</p>"
                 "<p class=\"verdict\">{}</p>", headline, html_escape(f.verdict));
  std::vector<std::string> acted;
  auto add = [&](std::int64_t n, const char* one, const char* many) {
    if (n > 0) acted.push_back(fmt::format("{} {}", n, n == 1 ? one : many));
  };
  add(f.freezes, "freeze", "freezes");
  add(f.requeues, "requeue", "requeues");
  add(f.retries, "retry", "retries");
  add(f.oom_kills, "OOM kill", "OOM kills");
  add(f.ran_alone, "job run alone", "jobs run alone");
  if (f.jobs_waited > 0) acted.push_back(fmt::format("{} jobs held back by memory", f.jobs_waited));
  if (!acted.empty()) {
    std::string joined;
    for (const auto& a : acted) joined += (joined.empty() ? "" : ", ") + a;
    fmt::format_to(Out(out), "<p>memgate: {}</p>", joined);
  }
  out += "</div>\n";
}

void totals_card(std::string& out, const BuildRecord& b, const BuildFacts& f) {
  fmt::format_to(Out(out), "<div class=\"card\" id=\"totals\"><h3>Build</h3><p class=\"big\">{}</p><p>{} jobs",
                 format_duration(f.wall_s), f.job_count);
  if (f.failed > 0) fmt::format_to(Out(out), " ({} failed)", f.failed);
  fmt::format_to(Out(out), ", {:.1f} objects/min, {} CPU slots</p></div>\n", f.objects_per_min, b.slots);
}

// The five heaviest jobs by peak, with how long each ran.
void top_jobs_card(std::string& out, const BuildRecord& b, const BuildFacts& f) {
  out += "<div class=\"card\" id=\"top\"><h3>Heaviest jobs</h3>";
  if (f.heaviest.empty()) {
    out += "<p>no jobs</p></div>\n";
    return;
  }
  out += "<table id=\"top-jobs\"><tr><th>Job</th><th>Peak</th><th>Predicted</th><th>Ran</th></tr>\n";
  for (int i : f.heaviest) {
    const JobRecord& j = b.jobs[static_cast<size_t>(i)];
    fmt::format_to(Out(out), "<tr><td class=\"nm\" title=\"{}\">{}</td><td class=\"n\">{}</td><td class=\"n\">{}</td>"
                   "<td class=\"n\">{}</td></tr>\n",
                   html_escape(j.key.identity), html_escape(short_name(j)), format_bytes(j.peak_bytes),
                   j.predicted.peak > 0 ? format_bytes(j.predicted.peak) : "-", format_duration(j.wall_s()));
  }
  out += "</table></div>\n";
}

// The first screen: how close, what limited the build, which jobs were heaviest.
void append_first_screen(std::string& out, const BuildRecord& b, const BuildFacts& f) {
  out += "<div class=\"first\">\n";
  headroom_card(out, f);
  limit_card(out, f);
  totals_card(out, b, f);
  top_jobs_card(out, b, f);
  out += "</div>\n";
}

void row(std::string& out, std::string_view label, const std::string& value) {
  fmt::format_to(Out(out), "<tr><th>{}</th><td class=\"n\">{}</td></tr>\n", label, html_escape(value));
}

std::string share(double fraction) {
  return fraction < 0 ? "not recorded" : fmt::format("{:.0f}% of the build", fraction * 100);
}

void append_summary(std::string& out, const BuildRecord& b, const BuildFacts& f) {
  out += "<h2>Details</h2>\n<table id=\"summary\">\n";
  row(out, "Wall time", format_duration(f.wall_s));
  row(out, "Jobs", f.failed > 0 ? fmt::format("{} ({} failed)", f.job_count, f.failed) : std::to_string(f.job_count));
  row(out, "Objects per minute", fmt::format("{:.1f}", f.objects_per_min));
  row(out, "Peak memory", format_bytes(f.peak_bytes));
  row(out, "Budget", f.budget > 0 ? format_bytes(f.budget) : "unknown");
  if (f.budget > 0) row(out, "Peak / budget", fmt::format("{:.0f}%", 100.0 * double(f.peak_bytes) / double(f.budget)));
  row(out, "Capacity", f.capacity > 0 ? format_bytes(f.capacity) : "unknown");
  row(out, "CPU slots", std::to_string(b.slots));
  row(out, "Time jobs waited for memory", format_duration(f.wait_s));
  row(out, "Jobs held back by memory", std::to_string(f.jobs_waited));
  row(out, "Time jobs were frozen", format_duration(f.frozen_s));
  row(out, "Freezes", std::to_string(f.freezes));
  row(out, "Requeues", std::to_string(f.requeues));
  row(out, "Retries", std::to_string(f.retries));
  row(out, "OOM kills", std::to_string(f.oom_kills));
  row(out, "Ran alone (bigger than the budget)", std::to_string(f.ran_alone));
  row(out, "Reservation released past peaks",
      f.released_gib_s < 0 ? std::string("not recorded") : fmt::format("{:.1f} GiB·s", f.released_gib_s));
  row(out, "Jobs started as others' memory fell",
      f.timed_starts < 0 ? std::string("not recorded") : std::to_string(f.timed_starts));
  row(out, "Guesses started in the room beside others' tails",
      f.room_starts < 0 ? std::string("not recorded") : std::to_string(f.room_starts));
  row(out, "Memory-bound", share(f.memory_bound));
  row(out, "CPU-bound", share(f.cpu_bound));
  out += "</table>\n";
}

void append_heaviest(std::string& out, const BuildRecord& b) {
  const BuildFacts f = build_facts(b, 20);
  if (f.heaviest.empty()) return;
  out += "<h2>Heaviest jobs</h2>\n<table id=\"heaviest\"><tr><th>Job</th><th>Tool</th><th>Peak</th><th>Predicted</th>"
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
  const BuildFacts facts = build_facts(b, 5);
  std::string out;
  out.reserve(8192 + b.jobs.size() * 360 + b.events.size() * 200);
  append_head(out, b);
  append_first_screen(out, b, facts);
  append_time_view(out, b, facts);
  append_summary(out, b, facts);
  append_heaviest(out, b);
  out += "<p class=\"meta\">Generated by memgate " MEMGATE_VERSION ".</p>\n</body></html>\n";
  return out;
}

}  // namespace memgate
