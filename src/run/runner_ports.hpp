// What the runner's job steps (runner_jobs.cpp) need of the world, behind
// two narrow interfaces so the steps run in unit tests with fakes: the
// wrappers' connections, starting a job's OS side (JobControl; JobExec in
// a real run), and the build's processes and memory. live_ports() is the
// real one, over the JobServer and the Confinement.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "core/job.hpp"
#include "governor/governor.hpp"
#include "run/job_exec.hpp"
#include "run/job_server.hpp"
#include "wrap/protocol.hpp"

namespace memgate {

class Confinement;

class RunnerPorts {
 public:
  virtual ~RunnerPorts() = default;
  // The wrappers (JobServer).
  virtual bool send(ConnId conn, const Message& m) = 0;
  virtual void close(ConnId conn) = 0;
  virtual pid_t peer_pid(ConnId conn) const = 0;
  virtual void drop_idle() = 0;
  // Process start: the OS side of a new job.
  virtual std::unique_ptr<JobControl> start_job(JobId id) = 0;
  // Idle work for about `budget_s`: the OS side of the next `want` grants
  // made ready, and that of ended attempts removed (JobCgroups::tidy).
  // Returns whether more is due.
  virtual bool prepare_jobs(std::size_t want, double budget_s) = 0;
  // `pid` lies below `ancestor` (the kernel-vouched wrapper).
  virtual bool descends_from(pid_t pid, pid_t ancestor) const = 0;
  // `pid` names a process (a zombie too) right now.
  virtual bool exists(pid_t pid) const = 0;
  // CPU time `pids` have used so far, in seconds.
  virtual double cpu_seconds(const std::vector<pid_t>& pids) const = 0;
  // Cgroup reads: the build's processes outside every job's cgroup
  // (`build_pid` > 0: the build tool, still running, to watch and fall back
  // on), and its memory now.
  virtual std::vector<pid_t> build_processes(pid_t build_pid) = 0;
  virtual MemoryView read_memory(Bytes jobs_current) = 0;
};

std::unique_ptr<RunnerPorts> live_ports(JobServer& server, Confinement& cgroups);

}  // namespace memgate
