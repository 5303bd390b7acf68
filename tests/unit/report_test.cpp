#include "report/html.hpp"

#include <unistd.h>

#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "report/files.hpp"
#include "support/synthetic.hpp"
#include "report/timeline.hpp"
#include "util/fs.hpp"

using namespace memgate;

namespace {

size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t p = haystack.find(needle); p != std::string::npos; p = haystack.find(needle, p + 1)) ++n;
  return n;
}

JobRecord job(const std::string& identity, double start, double end, Bytes peak) {
  JobRecord j;
  j.key.tool = "cc";
  j.key.identity = identity;
  j.start_s = start;
  j.end_s = end;
  j.peak_bytes = peak;
  j.attempt_log.push_back({start, end, Outcome::ok, peak});
  return j;
}

// Four jobs, one of which was requeued once and ran again; the governor
// froze, thawed, requeued and saw an OOM kill.
BuildRecord small_build() {
  BuildRecord b;
  b.command = "make -j4";
  b.cwd = "/src/x";
  b.start_unix = 1000;
  b.end_unix = 1030;
  b.budget = 2 * GiB;
  b.capacity = 3 * GiB;
  b.slots = 4;
  b.jobs.push_back(job("cc:a.o", 0, 10, 500 * MiB));
  b.jobs.push_back(job("cc:b.o", 0, 12, 700 * MiB));
  b.jobs.push_back(job("cc:c.o", 10, 20, 300 * MiB));
  JobRecord d = job("cc:d.o", 0, 25, 1500 * MiB);
  d.attempt_log = {{1, 5, Outcome::requeued, 1400 * MiB}, {12, 25, Outcome::ok, 1500 * MiB}};
  d.attempts = 2;
  b.jobs.push_back(d);
  for (int i = 0; i <= 30; ++i) b.memory.push_back({double(i), (200 + 40 * i) * MiB});
  b.events = {{3, EventKind::freeze, 3, "memory above 95%"}, {4, EventKind::thaw, 3, "memory below 88%"},
              {5, EventKind::requeue, 3, "memory ran short"}, {7, EventKind::oom_kill, 1, "kernel OOM killer"}};
  b.counters = {{Counter::memory_bound_ms, 20000}, {Counter::cpu_bound_ms, 1000}, {Counter::frozen, 1}, {Counter::requeued, 1}};
  return b;
}

}  // namespace

TEST(Timeline, LanesAreThePeakConcurrency) {
  BuildRecord b = small_build();
  Timeline t = layout_timeline(b);
  EXPECT_EQ(t.bars.size(), 5u);  // four jobs, one with two attempts
  EXPECT_EQ(t.lanes, 3);         // a, b and d's first attempt at once; c and d's rerun reuse lanes
  for (size_t i = 0; i < t.bars.size(); ++i) {
    for (size_t k = i + 1; k < t.bars.size(); ++k) {
      const auto &x = t.bars[i], &y = t.bars[k];
      if (x.lane == y.lane) {
        EXPECT_TRUE(x.end_s <= y.start_s || y.end_s <= x.start_s) << "overlap in a lane";
      }
    }
  }
  EXPECT_DOUBLE_EQ(t.end_s, 25);
}

TEST(Timeline, SequentialJobsShareOneLane) {
  BuildRecord b;
  for (int i = 0; i < 5; ++i) b.jobs.push_back(job("cc:" + std::to_string(i), i, i + 1, MiB));
  Timeline t = layout_timeline(b);
  EXPECT_EQ(t.lanes, 1);
}

TEST(Timeline, DownsampleKeepsPeaksAndOrder) {
  std::vector<MemSample> series;
  for (int i = 10000; i > 0; --i) series.push_back({double(i), (i == 7777 ? 99 : 1) * MiB});  // reversed
  auto d = downsample(series, 2000);
  EXPECT_LE(d.size(), 2000u);
  EXPECT_GE(d.size(), 1000u);
  for (size_t i = 1; i < d.size(); ++i) EXPECT_LE(d[i - 1].t_s, d[i].t_s);
  bool peak = false;
  for (const auto& m : d) peak = peak || m.bytes == 99 * MiB;
  EXPECT_TRUE(peak) << "the one-sample peak survives thinning";
}

