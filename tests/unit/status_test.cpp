#include "report/status.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "util/log.hpp"

using namespace memgate;

namespace {

StatusSnapshot sample() {
  StatusSnapshot s;
  s.elapsed_s = 170;
  s.done = 12;
  s.known_total = 40;
  s.running = 3;
  s.waiting_memory = 2;
  s.frozen = 0;
  s.used = 1946 * MiB;  // 1.90 GiB
  s.budget = 2560 * MiB;
  s.objects_per_min = 14.2;
  s.eta_s = 70;
  return s;
}

bool has_control_chars(const std::string& s) {
  return std::any_of(s.begin(), s.end(),
                     [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
}

size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t p = haystack.find(needle); p != std::string::npos; p = haystack.find(needle, p + 1)) ++n;
  return n;
}

// A pseudo-terminal whose slave plays memgate's stderr; the test reads
// what a terminal would receive from the master.
class Pty {
 public:
  Pty(int rows, int cols) {
    struct winsize ws {};
    ws.ws_row = static_cast<unsigned short>(rows);
    ws.ws_col = static_cast<unsigned short>(cols);
    if (::openpty(&master_, &slave_, nullptr, nullptr, &ws) != 0) return;
    struct termios t {};
    ::tcgetattr(slave_, &t);
    ::cfmakeraw(&t);  // bytes through unchanged: no "\n" -> "\r\n"
    ::tcsetattr(slave_, TCSANOW, &t);
  }
  ~Pty() {
    if (master_ >= 0) ::close(master_);
    if (slave_ >= 0) ::close(slave_);
  }
  bool ok() const { return master_ >= 0 && slave_ >= 0; }
  int slave() const { return slave_; }

  // Reads what has arrived until `needle` is in it (the pty delivers
  // asynchronously, so poll for it) or nothing more comes for 2 s.
  std::string read_until(const std::string& needle) {
    while (buffer_.find(needle) == std::string::npos) {
      struct pollfd p {master_, POLLIN, 0};
      if (::poll(&p, 1, 2000) <= 0) break;
      char chunk[4096];
      ssize_t n = ::read(master_, chunk, sizeof chunk);
      if (n <= 0) break;
      buffer_.append(chunk, static_cast<size_t>(n));
    }
    std::string out;
    out.swap(buffer_);
    return out;
  }

 private:
  int master_ = -1;
  int slave_ = -1;
  std::string buffer_;
};

}  // namespace

TEST(FormatStatus, PlainLineShowsEverythingTheContractNames) {
  EXPECT_EQ(format_status(sample(), 0, false),
            "memgate: [12/40] 2m50s, ETA 1m10s, 14.2 obj/min, 3 running, 2 waiting for memory, 0 frozen, "
            "1.90 GiB/2.50 GiB");
}

TEST(FormatStatus, UnknownTotalAndEtaAreLeftOut) {
  auto s = sample();
  s.known_total = 0;
  s.eta_s = -1;
  std::string line = format_status(s, 0, false);
  EXPECT_NE(line.find("[12] "), std::string::npos) << line;
  EXPECT_EQ(line.find("ETA"), std::string::npos) << line;
}

TEST(FormatStatus, NonTtyLineHasNoControlCharactersAndIsNeverCut) {
  auto s = sample();
  s.known_total = 123456;
  std::string line = format_status(s, 20, false);
  EXPECT_FALSE(has_control_chars(line)) << line;
  EXPECT_NE(line.find("ETA 1m10s"), std::string::npos) << line;
}

TEST(FormatStatus, TtyLineFitsTheWidthLeavingTheLastColumnFree) {
  for (int width : {10, 40, 60, 80, 100}) {
    std::string line = format_status(sample(), width, true);
    EXPECT_LE(line.size(), static_cast<size_t>(width - 1)) << width << ": " << line;
    EXPECT_FALSE(has_control_chars(line));
  }
  // Wide enough: the full line; a little narrower: the compact form, with
  // the progress and the memory still there.
  EXPECT_EQ(format_status(sample(), 200, true),
            "memgate: [12/40] [======>             ] 2m50s, ETA 1m10s, 14.2 obj/min, 3 running, "
            "2 waiting for memory, 0 frozen, 1.90 GiB/2.50 GiB");
  EXPECT_EQ(format_status(sample(), 80, true),
            "[12/40] [==>     ] 2m50s ETA 1m10s 14.2/min 3 run 2 mem-wait 1.90 GiB/2.50 GiB");
}

