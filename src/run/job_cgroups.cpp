#include "run/job_cgroups.hpp"

#include <fmt/core.h>

#include "util/log.hpp"

namespace memgate {

JobCgroups::JobCgroups(platform::Cgroup parent, Clock clock)
    : parent_(parent.with_open_dir()), clock_(clock), cpu_accounted_(parent_.cpu_s().has_value()) {}

Result<platform::Cgroup> JobCgroups::make() {
  return parent_.create_child(fmt::format("{}{}", kJobCgroupPrefix, ++made_));
}

Result<platform::Cgroup> JobCgroups::take() {
  if (ready_.empty()) return make();
  platform::Cgroup cg = std::move(ready_.front());
  ready_.pop_front();
  return cg;
}

void JobCgroups::retire(platform::Cgroup cg) { retired_.push_back(Spent{std::move(cg), 0}); }

bool JobCgroups::due(std::size_t want, double now) const {
  for (const Spent& s : retired_)
    if (s.retry_at <= now) return true;
  return ready_.size() < want && now >= make_again_at_;
}

// The retired ones first: each holds kernel memory, and every listing of
// the build's cgroup (the ungated scan) reads past it.
bool JobCgroups::tidy(std::size_t want, double budget_s) {
  const double start = clock_();
  double t = start;
  bool worked = false;
  auto time_left = [&] { return !worked || t - start < budget_s; };
  for (std::size_t n = retired_.size(); n > 0 && time_left(); --n) {
    Spent s = std::move(retired_.front());
    retired_.pop_front();
    if (s.retry_at > t) {
      retired_.push_back(std::move(s));
      continue;
    }
    auto st = s.cg.remove_now();
    worked = true;
    t = clock_();
    if (!st) {
      log::debug("job cgroup not removed yet: {}", st.error());
      s.retry_at = t + kRetry_s;
      retired_.push_back(std::move(s));
    }
  }
  while (ready_.size() < want && t >= make_again_at_ && time_left()) {
    auto cg = make();
    worked = true;
    t = clock_();
    if (!cg) {
      // A grant makes its own then, and says why if it cannot.
      log::debug("job cgroup not made ahead: {}", cg.error());
      make_again_at_ = t + kRetry_s;
      break;
    }
    ready_.push_back(std::move(*cg));
  }
  return due(want, t);
}

}  // namespace memgate