TEST(HtmlReport, OneJobBarPerJobAndEarlierAttemptsApart) {
  std::string html = render_html_report(small_build());
  EXPECT_EQ(count(html, "<rect class=\"job"), 4u);
  EXPECT_EQ(count(html, "<rect class=\"attempt\""), 1u);
  EXPECT_NE(html.find("data-jobs=\"4\""), std::string::npos);
}

TEST(HtmlReport, EscapesIdentitiesEverywhere) {
  BuildRecord b = small_build();
  b.jobs[1].key.identity = "cc:<script>alert(\"x\")</script>&'.o";
  b.jobs[1].peak_bytes = 9 * GiB;  // heaviest, so it is in the tables too
  b.command = "make CFLAGS=\"<b>\"";
  std::string html = render_html_report(b);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<b>"), std::string::npos);
  EXPECT_NE(html.find("cc:&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;&#39;.o"), std::string::npos);
  EXPECT_NE(html.find("CFLAGS=&quot;&lt;b&gt;&quot;"), std::string::npos);
}

TEST(HtmlReport, IsSelfContained) {
  std::string html = render_html_report(make_synthetic_build({}));
  for (const char* external : {"http://", "https://", "src=", "@import", "url(", "<link rel=\"stylesheet\"", "<script"}) {
    EXPECT_EQ(html.find(external), std::string::npos) << external;
  }
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
}

TEST(HtmlReport, TooltipsGiveIdentityPeakCpuAndWait) {
  BuildRecord b = small_build();
  b.jobs[0].cpu_s = 9.5;
  b.jobs[0].wait_s = 4;
  b.jobs[1].predicted.peak = 640 * MiB;
  std::string html = render_html_report(b);
  EXPECT_NE(html.find("<title>cc:b.o\npeak 700 MiB (predicted 640 MiB), CPU"), std::string::npos);
  std::regex tip("<title>cc:a\\.o\npeak 500 MiB, CPU 9\\.5s, waited 4\\.0s, frozen 0\\.0s, ran 10\\.0s: ok</title>");
  EXPECT_TRUE(std::regex_search(html, tip));
}

TEST(HtmlReport, MarksEveryGovernorEvent) {
  std::string html = render_html_report(small_build());
  for (const char* kind : {"freeze at 3.0s", "thaw at 4.0s", "requeue at 5.0s", "oom_kill at 7.0s"}) {
    EXPECT_NE(html.find(std::string("<title>") + kind), std::string::npos) << kind;
  }
  for (const char* cls : {"ev k-freeze", "ev k-thaw", "ev k-requeue", "ev k-oom_kill"}) {
    EXPECT_NE(html.find(cls), std::string::npos) << cls;
  }
}

// distcc's local fallback and a job's overshoot have lanes like every
// other kind (the style table is checked when it compiles).
TEST(HtmlReport, FallbacksAndOvershootsHaveLanes) {
  BuildRecord b = small_build();
  b.events.push_back({8, EventKind::fallback, 0, "distcc compiled a.o on this machine after all"});
  b.events.push_back({9, EventKind::overshoot, 1, "uses 700 MiB, predicted 500 MiB"});
  std::string html = render_html_report(b);
  for (const char* kind : {"fallback", "overshoot"}) {
    EXPECT_NE(html.find(std::string("class=\"evl\" data-kind=\"") + kind), std::string::npos) << kind;
    EXPECT_NE(html.find(std::string("ev k-") + kind), std::string::npos) << kind;
  }
  EXPECT_EQ(count(html, "<rect class=\"evlane\""), 6u);
  EXPECT_LT(html.find("data-kind=\"oom_kill\""), html.find("data-kind=\"fallback\"")) << "lanes in their order";
}

TEST(HtmlReport, EventLanesOnlyForKindsThatHappened) {
  std::string html = render_html_report(small_build());
  EXPECT_EQ(count(html, "<rect class=\"evlane\""), 4u);
  for (const char* kind : {"freeze", "thaw", "requeue", "oom_kill"}) {
    EXPECT_NE(html.find(std::string("class=\"evl\" data-kind=\"") + kind), std::string::npos) << kind;
  }
  EXPECT_EQ(html.find("data-kind=\"kill\""), std::string::npos);
  BuildRecord quiet = small_build();
  quiet.events.clear();
  html = render_html_report(quiet);
  EXPECT_EQ(count(html, "evlane"), 1u) << "only the CSS rule";
  EXPECT_EQ(html.find("class=\"evl\""), std::string::npos);
}

