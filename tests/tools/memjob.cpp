// memjob: a fake compiler for memgate's tests and benches.
//
// It allocates and touches memory along a profile, sleeping or burning CPU,
// then writes a checkable output. Called directly or under a compiler's name
// (cc, g++, nvcc, ... through memgate's shims); compiler flags it does not
// know are ignored, and those that take an argument consume it.
//
//   memjob [--peak SIZE] [--base SIZE] [--ramp S] [--peak-at S] [--hold S]
//          [--after SIZE] [--duration S] [--cpu] [--out FILE] [--fail N]
//          [--step-ms N] [--forever] [--pidfile FILE] [--ready FILE]
//          [--hold-until FILE] [--work S] [--curve FILE [--rate R]]
//          [compiler-style: -c SRC -o OUT -MD -MF DEP ...]
//
// Profile over time t (seconds): `base` until the ramp starts, linear growth
// to `peak` over `ramp` seconds ending at `peak-at` (default: ramp), `peak`
// for `hold` seconds, then `after` (default: peak; memory is returned to the
// kernel) until `duration`. The peak is always reached for at least one
// step. --forever holds the peak until killed; --hold-until FILE holds it
// (after `hold`) until FILE exists. --ready FILE is written once the peak
// is reached.
//
// The profile runs on its own clock, one step at a time: a step whose
// allocation takes longer than the step (a loaded machine, or a VM whose
// host faults memory in slowly) stretches the profile rather than making
// the next step jump. A job never grows faster than its profile says, and
// holds its peak for the full `hold` however late it got there.
//
// --curve FILE replays a measured memory curve instead: FILE's rows
// "t_seconds,bytes" (other lines, like a header, are skipped), followed
// point by point, linearly between them, until the last row's time; the
// peak is the largest row. With --rate R (0 < R <= 1: the real job's CPU
// seconds per wall second) the curve's clock is the job's own CPU time / R
// and memjob burns CPU R of each step and sleeps the rest: on a loaded
// machine, or frozen, the curve stretches as a compiler's would. Without
// --rate it follows the wall clock, sleeping. Getting the memory is part
// of a step's time; only when it takes longer than the step does either
// clock wait for it, so the memory follows the curve exactly and a job
// that was slow to get it runs longer. bench/run's flash-real
// workload replays the flash-attn profiles this way.
//
// Spec files: every line of SRC containing "memjob:" adds the options after
// it (command-line options win). OUT receives
//   memjob-ok <fnv1a64 of the SRC contents, 16 hex digits> <peak bytes>
// so a test can check every output. Nothing is printed on success. With -E
// it copies SRC to OUT (or stdout) at once, as a preprocessor would, so
// distcc can send the file out and the remote memjob runs the profile.
//
// Self-contained on purpose (no memgate library): it stands in for a
// compiler, and must behave like an independent program.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>
#include "memjob_args.hpp"

using namespace memjob;

namespace {


double now_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// Anonymous memory in mmap'd chunks, so lowering the level really gives
// pages back (munmap), unlike free() which may keep them in the heap.
class Memory {
 public:
  void set(std::uint64_t bytes) {
    std::uint64_t want = round_up(bytes);
    if (want > total_) grow(want - total_);
    else if (want < total_) shrink(total_ - want);
  }

 private:
  struct Chunk {
    char* p;
    std::uint64_t size;
  };
  static std::uint64_t page() {
    static const std::uint64_t pg = static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE));
    return pg;
  }
  static std::uint64_t round_up(std::uint64_t b) { return (b + page() - 1) / page() * page(); }

  // Huge pages where the kernel offers them: on a VM whose host backs
  // guest memory lazily, touching 4 KiB pages ran at 0.1-0.3 GB/s, so a
  // job's memory cost it more CPU than the compile it stands for.
  void grow(std::uint64_t n) {
    void* p = ::mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) die(1, "cannot allocate " + std::to_string(n) + " bytes: " + std::strerror(errno));
    ::madvise(p, n, MADV_HUGEPAGE);
    char* c = static_cast<char*>(p);
    for (std::uint64_t off = 0; off < n; off += page()) c[off] = static_cast<char>(1 + (off >> 12));  // touch
    chunks_.push_back({c, n});
    total_ += n;
  }
  void shrink(std::uint64_t n) {
    while (n > 0 && !chunks_.empty()) {
      Chunk& last = chunks_.back();
      std::uint64_t cut = n < last.size ? n : last.size;
      ::munmap(last.p + (last.size - cut), cut);
      last.size -= cut;
      total_ -= cut;
      n -= cut;
      if (last.size == 0) chunks_.pop_back();
    }
  }

  std::vector<Chunk> chunks_;
  std::uint64_t total_ = 0;
};

