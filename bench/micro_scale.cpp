// How memgate's per-event and per-tick work grows with the build
// (google-benchmark; bench/scale measures the whole run). Usage:
//   bench_micro_scale [--benchmark_filter=...]
//
// - Admission: one job ends and the next is admitted (exited, learn, step)
//   with N jobs waiting behind --jobs 512, through the real Predictor,
//   bound by the slots (512 running) or by memory (fewer running, every
//   waiting job blocked by memory): the cost of one such event should not
//   grow with N.
// - Ungated scan: find_ungated over a fake /proc of N waiting wrappers
//   and the build tool, reading them all (before) or skipping the
//   connected wrappers (what the runner passes now).
// - Held for the head: a big job waits for memory behind 400 running
//   small ones and N small jobs wait behind it, each weighed against it
//   (packing) at every step.
// - Predict: one prediction with N finished jobs of its klass learned.
// - Runner tick: the tick over fake ports with N jobs, up to 512 running.
// - Server turn: one request and its grant through the JobServer's loop
//   with N idle wrapper connections open.
#include <benchmark/benchmark.h>
#include <poll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <fmt/core.h>

#include "governor/governor.hpp"
#include "predict/predictor.hpp"
#include "run/job_server.hpp"
#include "run/runner_impl.hpp"
#include "run/ungated.hpp"
#include "support/runner_fakes.hpp"
#include "wrap/protocol.hpp"

