#include "run/live_jobs.hpp"

#include <algorithm>

#include "predict/profile.hpp"

namespace memgate {

void ConnectedJob::begin_attempt(double now) {
  attempt_start = now;
  next_sample_t = -1;
  profile.clear();
  profile.push_back(MemSample{0, 0, 0});
}

void ConnectedJob::end_attempt() {
  exec->end_attempt();
  killed_by_us = false;
  cpu_at_kill_s = 0;
  current = 0;
}

void ConnectedJob::add_sample(double t, Bytes bytes, double cpu_s) {
  if (profile.size() >= kMaxSamples) {
    interpolate_cpu_clock(profile);
    profile = downsample_profile(profile, kMaxSamples / 2);
  }
  profile.push_back(MemSample{t - attempt_start, bytes, cpu_s});
}

ConnectedJob* LiveJobs::find(ConnId conn) {
  auto it = by_conn_.find(conn);
  return it == by_conn_.end() ? nullptr : &it->second;
}

ConnectedJob* LiveJobs::by_job(JobId id) {
  auto it = conn_of_.find(id);
  return it == conn_of_.end() ? nullptr : find(it->second);
}

void LiveJobs::add(ConnectedJob job) {
  conn_of_[job.id] = job.conn;
  const ConnId conn = job.conn;
  by_conn_.emplace(conn, std::move(job));
}

void LiveJobs::erase(ConnId conn) {
  auto it = by_conn_.find(conn);
  if (it == by_conn_.end()) return;
  conn_of_.erase(it->second.id);
  by_conn_.erase(it);
}

void LiveJobs::sample(Governor& gov, const MemoryView& view, double t, const std::function<double()>& clock) {
  const Bytes limit = gov.effective_limit(view);
  const bool dense = limit <= 0 || static_cast<double>(view.build_used) >= kDenseAbove * static_cast<double>(limit);
  const std::vector<JobId> active = gov.active_jobs();  // in id order
  if (active.empty()) return;
  std::size_t visits = dense ? active.size() : (active.size() + kRoomyShare - 1) / kRoomyShare;
  auto i = dense ? std::size_t{0}
                 : static_cast<std::size_t>(std::upper_bound(active.begin(), active.end(), cursor_) - active.begin());
  for (; visits > 0; --visits, ++i) {
    const JobId id = active[i % active.size()];
    cursor_ = id;
    ConnectedJob* jp = by_job(id);
    if (!jp || jp->done) continue;
    ConnectedJob& job = *jp;
    if (!dense && t < job.next_sample_t) continue;
    job.next_sample_t = t + kRoomySample_s;
    JobMemory m = job.exec->sample(gov.wants_cpu(job.id) ? Sampling::quick
                                   : dense                ? Sampling::memory
                                                          : Sampling::sparse);
    job.current = m.current;
    gov.sample(job.id, m.current, m.peak, t, m.cpu_s);
    job.add_sample(t, m.current, m.cpu_fresh ? m.cpu_s : -1);
    if (!dense && clock && clock() - t >= kRoomyBudget_s) break;
  }
}

Bytes LiveJobs::current(const std::vector<JobId>& ids) {
  Bytes sum = 0;
  for (JobId id : ids)
    if (const ConnectedJob* job = by_job(id)) sum += job->current;
  return sum;
}

}  // namespace memgate
