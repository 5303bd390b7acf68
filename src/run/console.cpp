#include "run/console.hpp"

#include <unistd.h>

#include <string>

#include <fmt/core.h>

#include "util/log.hpp"

namespace memgate {

void Console::start(bool quiet) {
  status_ = std::make_unique<StatusLine>(STDERR_FILENO, std::nullopt, quiet, colour_wanted(STDERR_FILENO));
}

void Console::update(const StatusSnapshot& snapshot, double t) {
  if (status_) status_->update(snapshot, t);
}

void Console::log_events(const Governor& gov) {
  const auto& events = gov.events();
  for (; events_seen_ < events.size(); ++events_seen_) {
    const GovEvent& e = events[events_seen_];
    if (e.kind == EventKind::overshoot) continue;
    std::string who;
    if (e.job >= 0) who = fmt::format(" job {} ({})", e.job, gov.job(e.job).key.identity);
    log::info("{}{}: {}", name(e.kind), who, e.reason);
  }
}

void Console::aborting(bool interrupted) {
  if (!status_) return;
  if (interrupted) status_->interrupted();
  else status_->clear();
}

void Console::finish() {
  if (status_) status_->finish();
}

}  // namespace memgate
