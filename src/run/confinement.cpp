#include "run/confinement.hpp"

#include <unistd.h>

#include <algorithm>

#include <fmt/core.h>

#include "platform/cgroup_stale.hpp"
#include "platform/meminfo.hpp"
#include "platform/proc.hpp"
#include "run/job_cgroups.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"

namespace memgate {

namespace {

std::optional<Bytes> without_cache(std::optional<Bytes> usage, std::optional<Bytes> inactive) {
  if (!usage) return std::nullopt;
  return std::max<Bytes>(0, *usage - inactive.value_or(0));
}

}  // namespace

MemoryView to_view(const MemoryReadings& r) {
  MemoryView v;
  v.build_used = without_cache(r.build_usage, r.build_inactive).value_or(r.jobs_current);
  std::optional<Bytes> total = without_cache(r.capacity_usage, r.capacity_inactive);
  if (!total && r.mem_total && r.mem_available) total = *r.mem_total - *r.mem_available;
  v.outside = total ? std::max<Bytes>(0, *total - v.build_used) : 0;
  v.psi_full_avg10 = r.psi_full_avg10;
  v.psi_machine_wide = r.psi_machine_wide;
  return v;
}

Confinement Confinement::none(const std::string& why) {
  Confinement c;
  log::warn("{}: jobs are measured from /proc and the build is not confined", why);
  c.degraded_ = {fmt::format("no cgroups ({}): jobs measured from /proc", why), "build not confined",
                 "jobs paused with SIGSTOP"};
  return c;
}

Confinement Confinement::setup(const Capacity& cap, const Budget& budget, bool confine) {
  platform::CgroupLayout layout = platform::detect_cgroups();
  if (layout.version == platform::CgroupVersion::none) return none("no cgroup memory controller here");
  // What a memgate that died here left: thaw it so its build can end, then
  // remove it, before it confuses this run's accounting.
  for (const auto& stale : platform::find_stale_cgroups(layout)) {
    auto st = platform::clean_stale_cgroup(stale);
    if (st) log::info("removed the cgroups of memgate {}, which died ({} process(es) ended)", stale.pid,
                      stale.processes.size());
    else log::warn("cannot remove the cgroups of memgate {}, which died: {}", stale.pid, st.error());
  }
  auto cg = platform::Cgroup::create_under(layout, fmt::format("memgate-{}", ::getpid()));
  if (!cg) return none(cg.error());

  Confinement c;
  c.layout_ = layout;
  c.confine_ = *cg;
  c.owner_ = platform::OwnerLock::take(*cg);
  c.jobs_ = std::make_shared<JobCgroups>(*cg);
  if (cap.capacity_source == "cgroup" && !cap.cgroup_limit_source.empty())
    c.capacity_cg_ = platform::Cgroup::open(layout.version, cap.cgroup_limit_source);
  if (!c.confine_->can_freeze())
    c.degraded_.push_back(platform::freezer_forced_off() ? "jobs paused with SIGSTOP (MEMGATE_NO_FREEZER is set)"
                                                         : "jobs paused with SIGSTOP (no cgroup freezer)");
  if (auto leaf = c.confine_->create_child("build")) {
    c.build_leaf_ = *leaf;
    c.leaf_oom_base_ = leaf->oom_kills().value_or(0);
  }
  if (!confine) {
    c.degraded_.insert(c.degraded_.begin(), "build not confined (--no-confine)");
    return c;
  }
  Bytes limit = budget.capacity - budget.reserve;
  std::optional<Bytes> high = budget.budget < limit ? std::optional<Bytes>(budget.budget) : std::nullopt;
  if (auto st = c.confine_->set_memory_limit(limit, high); !st) {
    log::warn("cannot limit the build's cgroup ({}): the build is not confined", st.error());
    c.degraded_.insert(c.degraded_.begin(), "build not confined (its cgroup limit cannot be set)");
    return c;
  }
  c.confined_ = c.build_leaf_.has_value();
  return c;
}

// The build tool joins its leaf even under --no-confine (no limit there):
// it is measured, and its OOM kills are counted, either way.
std::vector<std::string> Confinement::build_dirs() const {
  std::vector<std::string> dirs;
  if (!build_leaf_) return dirs;
  dirs.push_back(build_leaf_->memory_dir());
  if (!build_leaf_->freezer_dir().empty() && build_leaf_->freezer_dir() != build_leaf_->memory_dir())
    dirs.push_back(build_leaf_->freezer_dir());
  return dirs;
}

MemoryReadings Confinement::read(Bytes jobs_current) const {
  MemoryReadings r;
  r.jobs_current = jobs_current;
  if (confine_) {
    r.build_usage = confine_->usage();
    r.build_inactive = confine_->inactive_file();
  }
  if (capacity_cg_) {
    r.capacity_usage = capacity_cg_->usage();
    r.capacity_inactive = capacity_cg_->inactive_file();
  }
  if (auto mi = platform::read_meminfo()) {
    r.mem_total = mi->total;
    r.mem_available = mi->available;
  }
  auto pressure = platform::build_memory_pressure(confine_ ? &*confine_ : nullptr);
  if (pressure.psi && pressure.psi->full) r.psi_full_avg10 = pressure.psi->full->avg10;
  r.psi_machine_wide = std::string_view(pressure.source) == "machine";
  return r;
}

void Confinement::watch(pid_t build_pid, const std::vector<pid_t>& outside_jobs) {
  if (!confined_ || lost_ || !confine_) return;
  std::string why;
  if (!path_exists(confine_->memory_dir())) {
    why = "the build's cgroup was removed";
  } else if (build_pid > 0) {
    bool inside = std::find(outside_jobs.begin(), outside_jobs.end(), build_pid) != outside_jobs.end();
    // An exiting build tool leaves its cgroup before it is reaped.
    auto st = platform::read_proc_stat(build_pid);
    if (!inside && st && st->state != 'Z' && st->state != 'X') why = "the build tool left its cgroup";
  }
  if (why.empty()) return;
  lost_ = true;
  degraded_.push_back(fmt::format("confinement lost mid-run ({}): the build's memory was no longer limited", why));
  log::warn("{}; the build is no longer held to its memory limit", why);
}

std::int64_t Confinement::ungated_oom_kills() const {
  if (!build_leaf_) return 0;
  return std::max<std::int64_t>(0, build_leaf_->oom_kills().value_or(leaf_oom_base_) - leaf_oom_base_);
}

std::optional<Bytes> Confinement::peak() const { return confine_ ? confine_->peak() : std::nullopt; }

std::vector<pid_t> Confinement::processes() const {
  return confine_ ? confine_->all_processes() : std::vector<pid_t>{};
}

std::vector<pid_t> Confinement::processes_outside_jobs() const {
  return confine_ ? confine_->all_processes_except(kJobCgroupPrefix) : std::vector<pid_t>{};
}

void Confinement::kill_all() const {
  if (confine_) (void)confine_->kill_all();
}

std::size_t Confinement::release_leftovers() const {
  if (!confine_) return 0;
  auto self = platform::Cgroup::self(layout_);
  std::vector<pid_t> left = confine_->all_processes();
  for (pid_t p : left) (void)self.add_process(p);
  return left.size();
}

void Confinement::remove(bool kill_first) {
  if (!confine_) return;
  if (kill_first) (void)confine_->kill_all();
  if (auto st = confine_->remove(); !st) log::warn("cannot remove the build's cgroup: {}", st.error());
  confine_.reset();
  build_leaf_.reset();
  owner_ = {};  // a cgroup that could not be removed is now a dead run's, for the next run to clean
}

}  // namespace memgate
