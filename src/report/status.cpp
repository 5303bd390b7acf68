#include "report/status.hpp"

#include <fmt/core.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace memgate {

double estimate_eta(const ProgressReference& ref, int done, double done_job_s, double running_job_s) {
  if (ref.jobs <= 0 || done >= ref.jobs || ref.wall_s <= 0) return -1;
  const double left_by_count = static_cast<double>(ref.jobs - done) / ref.jobs;
  if (ref.job_s <= 0) return ref.wall_s * left_by_count;
  double left_job_s = ref.job_s - done_job_s;
  // Jobs slower here than there (a cold cache): what is left, at the pace
  // of the jobs done here.
  if (left_job_s <= 0) left_job_s = done > 0 ? (ref.jobs - done) * (done_job_s / done) : ref.job_s * left_by_count;
  const double parallelism = std::max(1.0, ref.job_s / ref.wall_s);
  return std::max(0.0, left_job_s - running_job_s) / parallelism;
}
namespace {

constexpr double kTtyInterval = 0.2;   // at most 5 redraws a second
constexpr double kPlainInterval = 10;  // off a TTY, a line at most every 10 s

// The total is history's count of jobs in the last build of this command,
// raised to what this build has already seen; 0 when history knows none.
int total(const StatusSnapshot& s) {
  if (s.known_total <= 0) return 0;
  return std::max(s.known_total, s.done + s.running + s.waiting_memory + s.waiting_cpu + s.frozen);
}

std::string progress(const StatusSnapshot& s) {
  if (int n = total(s); n > 0) return fmt::format("[{}/{}]", s.done, n);
  return fmt::format("[{}]", s.done);
}

// "[=====>    ]": `width` columns between the brackets; "" without a total.
std::string bar(const StatusSnapshot& s, int width) {
  const int n = total(s);
  if (n <= 0) return "";
  const int filled = std::clamp(s.done * width / n, 0, width);
  std::string b = "[" + std::string(static_cast<size_t>(filled), '=');
  if (filled < width) b += '>' + std::string(static_cast<size_t>(width - filled - 1), ' ');
  return b + "] ";
}

std::string timing(const StatusSnapshot& s, const char* sep) {
  std::string t = format_duration(s.elapsed_s);
  if (s.eta_s >= 0) t += sep + std::string("ETA ") + format_duration(s.eta_s);
  return t;
}

std::string memory(const StatusSnapshot& s) {
  if (s.budget > 0) return format_bytes(s.used) + "/" + format_bytes(s.budget);
  return format_bytes(s.used) + " used";
}

// On a terminal the progress gets a bar; a log file gets the facts alone.
std::string full_line(const StatusSnapshot& s, bool with_bar) {
  return fmt::format("memgate: {} {}{}, {:.1f} obj/min, {} running, {} waiting for memory, {} frozen, {}",
                     progress(s), with_bar ? bar(s, 20) : "", timing(s, ", "), s.objects_per_min, s.running,
                     s.waiting_memory, s.frozen, memory(s));
}

// The same facts in 80 columns, most wanted first (cutting loses the end).
std::string compact_line(const StatusSnapshot& s) {
  std::string line = fmt::format("{} {}{} {:.1f}/min {} run {} mem-wait", progress(s), bar(s, 8), timing(s, " "),
                                 s.objects_per_min, s.running, s.waiting_memory);
  if (s.frozen > 0) line += fmt::format(" {} frozen", s.frozen);
  return line + " " + memory(s);
}

// The progress and its bar in bold green, the rest as the terminal has it.
std::string coloured(const std::string& text) {
  const size_t from = text.rfind("memgate: [", 0) == 0 ? std::strlen("memgate: ") : 0;
  if (text.compare(from, 1, "[") != 0) return text;
  size_t end = text.find("] ", from);
  if (end != std::string::npos && text.compare(end + 2, 1, "[") == 0) end = text.find("] ", end + 2);
  if (end == std::string::npos) return text;
  return text.substr(0, from) + "\x1b[1;32m" + text.substr(from, end + 1 - from) + "\x1b[0m" + text.substr(end + 1);
}

struct winsize window_size(int fd) {
  struct winsize ws {};
  if (::ioctl(fd, TIOCGWINSZ, &ws) != 0) ws = {};
  return ws;
}

}  // namespace

std::string format_status(const StatusSnapshot& s, int width, bool tty) {
  std::string line = full_line(s, tty);
  if (!tty || width <= 0) return line;
  const size_t room = width > 1 ? static_cast<size_t>(width - 1) : 1;
  if (line.size() <= room) return line;
  line = compact_line(s);
  if (line.size() > room) line.resize(room);  // ASCII only: cutting bytes cuts columns
  return line;
}

int terminal_width(int fd) {
  auto ws = window_size(fd);
  return ws.ws_col > 0 ? ws.ws_col : 80;
}

