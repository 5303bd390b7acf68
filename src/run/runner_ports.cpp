#include "run/runner_ports.hpp"

#include <signal.h>

#include <cerrno>

#include "platform/proc.hpp"
#include "run/confinement.hpp"

namespace memgate {

namespace {

class LivePorts final : public RunnerPorts {
 public:
  LivePorts(JobServer& server, Confinement& cgroups) : server_(server), cgroups_(cgroups) {}

  bool send(ConnId conn, const Message& m) override { return server_.send(conn, m); }
  void close(ConnId conn) override { server_.close(conn); }
  pid_t peer_pid(ConnId conn) const override { return server_.peer_pid(conn); }
  void drop_idle() override { server_.drop_idle(JobServer::monotonic_seconds()); }

  std::unique_ptr<JobControl> start_job(JobId id) override {
    return std::make_unique<JobExec>(cgroups_.job_cgroups(), cgroups_.build_leaf(), id, procs_);
  }
  bool prepare_jobs(std::size_t want, double budget_s) override {
    const auto& jobs = cgroups_.job_cgroups();
    return jobs && jobs->tidy(want, budget_s);
  }
  bool descends_from(pid_t pid, pid_t ancestor) const override { return platform::descends_from(pid, ancestor); }
  bool exists(pid_t pid) const override { return pid > 0 && (::kill(pid, 0) == 0 || errno == EPERM); }
  double cpu_seconds(const std::vector<pid_t>& pids) const override {
    double s = 0;
    for (pid_t p : pids)
      if (auto st = platform::read_proc_stat(p)) s += platform::ticks_to_seconds(st->utime + st->stime);
    return s;
  }

  // Without a cgroup to list them, the build tool's /proc tree.
  std::vector<pid_t> build_processes(pid_t build_pid) override {
    std::vector<pid_t> build = cgroups_.processes_outside_jobs();
    cgroups_.watch(build_pid, build);
    if (build.empty() && build_pid > 0) build = platform::process_tree(build_pid);
    return build;
  }
  MemoryView read_memory(Bytes jobs_current) override { return to_view(cgroups_.read(jobs_current)); }

 private:
  JobServer& server_;
  Confinement& cgroups_;
  // The jobs measured from /proc (no cgroups) share one scan per tick.
  std::shared_ptr<platform::ProcSnapshot> procs_ = std::make_shared<platform::ProcSnapshot>();
};

}  // namespace

std::unique_ptr<RunnerPorts> live_ports(JobServer& server, Confinement& cgroups) {
  return std::make_unique<LivePorts>(server, cgroups);
}

}  // namespace memgate