namespace memgate {
namespace {

JobKey key_of(int i) {
  JobKey k;
  k.tool = "cc";
  k.identity = fmt::format("cc -c j{}.c", i);
  k.klass = "cc";
  k.stem = fmt::format("j{}", i);
  return k;
}

JobRecord record_of(const GovJob& j, double now) {
  JobRecord r;
  r.key = j.key;
  r.start_s = j.run.start_t;
  r.end_s = now;
  r.peak_bytes = 2 << 20;
  r.cpu_s = 0.01;
  r.attempt_log.push_back(Attempt{j.run.start_t, now, Outcome::ok, r.peak_bytes, r.cpu_s});
  return r;
}

// N jobs waiting behind 512 running; each iteration: the oldest running
// job ends, the governor learns it, a step admits the next, and one more
// job is submitted so N stays put.
void BM_AdmissionPerExit(benchmark::State& state) {
  const int waiting = static_cast<int>(state.range(0));
  const bool memory_bound = state.range(1) != 0;
  constexpr int kSlots = 512;
  Predictor predictor;
  GovernorConfig cfg;
  // Slots bound: room for 512 jobs at the default guess for cc (512 MiB);
  // memory bound: 8 GiB, so most jobs wait for memory.
  cfg.budget = cfg.hard_limit = memory_bound ? 8LL << 30 : 512LL << 30;
  cfg.slots = kSlots;
  Governor gov(
      cfg, [&](const JobKey& k) { return predictor.predict(k); }, [&](const JobRecord& r) { predictor.observe(r); });
  MemoryView view;
  double now = 0;
  int next = 0;
  for (; next < waiting + kSlots; ++next) gov.submit(key_of(next), now, "", next + 1);
  std::vector<JobId> running;
  for (JobId id : gov.step(view, now).admit) running.push_back(id);
  std::size_t oldest = 0;
  for (auto _ : state) {
    now += 0.002;
    JobId id = running[oldest];
    gov.exited(id, ExitKind::finished, 0, now, 0.01);
    gov.learn(record_of(gov.job(id), now));
    Decisions d = gov.step(view, now);
    running[oldest] = d.admit.empty() ? running[oldest] : d.admit.front();
    oldest = (oldest + 1) % running.size();
    gov.submit(key_of(next), now, "", next + 1);
    ++next;
  }
  GovernorCounts c = gov.counts(now);
  state.SetLabel(fmt::format("{}: {} running, {} waiting ({} for memory)", memory_bound ? "memory bound" : "slots bound",
                             c.running, c.waiting, c.waiting_memory));
}
BENCHMARK(BM_AdmissionPerExit)
    ->ArgsProduct({{250, 1000, 2000, 5000}, {0, 1}})
    ->Iterations(2000)
    ->Unit(benchmark::kMicrosecond);

// A big job at the head of the queue waits for memory behind 400 running
// small ones, and N small jobs wait behind it, each of which fits now but
// would delay it: every step weighs each of them against the head
// (packing's Shadow::admits, the two-job rule once more than its
// look-ahead wait). Each iteration: the oldest running job ends, a step,
// one more small job is submitted.
void BM_HeldForHead(benchmark::State& state) {
  const int waiting = static_cast<int>(state.range(0));
  constexpr int kRunning = 400;
  GovernorConfig cfg;
  cfg.budget = cfg.hard_limit = 8LL << 30;
  cfg.slots = 1 << 16;  // memory alone holds jobs back
  auto predict = [](const JobKey& k) {
    Prediction p;
    const bool big = k.tool == "nvcc";
    p.peak = big ? 7LL << 30 : 16LL << 20;
    p.wall_s = p.cpu_s = big ? 60 : 10;
    p.peak_over_frac = 0.3;
    p.after_peak = p.peak / 4;
    p.confidence = 1;
    p.source = PredictionSource::history;
    return p;
  };
  Governor gov(cfg, predict, [](const JobRecord&) {});
  MemoryView view;
  double now = 0;
  int next = 0;
  std::deque<JobId> running;
  for (; next < kRunning; ++next) gov.submit(key_of(next), now, "", next + 1);
  for (JobId id : gov.step(view, now).admit) running.push_back(id);
  JobKey big = key_of(next++);
  big.tool = "nvcc";
  big.klass = "nvcc:compile[sm_80]";
  gov.submit(big, now, "", next);
  for (int i = 0; i < waiting; ++i, ++next) gov.submit(key_of(next), now, "", next + 1);
  for (JobId id : gov.step(view, now).admit) running.push_back(id);
  for (auto _ : state) {
    now += 0.01;
    if (!running.empty()) {
      gov.exited(running.front(), ExitKind::finished, 0, now, 0.01);
      running.pop_front();
    }
    for (JobId id : gov.step(view, now).admit) running.push_back(id);
    gov.submit(key_of(next), now, "", next + 1);
    ++next;
  }
  GovernorCounts c = gov.counts(now);
  state.SetLabel(fmt::format("{} running, {} waiting ({} for memory)", c.running, c.waiting, c.waiting_memory));
}
BENCHMARK(BM_HeldForHead)->Arg(16)->Arg(250)->Arg(1000)->Iterations(2000)->Unit(benchmark::kMicrosecond);

// One prediction for a new job of a klass that has N finished jobs (each
// of its own stem) in this build: what repredicting a queue costs per job.
void BM_PredictAfter(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  Predictor predictor;
  for (int i = 0; i < n; ++i) {
    JobRecord r;
    r.key = key_of(i);
    r.start_s = 0;
    r.end_s = 10;
    r.peak_bytes = 2 << 20;
    r.cpu_s = 0.01;
    r.attempt_log.push_back(Attempt{0, 10, Outcome::ok, r.peak_bytes, r.cpu_s});
    predictor.observe(r);
  }
  int next = n;
  for (auto _ : state) benchmark::DoNotOptimize(predictor.predict(key_of(next++)));
  state.SetLabel(fmt::format("{} finished jobs of its klass", n));
}
BENCHMARK(BM_PredictAfter)->Arg(250)->Arg(1000)->Arg(2000)->Arg(5000)->Unit(benchmark::kMicrosecond);

}  // namespace

// The runner's tick (measure, decide, act) over fake ports: N jobs, up to
// 512 of them running with room to spare and the rest waiting. The ticks
// come microseconds apart, so a job's memory is read once, on its turn
// (a fifth of the jobs per tick), and not again within half a second:
// after the first five ticks this is the tick's cost beside the
// reads (which bench/scale measures). It should grow with the running
// jobs, not with the waiting ones.
class RunnerTickBench {
 public:
  explicit RunnerTickBench(int jobs) {
    GovernorConfig gc;
    gc.budget = gc.hard_limit = 64LL << 30;
    gc.slots = 512;
    r_.gov_ = std::make_unique<Governor>(
        gc,
        [](const JobKey&) {
          Prediction p;
          p.peak = 16 << 20;
          p.wall_s = 10;
          p.source = PredictionSource::history;
          p.confidence = 1.0;
          return p;
        },
        [](const JobRecord&) {});
    auto ports = std::make_unique<FakePorts>();
    ports_ = ports.get();
    r_.ports_ = std::move(ports);
    ports_->view.build_used = 1LL << 30;
    for (int i = 0; i < jobs; ++i) {
      RequestMsg m;
      m.argv = {"cc", "-c", fmt::format("j{}.c", i)};
      m.cwd = "/src";
      m.tool = "cc";
      m.klass = "cc:compile";
      m.identity = fmt::format("cc:compile:j{}.c->j{}.o", i, i);
      m.stem = fmt::format("j{}", i);
      r_.on_message(static_cast<ConnId>(i + 1), m);
    }
    r_.schedule_now();
    for (const auto& [id, s] : ports_->jobs) s->mem = JobMemory{2 << 20, 2 << 20};
    for (int i = 0; i < jobs; ++i)
      if (r_.gov_->job(r_.live_.find(static_cast<ConnId>(i + 1))->id).state == JobState::running)
        r_.on_message(static_cast<ConnId>(i + 1), StartedMsg{static_cast<pid_t>(10000 + i)});
  }
  void tick() { r_.tick(); }
  int samples() const {
    int n = 0;
    for (const auto& [id, s] : ports_->jobs) n += s->samples;
    return n;
  }