namespace {

// The attributes of the first <svg class="CLS" ...> tag.
std::string svg_tag(const std::string& html, const std::string& cls) {
  size_t at = html.find("<svg class=\"" + cls + "\"");
  if (at == std::string::npos) return "";
  return html.substr(at, html.find('>', at) - at);
}

std::string attr(const std::string& tag, const std::string& name) {
  std::smatch m;
  if (!std::regex_search(tag, m, std::regex(" " + name + "=\"([^\"]*)\""))) return "";
  return m[1].str();
}

}  // namespace

TEST(HtmlReport, MemoryChartAndTimelineShareOneTimeAxis) {
  for (int jobs : {4, 1000}) {
    SyntheticOptions o;
    o.jobs = jobs;
    const std::string html = jobs == 4 ? render_html_report(small_build()) : render_html_report(make_synthetic_build(o));
    const std::string mem = svg_tag(html, "mem"), tl = svg_tag(html, "tl");
    ASSERT_FALSE(mem.empty());
    ASSERT_FALSE(tl.empty());
    for (const char* a : {"width", "data-x0", "data-px-per-s", "data-t-end"}) {
      EXPECT_FALSE(attr(mem, a).empty()) << a;
      EXPECT_EQ(attr(mem, a), attr(tl, a)) << a << " differs between the memory chart and the timeline";
    }
    // One scroll container holds both, the memory chart first.
    const size_t scroll = html.find("<div class=\"scroll\">");
    ASSERT_NE(scroll, std::string::npos);
    EXPECT_LT(scroll, html.find("<svg class=\"mem\""));
    EXPECT_LT(html.find("<svg class=\"mem\""), html.find("<svg class=\"tl\""));
    EXPECT_EQ(html.find("</div>", scroll), html.find("</svg>\n</div>", html.find("<svg class=\"tl\"")) + 7);
  }
}

TEST(HtmlReport, UsedReservedAndBudgetCurvesWithALegend) {
  BuildRecord b = small_build();
  for (auto& j : b.jobs) j.predicted.peak = j.peak_bytes;
  std::string html = render_html_report(b);
  EXPECT_NE(html.find("<polyline class=\"used\" points=\""), std::string::npos);
  EXPECT_NE(html.find("<polyline class=\"reserved\" points=\""), std::string::npos);
  EXPECT_NE(html.find("<line class=\"budget\""), std::string::npos);
  EXPECT_NE(html.find("id=\"mem-legend\""), std::string::npos);
  EXPECT_NE(html.find("<span class=\"sw reserved\"></span>"), std::string::npos);
  EXPECT_NE(html.find("id=\"peak-legend\""), std::string::npos);
  // Without predictions there is no reserved curve, and the legend says why.
  html = render_html_report(small_build());
  EXPECT_EQ(html.find("<polyline class=\"reserved\""), std::string::npos);
  EXPECT_NE(html.find("reserved: no predictions recorded"), std::string::npos);
}

TEST(HtmlReport, BarColoursAreAbsolute) {
  BuildRecord b;
  b.budget = GiB;
  for (int i = 0; i < 3; ++i) {
    JobRecord j = job("cc:small" + std::to_string(i) + ".o", i, i + 1, 64 * MiB);
    b.jobs.push_back(j);
  }
  std::string html = render_html_report(b);
  EXPECT_EQ(count(html, "<rect class=\"job p0\""), 3u) << "the heaviest of light jobs is still light";
  b.jobs[0].peak_bytes = b.jobs[0].attempt_log[0].peak_bytes = 5 * GiB;
  html = render_html_report(b);
  EXPECT_EQ(count(html, "<rect class=\"job p3\""), 1u);
  EXPECT_EQ(count(html, "<rect class=\"job p0\""), 2u);
}

TEST(HtmlReport, BarsThatFitCarryTheirSourceName) {
  BuildRecord b = small_build();
  b.jobs[0].key.stem = "alpha.cpp";
  std::string html = render_html_report(b);
  EXPECT_TRUE(std::regex_search(html, std::regex("<text class=\"bl\" x=\"\\d+\" y=\"\\d+\">alpha\\.cpp</text>")));
  EXPECT_NE(html.find(">c.o</text>"), std::string::npos) << "no stem: the identity's last component";
}