double level_at(const Profile& p, double t) {
  double grow_start = p.peak_at > p.ramp ? p.peak_at - p.ramp : 0;
  if (t < grow_start) return static_cast<double>(p.base);
  if (t < p.peak_at) {
    double f = (t - grow_start) / (p.peak_at - grow_start);
    return static_cast<double>(p.base) + f * static_cast<double>(p.peak - p.base);
  }
  if (p.forever || t < p.peak_at + p.hold) return static_cast<double>(p.peak);
  return static_cast<double>(p.after);
}

void wait_until(double deadline, bool burn) {
  if (burn) {
    volatile std::uint64_t x = 1;
    while (now_s() < deadline)
      for (int i = 0; i < 10000; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
    return;
  }
  double left = deadline - now_s();
  if (left <= 0) return;
  timespec ts{static_cast<time_t>(left), static_cast<long>((left - std::floor(left)) * 1e9)};
  while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

double process_cpu_s() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

// A fixed amount of computing, as a compiler does: on a loaded machine it
// takes longer (unlike --cpu, which burns until a deadline).
void burn_cpu_seconds(double seconds) {
  const double until = process_cpu_s() + seconds;
  volatile std::uint64_t x = 1;
  while (process_cpu_s() < until)
    for (int i = 0; i < 10000; ++i) x = x * 6364136223846793005ULL + 1442695040888963407ULL;
}

void run_profile(const Profile& p) {
  Memory mem;
  double step = p.step_ms / 1000.0;
  double end = p.duration > p.peak_at + p.hold ? p.duration : p.peak_at + p.hold;
  bool reached = false;
  double t = 0;  // profile time
  for (;;) {
    double step_start = now_s();
    bool held = reached && !p.hold_until.empty() && t >= p.peak_at + p.hold && ::access(p.hold_until.c_str(), F_OK) != 0;
    if (!p.forever && !held && t >= end && reached) return burn_cpu_seconds(p.work);
    double target = held ? static_cast<double>(p.peak) : level_at(p, t);
    if (!reached && t >= p.peak_at) target = static_cast<double>(p.peak);  // never skip the peak
    mem.set(static_cast<std::uint64_t>(target));
    if (!reached && t >= p.peak_at) {
      reached = true;
      if (!p.ready.empty()) write_text(p.ready, "ready\n");
    }
    double next = held ? t : t + step;
    if (!reached && p.peak_at < next) next = p.peak_at;  // land on the peak, not past it
    if (!p.forever && !held && end < next) next = end;
    wait_until(step_start + (held ? step : next - t), p.cpu);
    t = next;
  }
}

struct CurvePoint {
  double t;
  double bytes;
};

std::vector<CurvePoint> read_curve(const std::string& path) {
  std::istringstream lines(read_whole(path));
  std::vector<CurvePoint> pts;
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || !std::isdigit(static_cast<unsigned char>(line[0]))) continue;
    auto comma = line.find(',');
    double t = 0;
    std::uint64_t b = 0;
    if (comma == std::string::npos || !parse_seconds(line.substr(0, comma), t) ||
        !parse_size(line.substr(comma + 1), b))
      die(2, path + ": not a 't_seconds,bytes' row: " + line);
    if (!pts.empty() && t < pts.back().t) die(2, path + ": times go backwards at " + line);
    pts.push_back({t, static_cast<double>(b)});
  }
  if (pts.empty()) die(2, path + ": no 't_seconds,bytes' rows");
  return pts;
}

double curve_at(const std::vector<CurvePoint>& pts, double t) {
  if (t <= pts.front().t) return pts.front().bytes;
  for (std::size_t i = 1; i < pts.size(); ++i) {
    if (t <= pts[i].t) {
      double span = pts[i].t - pts[i - 1].t;
      double f = span > 0 ? (t - pts[i - 1].t) / span : 1;
      return pts[i - 1].bytes + f * (pts[i].bytes - pts[i - 1].bytes);
    }
  }
  return pts.back().bytes;
}