 private:
  Runner r_{RunOptions{}};
  FakePorts* ports_ = nullptr;
};

namespace {

void BM_RunnerTick(benchmark::State& state) {
  RunnerTickBench bench(static_cast<int>(state.range(0)));
  for (auto _ : state) bench.tick();
  state.SetLabel(fmt::format("{} jobs, up to 512 running; {:.2f} job reads per tick", state.range(0),
                             static_cast<double>(bench.samples()) / static_cast<double>(state.iterations())));
}
BENCHMARK(BM_RunnerTick)->Arg(250)->Arg(1000)->Arg(2000)->Arg(5000)->Unit(benchmark::kMicrosecond);

// A fake /proc with N wrappers (memgate-wrap, pid 1000+i) below make (pid 999).
struct FakeProc {
  std::string root;
  std::vector<pid_t> pids;
  explicit FakeProc(int n) {
    root = fmt::format("/tmp/memgate-micro-proc-{}-{}", ::getpid(), n);
    std::filesystem::create_directories(root);
    auto add = [&](pid_t pid, pid_t ppid, const std::string& comm, const std::string& exe) {
      const std::string dir = fmt::format("{}/{}", root, pid);
      std::filesystem::create_directories(dir);
      std::ofstream(dir + "/stat") << fmt::format(
          "{} ({}) S {} {} {} 0 -1 4194560 100 0 0 0 1 1 0 0 20 0 1 0 12345 10000000 300 "
          "18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0\n",
          pid, comm, ppid, pid, pid);
      std::ofstream(dir + "/status") << fmt::format("Name:\t{}\nState:\tS (sleeping)\nPPid:\t{}\nUid:\t0\t0\t0\t0\nVmRSS:\t  1200 kB\n",
                                                    comm, ppid);
      std::ofstream(dir + "/cmdline") << exe << '\0' << "exec" << '\0' << "cc" << '\0';
      std::ofstream(dir + "/environ") << "MEMGATE_SOCKET=/tmp/x/sock" << '\0';
      std::filesystem::create_symlink(exe, dir + "/exe");
      pids.push_back(pid);
    };
    add(999, 1, "make", "/usr/bin/make");
    for (int i = 0; i < n; ++i) add(1000 + i, 999, "memgate-wrap", "/usr/libexec/memgate/memgate-wrap");
  }
  ~FakeProc() { std::filesystem::remove_all(root); }
};

void BM_UngatedScan(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const bool skip_connected = state.range(1) != 0;
  FakeProc proc(n);
  std::vector<pid_t> known;
  if (skip_connected) known.assign(proc.pids.begin() + 1, proc.pids.end());
  for (auto _ : state) benchmark::DoNotOptimize(find_ungated(proc.pids, known, proc.root));
  state.SetLabel(skip_connected ? "connected wrappers skipped" : "every process read");
}
BENCHMARK(BM_UngatedScan)
    ->ArgsProduct({{250, 1000, 2000, 5000}, {0, 1}})
    ->Unit(benchmark::kMillisecond);

int connect_unix(const std::string& path) {
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

void pump(JobServer& server) {
  std::vector<pollfd> fds;
  server.append_pollfds(fds);
  if (::poll(fds.data(), fds.size(), 100) > 0) server.handle_ready(fds);
}

// One loop turn that carries a request and its grant, with N idle
// connections (waiting wrappers) open beside it.
void BM_ServerTurn(benchmark::State& state) {
  const int n = static_cast<int>(state.range(0));
  const std::string dir = fmt::format("/tmp/memgate-micro-sock-{}", ::getpid());
  std::filesystem::create_directories(dir);
  auto server = JobServer::listen(dir + "/sock");
  if (!server) {
    state.SkipWithError(server.error().c_str());
    return;
  }
  if (server->max_connections() < static_cast<std::size_t>(n + 1)) {
    state.SkipWithError("the open-file limit is too low for this many connections");
    return;
  }
  int got = 0;
  server->on_message = [&](ConnId id, const Message&) {
    ++got;
    server->send(id, GrantMsg{});
  };
  std::vector<int> idle;
  for (int i = 0; i < n; ++i) idle.push_back(connect_unix(dir + "/sock"));
  while (server->connection_count() < static_cast<std::size_t>(n)) pump(*server);
  int c = connect_unix(dir + "/sock");
  while (server->connection_count() < static_cast<std::size_t>(n + 1)) pump(*server);
  RequestMsg req;
  req.tool = "cc";
  const std::string frame = encode_frame(req);
  char buf[4096];
  for (auto _ : state) {
    int before = got;
    if (::write(c, frame.data(), frame.size()) != static_cast<ssize_t>(frame.size())) {
      state.SkipWithError("write failed");
      break;
    }
    while (got == before) pump(*server);
    if (::read(c, buf, sizeof buf) <= 0) {
      state.SkipWithError("no grant");
      break;
    }
  }
  for (int fd : idle) ::close(fd);
  ::close(c);
  std::filesystem::remove_all(dir);
  state.SetLabel(fmt::format("{} idle connections", n));
}
BENCHMARK(BM_ServerTurn)->Arg(250)->Arg(1000)->Arg(2000)->Arg(5000)->Unit(benchmark::kMicrosecond);

}  // namespace

}  // namespace memgate

BENCHMARK_MAIN();
