// Fake ports for the runner (run/runner_ports.hpp): job processes that
// report what the test sets and record what the runner did to them, and
// sockets, /proc and cgroups that are maps. Used by the runner's step
// tests (tests/unit/runner_steps_test.cpp) and its tick's micro-benchmark
// (bench/micro_scale.cpp).
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "run/job_exec.hpp"
#include "run/runner_ports.hpp"

namespace memgate {

// What the runner did to one job's processes.
struct FakeJobState {
  std::vector<std::string> dirs{"/fake/job"};  // what prepare_attempt hands the wrapper
  int prepared = 0, ended = 0, kills = 0, samples = 0;
  Sampling last_sampling = Sampling::exact;  // what the last sample() was asked for
  pid_t child = 0;
  bool joined = true;  // set_child's answer
  bool frozen = false;
  bool freezable = true;
  bool oom = false;
  JobMemory mem;
  std::vector<pid_t> tree{4242};
  std::function<void()> on_sample;  // e.g. time passing while it is read
};

class FakeJob final : public JobControl {
 public:
  explicit FakeJob(std::shared_ptr<FakeJobState> s) : s_(std::move(s)) {}
  std::vector<std::string> prepare_attempt() override {
    ++s_->prepared;
    return s_->dirs;
  }
  bool set_child(pid_t pid) override {
    s_->child = pid;
    return s_->joined;
  }
  JobMemory sample(Sampling how) override {
    ++s_->samples;
    s_->last_sampling = how;
    if (s_->on_sample) s_->on_sample();
    return s_->mem;
  }
  bool freeze(bool frozen) override {
    if (!s_->freezable) return false;
    s_->frozen = frozen;
    return true;
  }
  void kill() override { ++s_->kills; }
  bool oom_killed() const override { return s_->oom; }
  void end_attempt() override { ++s_->ended; }
  bool has_cgroup() const override { return true; }
  std::vector<pid_t> tree() const override { return s_->tree; }

 private:
  std::shared_ptr<FakeJobState> s_;
};

struct FakePorts final : RunnerPorts {
  std::map<ConnId, std::vector<Message>> sent;
  std::vector<ConnId> closed;
  std::map<JobId, std::shared_ptr<FakeJobState>> jobs;
  bool descends = true;
  bool alive = true;
  double cpu_s = 0;
  int idle_drops = 0;
  int build_reads = 0;  // build_processes calls: ungated scans
  std::vector<std::size_t> prepared_for;  // prepare_jobs' `want`, call by call
  std::vector<pid_t> build;
  MemoryView view;

  bool send(ConnId conn, const Message& m) override {
    sent[conn].push_back(m);
    return true;
  }
  void close(ConnId conn) override { closed.push_back(conn); }
  pid_t peer_pid(ConnId conn) const override { return static_cast<pid_t>(1000 + conn); }
  void drop_idle() override { ++idle_drops; }
  bool prepare_jobs(std::size_t want, double) override {
    prepared_for.push_back(want);
    return false;
  }
  std::unique_ptr<JobControl> start_job(JobId id) override {
    auto s = std::make_shared<FakeJobState>();
    jobs[id] = s;
    return std::make_unique<FakeJob>(s);
  }
  bool descends_from(pid_t, pid_t) const override { return descends; }
  bool exists(pid_t) const override { return alive; }
  double cpu_seconds(const std::vector<pid_t>&) const override { return cpu_s; }
  std::vector<pid_t> build_processes(pid_t) override {
    ++build_reads;
    return build;
  }
  MemoryView read_memory(Bytes) override { return view; }
};

}  // namespace memgate