TEST(HtmlReport, FirstScreenSaysHowCloseWhatLimitedAndTheHeaviestJobs) {
  SyntheticOptions o;
  o.jobs = 1000;
  const BuildRecord b = make_synthetic_build(o);
  const std::string html = render_html_report(b);
  const size_t first = html.find("<div class=\"first\">");
  ASSERT_NE(first, std::string::npos);
  EXPECT_LT(first, html.find("<svg class=\"mem\"")) << "before the charts";
  EXPECT_NE(html.find("id=\"headroom\""), std::string::npos);
  EXPECT_NE(html.find("% of the budget</p>"), std::string::npos);
  EXPECT_NE(html.find("<p class=\"big\">Memory</p><p class=\"verdict\">memory-bound for 45% of the build"),
            std::string::npos);
  const size_t table = html.find("<table id=\"top-jobs\">");
  ASSERT_NE(table, std::string::npos);
  const std::string top = html.substr(table, html.find("</table>", table) - table);
  EXPECT_EQ(count(top, "<tr><td class=\"nm\""), 5u);
  Bytes heaviest = 0;
  for (const auto& j : b.jobs) heaviest = std::max(heaviest, j.peak_bytes);
  EXPECT_NE(top.find("<td class=\"n\">" + format_bytes(heaviest) + "</td>"), std::string::npos);
}

TEST(HtmlReport, ChartsMemoryAgainstTheBudgetWithAtMost2000Points) {
  BuildRecord b = small_build();
  b.memory.clear();
  for (int i = 0; i < 20000; ++i) b.memory.push_back({i * 0.001, (100 + i % 500) * MiB});
  std::string html = render_html_report(b);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(html, m, std::regex("<polyline class=\"used\" points=\"([^\"]*)\"")));
  EXPECT_LE(count(m[1].str(), ","), 2000u);
  EXPECT_GE(count(m[1].str(), ","), 100u);
  EXPECT_NE(html.find("<title>budget 2.00 GiB</title>"), std::string::npos);
}

TEST(HtmlReport, SummaryTableHasTheSummaryNumbers) {
  std::string html = render_html_report(small_build());
  EXPECT_NE(html.find("<th>Wall time</th><td class=\"n\">30.0s</td>"), std::string::npos);
  EXPECT_NE(html.find("<th>Requeues</th><td class=\"n\">1</td>"), std::string::npos);
  EXPECT_NE(html.find("memory-bound for 67% of the build"), std::string::npos);
  EXPECT_NE(html.find("<p class=\"big\">Memory</p>"), std::string::npos);
}

TEST(HtmlReport, SyntheticBuildOfAThousandJobsHasAThousandBars) {
  SyntheticOptions o;
  o.jobs = 1000;
  BuildRecord b = make_synthetic_build(o);
  std::string html = render_html_report(b);
  EXPECT_EQ(count(html, "<rect class=\"job"), 1000u);
  size_t earlier = 0;
  for (const auto& j : b.jobs) earlier += j.attempt_log.size() - 1;
  EXPECT_GT(earlier, 0u);
  EXPECT_EQ(count(html, "<rect class=\"attempt\""), earlier);
}

TEST(ReportFiles, WritesBothFilesAndNamesTheTargetOnFailure) {
  char dir_template[] = "/tmp/memgate-report-test.XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  BuildRecord b = small_build();
  ASSERT_TRUE(write_reports(b, dir + "/r.html", dir + "/t.json").ok());
  auto html = read_file(dir + "/r.html");
  auto trace = read_file(dir + "/t.json");
  ASSERT_TRUE(html && trace);
  EXPECT_EQ(*html, render_html_report(b));
  EXPECT_EQ(trace->front(), '{');

  Status st = write_reports(b, dir + "/missing/r.html", "");
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find(dir + "/missing/r.html: No such file or directory"), std::string::npos) << st.error();
  for (const char* f : {"/r.html", "/t.json"}) ::unlink((dir + f).c_str());
  EXPECT_EQ(::rmdir(dir.c_str()), 0) << "no temporary files left behind";
}
