// The live status of a running build, as the runner sees it each tick,
// and the line that shows it on stderr.
#pragma once

#include <unistd.h>

#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "util/log.hpp"
#include "util/size.hpp"

namespace memgate {

struct StatusSnapshot {
  double elapsed_s = 0;
  int done = 0;             // jobs finished
  int known_total = 0;      // from the last build of this command in this cwd; 0 = unknown
  int running = 0;          // running and not frozen
  int waiting_memory = 0;   // waiting, held back by memory
  int waiting_cpu = 0;      // waiting, held back by CPU slots only
  int frozen = 0;
  Bytes used = 0;           // build memory now
  Bytes budget = 0;
  double objects_per_min = 0;
  double eta_s = -1;        // < 0: unknown
};

// What the progress total and ETA are read against: the last complete,
// successful build of the same command in the same directory.
struct ProgressReference {
  int jobs = 0;       // its gated jobs; 0 = none known
  double job_s = 0;   // the sum of their durations
  double wall_s = 0;  // its wall time
};

// Seconds left: the reference's job time not yet matched by the jobs done
// here (`done_job_s`) and the time the running ones have run so far
// (`running_job_s`, so the ETA counts down while long jobs run), at the
// parallelism the reference ran at. -1 when nothing is known, and once
// `done` reaches the reference's count (past it the reference no longer
// says how much is left).
double estimate_eta(const ProgressReference& ref, int done, double done_job_s, double running_job_s = 0);

// The status as one line of text, without a newline and without any
// control character. `tty`: the line is for a terminal `width` columns
// wide (0 = unknown): it is shortened to fit width-1 columns (never the
// last column, which would make the terminal wrap), first by compact
// labels, then by cutting. Off a TTY the full line is returned whatever
// `width` says, because log files want whole words.
// `[done/total]` has a total when history knows the build (and then a bar
// on a terminal), then the elapsed time and the ETA:
//   memgate: [12/40] [======>             ] 2m50s, ETA 1m10s, 14.2 obj/min, 3 running, 2 waiting for memory, 0 frozen, 1.90 GiB/2.50 GiB
//   [12/40] [==>     ] 2m50s ETA 1m10s 14.2/min 3 run 2 mem-wait 1.90 GiB/2.50 GiB   (narrow terminals)
std::string format_status(const StatusSnapshot& s, int width, bool tty);

// Colour on `fd`: a terminal, NO_COLOR unset or empty, TERM not "dumb".
bool colour_wanted(int fd);

// The columns of the terminal on `fd` (TIOCGWINSZ), or 80 if unknown.
int terminal_width(int fd);
// The rows of the terminal on `fd`, or 0 if unknown.
int terminal_rows(int fd);

// Shows StatusSnapshots on stderr while the build writes to the same
// terminal.
//
// On a TTY with a known height the status is pinned to the bottom row:
// the rows above become the scroll region, so the build's own output,
// which reaches the terminal directly and unbuffered, scrolls above the
// status and is never overwritten or interleaved with it. Each redraw
// (save cursor, go to the bottom row, text, erase to end of line, restore
// cursor) is one write(2), so it cannot split a line the build writes.
// Where the height is unknown, the line is drawn in place at the cursor
// ("\r" + text + "\x1b[K"), and cleared around memgate's own messages.
// Redraws happen at most 5 times a second.
//
// Off a TTY one plain line is printed at most every 10 s (the first one
// 10 s after the first update, so short builds stay quiet).
//
// Quiet: nothing is ever printed; warnings and errors still go through
// util/log as usual.
//
// While a TTY status is active, a log sink is installed (util/log.hpp) so
// memgate's own messages are written whole and the status is redrawn
// after them; finish() (and the destructor) removes it. Thread-safe: the
// runner may update from one thread while others log.
class StatusLine {
 public:
  // `tty`: whether `fd` is a terminal; nullopt asks isatty(fd).
  // `colour`: the progress and bar in bold green (see colour_wanted).
  explicit StatusLine(int fd = STDERR_FILENO, std::optional<bool> tty = std::nullopt,
                      bool quiet = false, bool colour = false);
  ~StatusLine();
  StatusLine(const StatusLine&) = delete;
  StatusLine& operator=(const StatusLine&) = delete;

  // Called every runner tick. `now_s` is any monotonic clock in seconds
  // (injected so tests do not sleep).
  void update(const StatusSnapshot& snapshot, double now_s);
  // Takes the line off the screen; the next update() draws it again.
  // Call before memgate writes lines of its own without util/log.
  void clear();
  // Clear() for ^C: also erases the line at the cursor, where the terminal
  // echoed "^C" after the build's own unfinished line.
  void interrupted();
  // Clears the line, gives the bottom row back to the terminal and
  // uninstalls the log sink. Call before printing the end summary.
  // Idempotent; the destructor calls it.
  void finish();

  bool tty() const { return tty_; }
  bool pinned() const { return pinned_rows_ > 0; }

 private:
  void on_log(std::string_view line);
  std::string draw_sequence(const std::string& text);
  std::string clear_sequence() const;
  void write_out(std::string_view bytes) const;

  std::mutex mu_;
  int fd_;
  bool tty_;
  bool quiet_;
  bool colour_;
  bool finished_ = false;
  bool sink_installed_ = false;
  int pinned_rows_ = 0;        // the terminal height the scroll region was set for; 0 = in-place mode
  bool shown_ = false;         // the status is on the screen now
  std::string text_;           // the text last drawn (or to draw)
  std::optional<double> first_update_;
  std::optional<double> last_draw_;
};

}  // namespace memgate