TEST(FormatStatus, TheTotalIsNeverBelowWhatTheBuildHasShown) {
  auto s = sample();
  s.known_total = 10;  // history's build was smaller
  EXPECT_NE(format_status(s, 0, false).find("[12/17]"), std::string::npos) << format_status(s, 0, false);
  s.done = s.known_total = 40;
  s.running = s.waiting_memory = 0;
  EXPECT_NE(format_status(s, 200, true).find("[40/40] [====================] "), std::string::npos);
}

TEST(StatusLine, PinsTheStatusToTheBottomRowOfATerminal) {
  Pty pty(24, 120);
  ASSERT_TRUE(pty.ok());
  StatusLine line(pty.slave(), std::nullopt, false);
  ASSERT_TRUE(line.tty());
  line.update(sample(), 0);
  std::string out = pty.read_until("\x1b[K\x1b" "8");
  EXPECT_TRUE(line.pinned());
  EXPECT_NE(out.find("\x1b[1;23r"), std::string::npos) << "scroll region above the status row";
  EXPECT_NE(out.find("\x1b[24;1H\r\x1b[0m" + format_status(sample(), 120, true) + "\x1b[K"), std::string::npos);

  line.finish();
  out = pty.read_until("\x1b[r");
  EXPECT_NE(out.find("\x1b[24;1H\x1b[2K"), std::string::npos) << "status row cleared";
  EXPECT_NE(out.find("\x1b[r"), std::string::npos) << "scroll region released";
}

TEST(StatusLine, RedrawsInPlaceAtMostFiveTimesASecond) {
  Pty pty(0, 0);  // a terminal that does not tell its size: in-place mode, 80 columns
  ASSERT_TRUE(pty.ok());
  StatusLine line(pty.slave(), true, false);
  auto s = sample();
  line.update(s, 10.0);
  std::string first = pty.read_until("\x1b[K");
  EXPECT_EQ(first, "\r" + format_status(s, 80, true) + "\x1b[K");
  EXPECT_FALSE(line.pinned());

  s.done = 13;
  line.update(s, 10.1);  // too soon: skipped
  s.done = 14;
  line.update(s, 10.25);
  std::string next = pty.read_until("\x1b[K");
  EXPECT_EQ(next, "\r" + format_status(s, 80, true) + "\x1b[K");
  EXPECT_EQ(next.find("[13/"), std::string::npos);
}

TEST(StatusLine, LogLinesArriveWholeBetweenClearAndRedraw) {
  Pty pty(0, 0);
  ASSERT_TRUE(pty.ok());
  StatusLine line(pty.slave(), true, false);
  line.update(sample(), 0);
  pty.read_until("\x1b[K");
  log::warn("job {} was requeued", "<a&b>");
  std::string text = format_status(sample(), 80, true);
  std::string out = pty.read_until(text + "\x1b[K");
  EXPECT_EQ(out, "\r\x1b[Kmemgate: warning: job <a&b> was requeued\n\r" + text + "\x1b[K");

  line.clear();
  EXPECT_EQ(pty.read_until("\x1b[K"), "\r\x1b[K");
}

TEST(StatusLine, ColourPaintsTheProgressAndBarOnly) {
  Pty pty(0, 0);
  ASSERT_TRUE(pty.ok());
  StatusLine line(pty.slave(), true, false, true);
  line.update(sample(), 0);
  std::string out = pty.read_until("\x1b[K");
  EXPECT_NE(out.find("\r\x1b[1;32m[12/40] [==>     ]\x1b[0m 2m50s ETA 1m10s"), std::string::npos) << out;
  line.finish();
}

TEST(StatusLine, InterruptErasesTheLineTheTerminalEchoedCtrlCOn) {
  Pty pty(0, 0);
  ASSERT_TRUE(pty.ok());
  StatusLine line(pty.slave(), true, false);
  line.update(sample(), 0);
  pty.read_until("\x1b[K");
  line.interrupted();
  EXPECT_EQ(pty.read_until("\x1b[K\r\x1b[K"), "\r\x1b[K\r\x1b[K");
  line.finish();
}