int terminal_rows(int fd) { return window_size(fd).ws_row; }

bool colour_wanted(int fd) {
  const char* no_colour = std::getenv("NO_COLOR");
  const char* term = std::getenv("TERM");
  if (no_colour && *no_colour) return false;
  if (term && std::strcmp(term, "dumb") == 0) return false;
  return ::isatty(fd) == 1;
}

StatusLine::StatusLine(int fd, std::optional<bool> tty, bool quiet, bool colour)
    : fd_(fd), tty_(tty ? *tty : ::isatty(fd) == 1), quiet_(quiet), colour_(colour) {
  if (tty_ && !quiet_) {
    log::set_sink([this](log::Level, std::string_view line) { on_log(line); });
    sink_installed_ = true;
  }
}

StatusLine::~StatusLine() { finish(); }

void StatusLine::write_out(std::string_view bytes) const {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd_, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return;  // a closed terminal must not stop the build
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
}

// The bytes that put `text` on the screen. In pinned mode the first draw
// (and a draw after the terminal changed height) reserves the bottom row:
// a newline makes room, the scroll region excludes the last row, and the
// cursor goes back where the build expects it.
std::string StatusLine::draw_sequence(const std::string& text) {
  const int rows = terminal_rows(fd_);
  std::string out;
  if (rows >= 3) {
    if (pinned_rows_ != rows) {
      out += fmt::format("\n\x1b" "7\x1b[1;{}r\x1b" "8\x1b[1A", rows - 1);
      pinned_rows_ = rows;
    }
    // Attributes reset so a colour the build left on does not paint the
    // status; DECRC restores the build's cursor and attributes.
    out += fmt::format("\x1b" "7\x1b[{};1H\r\x1b[0m{}\x1b[K\x1b" "8", rows, colour_ ? coloured(text) : text);
    return out;
  }
  if (pinned_rows_ > 0) {
    out += "\x1b" "7\x1b[r\x1b" "8";  // the terminal got too small to keep a row
    pinned_rows_ = 0;
  }
  out += "\r" + (colour_ ? coloured(text) : text) + "\x1b[K";
  return out;
}

std::string StatusLine::clear_sequence() const {
  if (pinned_rows_ > 0) return fmt::format("\x1b" "7\x1b[{};1H\x1b[2K\x1b" "8", pinned_rows_);
  return "\r\x1b[K";
}

void StatusLine::update(const StatusSnapshot& snapshot, double now_s) {
  if (quiet_) return;
  std::lock_guard lock(mu_);
  if (finished_) return;
  if (!first_update_) first_update_ = now_s;
  if (!tty_) {
    const double since = now_s - last_draw_.value_or(*first_update_);
    if (since < kPlainInterval) return;
    last_draw_ = now_s;
    write_out(format_status(snapshot, 0, false) + "\n");
    return;
  }
  if (last_draw_ && shown_ && now_s - *last_draw_ < kTtyInterval) return;
  std::string text = format_status(snapshot, terminal_width(fd_), true);
  if (shown_ && text == text_ && terminal_rows(fd_) == pinned_rows_) return;
  text_ = std::move(text);
  last_draw_ = now_s;
  write_out(draw_sequence(text_));
  shown_ = true;
}

void StatusLine::clear() {
  std::lock_guard lock(mu_);
  if (!tty_ || !shown_) return;
  write_out(clear_sequence());
  shown_ = false;
}

// At ^C the terminal has echoed "^C" after whatever the build was writing
// (ninja's own status line, say): that line is erased, so memgate's message
// starts a line of its own instead of being glued to it.
void StatusLine::interrupted() {
  std::lock_guard lock(mu_);
  if (!tty_ || quiet_) return;
  std::string out = shown_ ? clear_sequence() : "";
  shown_ = false;
  write_out(out + "\r\x1b[K");
}

// One write(2): the line can neither be split by the build's output nor
// leave the status half-drawn around it.
void StatusLine::on_log(std::string_view line) {
  std::lock_guard lock(mu_);
  if (!shown_ || pinned_rows_ > 0) {
    write_out(line);  // the pinned status lives outside the scroll region
    return;
  }
  std::string out = clear_sequence();
  out += line;
  out += draw_sequence(text_);
  write_out(out);
}

void StatusLine::finish() {
  std::lock_guard lock(mu_);
  if (finished_) return;
  finished_ = true;
  if (sink_installed_) {
    log::reset_sink();
    sink_installed_ = false;
  }
  if (!tty_) return;
  std::string out;
  if (shown_) out += clear_sequence();
  if (pinned_rows_ > 0) out += "\x1b" "7\x1b[r\x1b" "8";
  pinned_rows_ = 0;
  shown_ = false;
  if (!out.empty()) write_out(out);
}

}  // namespace memgate
