#include "report/status.hpp"

#include <fmt/core.h>
#include <sys/ioctl.h>

#include <cerrno>

namespace memgate {
namespace {

constexpr double kTtyInterval = 0.2;   // at most 5 redraws a second
constexpr double kPlainInterval = 10;  // off a TTY, a line at most every 10 s

std::string progress(const StatusSnapshot& s) {
  if (s.known_total > 0) return fmt::format("[{}/{}]", s.done, s.known_total);
  return fmt::format("[{}]", s.done);
}

std::string memory(const StatusSnapshot& s) {
  if (s.budget > 0) return format_bytes(s.used) + "/" + format_bytes(s.budget);
  return format_bytes(s.used) + " used";
}

std::string full_line(const StatusSnapshot& s) {
  std::string line = fmt::format(
      "memgate: {} {:.1f} obj/min, {} running, {} waiting for memory, {} frozen, {}", progress(s),
      s.objects_per_min, s.running, s.waiting_memory, s.frozen, memory(s));
  if (s.eta_s >= 0) line += ", ETA " + format_duration(s.eta_s);
  return line;
}

// The same facts in about half the columns, for narrow terminals.
std::string compact_line(const StatusSnapshot& s) {
  std::string line = fmt::format("memgate {} {:.1f}/min {} run {} mem-wait", progress(s),
                                 s.objects_per_min, s.running, s.waiting_memory);
  if (s.frozen > 0) line += fmt::format(" {} frozen", s.frozen);
  line += " " + memory(s);
  if (s.eta_s >= 0) line += " ETA " + format_duration(s.eta_s);
  return line;
}

struct winsize window_size(int fd) {
  struct winsize ws {};
  if (::ioctl(fd, TIOCGWINSZ, &ws) != 0) ws = {};
  return ws;
}

}  // namespace

std::string format_status(const StatusSnapshot& s, int width, bool tty) {
  std::string line = full_line(s);
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

StatusLine::StatusLine(int fd, std::optional<bool> tty, bool quiet)
    : fd_(fd), tty_(tty ? *tty : ::isatty(fd) == 1), quiet_(quiet) {
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
    out += fmt::format("\x1b" "7\x1b[{};1H\r\x1b[0m{}\x1b[K\x1b" "8", rows, text);
    return out;
  }
  if (pinned_rows_ > 0) {
    out += "\x1b" "7\x1b[r\x1b" "8";  // the terminal got too small to keep a row
    pinned_rows_ = 0;
  }
  out += "\r" + text + "\x1b[K";
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