TEST(StatusLine, LogLinesInPinnedModeAreWrittenInOnePiece) {
  Pty pty(30, 100);
  ASSERT_TRUE(pty.ok());
  StatusLine line(pty.slave(), true, false);
  line.update(sample(), 0);
  pty.read_until("\x1b[K\x1b" "8");
  log::error("compiler {} vanished", "cc");
  EXPECT_EQ(pty.read_until("vanished\n"), "memgate: error: compiler cc vanished\n");
}

TEST(StatusLine, OffATerminalPrintsAPlainLineAtMostEveryTenSeconds) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_NONBLOCK), 0);
  {
    StatusLine line(fds[1], false, false);
    auto s = sample();
    for (int tick = 0; tick <= 70; ++tick) {  // 35 s of updates every 0.5 s
      s.done = tick;
      line.update(s, 100 + tick * 0.5);
    }
  }
  char buf[8192];
  ssize_t n = ::read(fds[0], buf, sizeof buf);
  ::close(fds[0]);
  ::close(fds[1]);
  ASSERT_GT(n, 0);
  std::string out(buf, static_cast<size_t>(n));
  EXPECT_EQ(count(out, "\n"), 3u) << out;  // at 10 s, 20 s and 30 s
  EXPECT_EQ(count(out, "memgate: ["), 3u) << out;
  EXPECT_NE(out.find("[20/40]"), std::string::npos) << out;
  std::string without_newlines = out;
  std::erase(without_newlines, '\n');
  EXPECT_FALSE(has_control_chars(without_newlines)) << out;
}

TEST(StatusLine, QuietPrintsNothing) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_NONBLOCK), 0);
  for (bool tty : {true, false}) {
    StatusLine line(fds[1], tty, true);
    for (int tick = 0; tick < 100; ++tick) line.update(sample(), tick);
    line.clear();
    line.finish();
  }
  char buf[64];
  EXPECT_EQ(::read(fds[0], buf, sizeof buf), -1);
  EXPECT_EQ(errno, EAGAIN);
  ::close(fds[0]);
  ::close(fds[1]);
}

TEST(EstimateEta, FromTheReferenceJobTimeAtItsParallelism) {
  ProgressReference ref{1000, 200.0, 50.0};  // 200 job-seconds in 50 s: 4 at once
  EXPECT_DOUBLE_EQ(estimate_eta(ref, 0, 0.0), 50.0);
  EXPECT_DOUBLE_EQ(estimate_eta(ref, 500, 100.0), 25.0);
  EXPECT_DOUBLE_EQ(estimate_eta(ref, 900, 40.0), 40.0) << "long jobs are left: time, not the count, decides";
  EXPECT_LT(estimate_eta(ref, 1000, 200.0), 0) << "no ETA once the count is complete";
  EXPECT_LT(estimate_eta(ref, 1200, 260.0), 0) << "nor past it";
  // Slower here than there: what is left, at this build's own pace.
  EXPECT_DOUBLE_EQ(estimate_eta(ref, 500, 300.0), 500 * 0.6 / 4);
  EXPECT_LT(estimate_eta(ProgressReference{}, 3, 1.0), 0) << "nothing known";
  EXPECT_DOUBLE_EQ(estimate_eta(ProgressReference{10, 0.0, 20.0}, 5, 0.0), 10.0) << "no job times: by the count";
}

TEST(EstimateEta, CountsDownWhileLongJobsRun) {
  ProgressReference ref{10, 400.0, 100.0};  // 4 at once
  const double at_start = estimate_eta(ref, 6, 80.0);
  EXPECT_DOUBLE_EQ(at_start, 80.0);
  EXPECT_DOUBLE_EQ(estimate_eta(ref, 6, 80.0, 120.0), 50.0) << "4 jobs have run 30 s each";
  EXPECT_DOUBLE_EQ(estimate_eta(ref, 6, 80.0, 400.0), 0.0) << "never below zero";
}
