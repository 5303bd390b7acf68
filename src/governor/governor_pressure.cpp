// Pressure: freezing the newest job when memory runs short, killing it
// to requeue when freezing is not enough, and thawing when there is room
// again, one action per step with cooldowns. Admission is in
// governor_admit.cpp; the rest of the governor in governor.cpp.
#include <fmt/core.h>

#include <algorithm>

#include "governor/governor.hpp"
#include "governor/governor_detail.hpp"
#include "util/size.hpp"

namespace memgate {

using namespace governor_detail;

namespace {
bool newer(const GovJob* a, const GovJob* b) {
  return !b || a->run.start_t > b->run.start_t || (a->run.start_t == b->run.start_t && a->id > b->id);
}
}  // namespace

GovJob* Governor::newest_to_freeze() {
  GovJob* best = nullptr;
  for (auto& [id, j] : active_)
    if (j->state == JobState::running && newer(j, best)) best = j;
  return best;
}

GovJob* Governor::newest_to_kill() {
  GovJob* best = nullptr;
  for (auto& [id, j] : active_) {
    bool alive = j->state == JobState::running || j->state == JobState::frozen;
    // A job out of reruns would fail for good: leave it to finish.
    if (alive && j->attempts < cfg_.max_attempts && newer(j, best)) best = j;
  }
  return best;
}

// Escalation, one action per step and each with its cooldown, so the
// controller never acts in storms on a single spike.
void Governor::relieve_pressure(const MemoryView& view, double now, Decisions& out) {
  const bool machine_full = view.build_used + view.outside >= scale(cfg_.hard_limit, cfg_.pressure.psi_machine_full_frac);
  if (view.psi_full_avg10 && (!view.psi_machine_wide || machine_full)) {
    if (*view.psi_full_avg10 >= cfg_.pressure.psi_full_freeze && !thrashing_) {
      thrashing_ = true;
      event(now, EventKind::pressure, -1,
            view.psi_machine_wide
                ? fmt::format("the machine's memory stalls at {:.1f}% (PSI full avg10) and it is nearly full",
                              *view.psi_full_avg10)
                : fmt::format("the build's memory stalls at {:.1f}% (PSI full avg10 of its cgroup)",
                              *view.psi_full_avg10));
    } else if (*view.psi_full_avg10 <= cfg_.pressure.psi_full_clear) {
      thrashing_ = false;
    }
  } else {
    thrashing_ = false;
  }

  Bytes limit = effective_limit(view);
  Bytes used = view.build_used;
  bool dying = !by_state(JobState::killing).empty();
  const int frozen = static_cast<int>(by_state(JobState::frozen).size());
  int alive = unfrozen_running() + frozen;
  if (frozen > 0) freeze_level_ = std::min(freeze_level_, used);

  if (used >= scale(limit, cfg_.pressure.kill_frac) && !dying && alive >= 2 && now - last_kill_t_ >= cfg_.pressure.kill_cooldown_s) {
    if (GovJob* v = newest_to_kill()) {
      v->state = JobState::killing;
      last_kill_t_ = now;
      event(now, EventKind::kill, v->id,
            fmt::format("build uses {} of {}: killing the newest job to requeue it", format_bytes(used),
                        format_bytes(limit)));
      out.kill.push_back(v->id);
      return;
    }
  }
  if (GovJob* t = outgrown_room(view, now);
      t && unfrozen_running() >= 2 && now - last_freeze_t_ >= cfg_.pressure.freeze_cooldown_s) {
    return freeze(*t, now, used,
                  fmt::format("it grew to {}, the edge of the {} left beside the other jobs' reservations",
                              format_bytes(t->run.current), format_bytes(std::max<Bytes>(0, room_beside(*t, view, now)))),
                  out);
  }
  bool over = used >= scale(limit, cfg_.pressure.freeze_frac);
  // Freezing stops growth; it gives nothing back. With a job frozen
  // already, another is frozen only if memory grows again: past the least
  // it has been since the last freeze. At a level that holds, each further
  // freeze only idled a core (plan's simulator: two forward kernels
  // frozen at a steady 92% for 51 s, one at its peak and about to fall,
  // the other past its own).
  if (over && !thrashing_ && frozen > 0 && used <= freeze_level_ + scale(limit, kFreezeRegrowth)) over = false;
  double cooldown = over ? cfg_.pressure.freeze_cooldown_s : cfg_.pressure.psi_freeze_cooldown_s;
  if ((over || thrashing_) && unfrozen_running() >= 2 && now - last_freeze_t_ >= cooldown) {
    return freeze(*newest_to_freeze(), now, used,
                  thrashing_ ? std::string("memory is thrashing")
                             : fmt::format("build uses {} of {}", format_bytes(used), format_bytes(limit)),
                  out);
  }
  try_thaw(view, now, out);
}

void Governor::freeze(GovJob& v, double now, Bytes used, std::string reason, Decisions& out) {
  v.state = JobState::frozen;
  tell(JobFact::of(JobFact::Kind::frozen, v.id, now));
  last_freeze_t_ = now;
  freeze_level_ = used;
  low_since_ = -1;
  count(Counter::frozen);
  event(now, EventKind::freeze, v.id, std::move(reason));
  out.freeze.push_back(v.id);
}

Bytes Governor::room_beside(const GovJob& j, const MemoryView& view, double now) const {
  Bytes others = 0;
  for (const auto& [id, r] : active_)
    if (r != &j) others += reservation(*r, now);
  return effective_limit(view) - overhead(view) - others;
}

GovJob* Governor::outgrown_room(const MemoryView& view, double now) {
  for (const auto& [id, t] : active_) {
    if (!t->run.in_room || t->state != JobState::running) continue;
    const Bytes room = room_beside(*t, view, now);
    if (past_own_peak(*t, now) || reservation(*t, now) <= room) {
      t->run.in_room = false;  // its own peak is behind it, or its guess fits: a job like any other
      return nullptr;
    }
    return t->run.current + scale(effective_limit(view), kRoomSlack) >= room ? t : nullptr;
  }
  return nullptr;
}

bool Governor::try_thaw(const MemoryView& view, double now, Decisions& out) {
  std::vector<GovJob*> frozen = by_state(JobState::frozen);
  if (frozen.empty()) return false;
  GovJob* oldest = *std::min_element(frozen.begin(), frozen.end(), [](const GovJob* a, const GovJob* b) {
    return a->run.start_t < b->run.start_t || (a->run.start_t == b->run.start_t && a->id < b->id);
  });
  // Never leave the build with nothing able to move.
  bool must = unfrozen_running() == 0 && by_state(JobState::killing).empty();
  Bytes growth = std::max<Bytes>(0, reservation(*oldest, now) - oldest->run.current);
  bool low = !thrashing_ && view.build_used + growth <= scale(effective_limit(view), cfg_.pressure.thaw_frac);
  // A room start still at its room's edge would only be frozen again.
  if (oldest->run.in_room && oldest->run.current + scale(effective_limit(view), kRoomSlack) >= room_beside(*oldest, view, now))
    low = false;
  if (!low) low_since_ = -1;
  else if (low_since_ < 0) low_since_ = now;
  bool settled = low && now - low_since_ >= cfg_.pressure.thaw_hold_s && now - last_thaw_t_ >= cfg_.pressure.thaw_cooldown_s;
  if (!must && !settled) return false;
  oldest->state = JobState::running;
  tell(JobFact::of(JobFact::Kind::thawed, oldest->id, now));
  last_thaw_t_ = now;
  count(Counter::thawed);
  event(now, EventKind::thaw, oldest->id, must ? "no other job is running" : "memory is back");
  out.thaw.push_back(oldest->id);
  return true;
}

}  // namespace memgate
