// What the user sees while the build runs: the status line at the bottom
// of the terminal (report/status.hpp), and one log line per governor
// event as it happens. Overshoots are routine: counted, and drawn in the
// report, not logged.
#pragma once

#include <cstddef>
#include <memory>

#include "governor/governor.hpp"
#include "report/status.hpp"

namespace memgate {

class Console {
 public:
  // The status line, once the build has started (none under --quiet on a
  // terminal that is not one: StatusLine decides).
  void start(bool quiet);
  bool showing() const { return status_ != nullptr; }
  void update(const StatusSnapshot& snapshot, double t);
  // Logs the governor's events since the last call.
  void log_events(const Governor& gov);
  // The line makes way for the abort's message; after ^C it also erases
  // what the terminal echoed.
  void aborting(bool interrupted);
  // Before the end summary: the line goes, the terminal's bottom row is
  // given back.
  void finish();

 private:
  std::unique_ptr<StatusLine> status_;
  std::size_t events_seen_ = 0;
};

}  // namespace memgate