// --curve: the curve's clock is CPU time / rate (or the wall clock), so a
// job that gets less CPU than it asks for takes longer, as a compiler does.
// The measured curve already holds the real job's own cost of getting its
// memory, so that cost is part of a step's CPU, not added to it: a step
// that faults pages in burns only the rest of its share. Only when getting
// the memory takes longer than the step's share does the clock wait for
// it, so the memory follows the curve exactly. On this VM the host takes
// back freed pages within seconds and touching them again costs about
// 1.8 s of system time per GiB; a clock that ran on regardless went past
// the peak before the memory got there (a 6.4 GB kernel peaked at 3.7 GiB
// in one run, 5.2 GiB in the next), and one that stood still for every
// fault and then burned the step's share on top moved a replayed kernel's
// peak from 23% of its life to 73% (bench/run --quick, flash-real, time
// /16), because the faults do not shrink with the time scale.
void run_curve(const Profile& p, const std::vector<CurvePoint>& pts) {
  Memory mem;
  const double step = p.step_ms / 1000.0, end = pts.back().t;
  const double wall0 = now_s(), cpu0 = process_cpu_s();
  double waited = 0;  // CPU or wall seconds the clock stood still for memory
  auto clock = [&] {
    return p.rate > 0 ? (process_cpu_s() - cpu0 - waited) / p.rate : now_s() - wall0 - waited;
  };
  for (double t = clock(); t < end; t = clock()) {
    const double step_start = now_s(), cpu_before = process_cpu_s();
    mem.set(static_cast<std::uint64_t>(curve_at(pts, t)));
    const double got = p.rate > 0 ? process_cpu_s() - cpu_before : now_s() - step_start;
    const double share = p.rate > 0 ? p.rate * step : step;
    waited += std::max(0.0, got - share);
    // The rest of rate x step of CPU, then sleep what the real job spent
    // waiting (I/O, the driver between its tools).
    if (p.rate > 0) burn_cpu_seconds(cpu_before + share - process_cpu_s());
    wait_until(step_start + step, false);
  }
  burn_cpu_seconds(p.work);
}


}  // namespace

// -E, as distcc's client runs it before sending the file out: the
// "preprocessed" text is the sources themselves, to -o or stdout, at once
// and with no memory profile (the compile is where the memory goes), so a
// remote compile of it hashes the same as a local one.
int preprocess(const Invocation& inv) {
  std::string text;
  for (const auto& src : inv.sources) text += read_whole(src);
  if (!inv.out.empty() && inv.out != "-") {
    write_text(inv.out, text);
    return 0;
  }
  return std::fwrite(text.data(), 1, text.size(), stdout) == text.size() ? 0 : 1;
}

int main(int argc, char** argv) {
  // A shell starting us in the background may have left these ignored;
  // tests need memjob to die promptly when told to.
  for (int sig : {SIGINT, SIGTERM}) ::signal(sig, SIG_DFL);
  sigset_t unblock;
  sigemptyset(&unblock);
  sigaddset(&unblock, SIGINT);
  sigaddset(&unblock, SIGTERM);
  ::sigprocmask(SIG_UNBLOCK, &unblock, nullptr);

  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--version") == 0 || std::strcmp(argv[i], "-dumpversion") == 0) {
      std::printf("memjob 1.0\n");
      return 0;
    }
  }
  Invocation inv = parse_command_line(argc, argv);
  if (inv.preprocess) return preprocess(inv);
  Profile p;
  std::uint64_t hash = fnv1a64("");
  std::string sources_text;
  for (const auto& src : inv.sources) sources_text += read_whole(src);
  hash = fnv1a64(sources_text);
  apply_spec_lines(p, sources_text);
  apply_tokens(p, inv.memjob_args);
  if (p.peak < p.base) p.peak = p.base;
  if (!p.after_set) p.after = p.peak;
  if (p.peak_at < 0) p.peak_at = p.ramp;

  if (!p.pidfile.empty()) write_text(p.pidfile, std::to_string(::getpid()) + "\n");
  if (!p.curve.empty()) {
    auto pts = read_curve(p.curve);
    double top = 0;
    for (const auto& pt : pts) top = pt.bytes > top ? pt.bytes : top;
    p.peak = static_cast<std::uint64_t>(top);
    run_curve(p, pts);
  } else {
    run_profile(p);
  }

  if (p.fail != 0) die(p.fail, "failing with status " + std::to_string(p.fail) + " as asked");
  std::string out = !p.out.empty() ? p.out : inv.out;
  char line[80];
  std::snprintf(line, sizeof line, "memjob-ok %016llx %llu\n", static_cast<unsigned long long>(hash),
                static_cast<unsigned long long>(p.peak));
  if (!out.empty()) write_text(out, line);
  std::string dep = depfile_for(inv, out);
  if (!dep.empty()) {
    std::string deps = (out.empty() ? "memjob.o" : out) + ":";
    for (const auto& s : inv.sources) deps += " " + s;
    write_text(dep, deps + "\n");
  }
  return 0;
}
