#include "report/summary.hpp"

#include <map>

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <cmath>
#include <numeric>

#include "util/text.hpp"

namespace memgate {
namespace {

std::int64_t counter(const BuildRecord& b, Counter c) { return get(b.counters, c); }

bool has_counter(const BuildRecord& b, Counter c) { return b.counters.count(c) > 0; }

std::string plural(std::int64_t n, const char* one, const char* many) {
  return fmt::format("{} {}", n, n == 1 ? one : many);
}

int percent(double fraction) { return static_cast<int>(std::lround(fraction * 100)); }

bool utf8_continuation(char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; }

}  // namespace

std::string shorten_middle(const std::string& text, size_t max) {
  if (text.size() <= max || max < 5) return text.size() <= max ? text : text.substr(0, max);
  size_t head = (max - 3) / 2;
  size_t tail_start = text.size() - (max - 3 - head);
  while (head > 0 && utf8_continuation(text[head])) --head;
  while (tail_start < text.size() && utf8_continuation(text[tail_start])) ++tail_start;
  return text.substr(0, head) + "..." + text.substr(tail_start);
}

std::string limit_verdict(double memory_bound, double cpu_bound, int jobs, double slots_bound, int slots,
                          int cores) {
  if (jobs == 0) return "no compiler jobs were gated, so nothing held the build back";
  if (memory_bound < 0 && cpu_bound < 0) return "this build did not record what limited it";
  const bool mem = memory_bound >= kBoundThreshold;
  const bool cpu = cpu_bound >= kBoundThreshold;
  if (mem && cpu) {
    return fmt::format(
        "memory-bound for {}% and CPU-bound for {}% of the build: more RAM and more cores would both help",
        percent(memory_bound), percent(cpu_bound));
  }
  if (mem) {
    return fmt::format("memory-bound for {}% of the build: more RAM would help, more cores would not",
                       percent(memory_bound));
  }
  if (cpu) {
    return fmt::format("CPU-bound for {}% of the build: more cores would help, more RAM would not",
                       percent(cpu_bound));
  }
  if (slots_bound >= kBoundThreshold) {
    return fmt::format("held back by --jobs for {}% of the build: {} slot{} on {} cores, with a core free; a larger "
                       "--jobs would help",
                       percent(slots_bound), slots, slots == 1 ? "" : "s", cores);
  }
  return "neither memory nor CPU held jobs back: the build's own parallelism (-j / dependencies) limited it";
}

BuildFacts build_facts(const BuildRecord& b, size_t heaviest) {
  BuildFacts f;
  static_cast<BuildSummary&>(f) = summarize_build(b);
  f.objects_per_min = f.wall_s > 0 ? f.job_count * 60.0 / f.wall_s : 0;
  f.jobs_waited = static_cast<int>(counter(b, Counter::waited_for_memory));
  f.freezes = counter(b, Counter::frozen);
  f.requeues = counter(b, Counter::requeued);
  f.requeued_cpu_s = counter(b, Counter::requeued_cpu_ms) / 1000.0;
  if (has_counter(b, Counter::released_mib_s)) f.released_gib_s = counter(b, Counter::released_mib_s) / 1024.0;
  if (has_counter(b, Counter::timed_starts)) f.timed_starts = counter(b, Counter::timed_starts);
  if (has_counter(b, Counter::room_starts)) f.room_starts = counter(b, Counter::room_starts);
  f.retries = counter(b, Counter::retried);
  f.oom_kills = counter(b, Counter::oom_killed);
  f.ran_alone = counter(b, Counter::ran_alone);
  auto share = [&](Counter name) {
    if (!has_counter(b, name) || f.wall_s <= 0) return -1.0;
    return std::clamp(counter(b, name) / 1000.0 / f.wall_s, 0.0, 1.0);
  };
  f.memory_bound = share(Counter::memory_bound_ms);
  f.cpu_bound = share(Counter::cpu_bound_ms);
  f.slots_bound = share(Counter::slots_bound_ms);
  f.verdict = limit_verdict(f.memory_bound, f.cpu_bound, f.job_count, f.slots_bound, b.slots, b.cores);

  std::vector<int> order(b.jobs.size());
  std::iota(order.begin(), order.end(), 0);
  const size_t n = std::min(heaviest, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(n), order.end(),
                    [&](int x, int y) { return b.jobs[x].peak_bytes > b.jobs[y].peak_bytes; });
  order.resize(n);
  f.heaviest = std::move(order);
  return f;
}

namespace {

// "predicted from: 40 own history, 10 imported, 1 default": where the
// first admission's prediction of each job came from, best source first.
std::string prediction_sources(const BuildRecord& b) {
  std::map<PredictionSource, int> n;
  for (const JobRecord& j : b.jobs) ++n[j.predicted.source];
  std::string out;
  for (const auto& [source, count] : n) {
    std::string_view what = source == PredictionSource::history    ? "own history"
                            : source == PredictionSource::build    ? "this build"
                            : source == PredictionSource::fallback ? "default"
                                                                   : name(source);
    out += fmt::format("{}{} {}", out.empty() ? "predicted from: " : ", ", count, what);
  }
  return out;
}

// Whether any prediction came from a shared file (`history import`, a
// prior): then the summary says so even when nothing else is notable.
bool used_shared_profiles(const BuildRecord& b) {
  return std::any_of(b.jobs.begin(), b.jobs.end(), [](const JobRecord& j) {
    return j.predicted.source == PredictionSource::imported || j.predicted.source == PredictionSource::prior;
  });
}

// Where the jobs ran, when any ran elsewhere: "12 jobs ran
// through distcc (local side at most 38 MiB), 5 offloaded to distcc".
std::string placement_line(const BuildRecord& b) {
  std::map<std::pair<Placement, std::string>, std::pair<int, Bytes>> by;
  for (const auto& j : b.jobs) {
    if (j.where == Placement::local) continue;
    auto& [n, peak] = by[{j.where, j.engine}];
    ++n;
    peak = std::max(peak, j.peak_bytes);
  }
  std::string out;
  for (const auto& [k, v] : by) {
    if (!out.empty()) out += ", ";
    out += fmt::format("{} {} {} (local side at most {})", plural(v.first, "job", "jobs"),
                       k.first == Placement::remote ? "ran through" : "offloaded to", printable(k.second),
                       format_bytes(v.second));
  }
  // Recorded local (that is where they ran), but the engine gave them back.
  if (const std::int64_t n = counter(b, Counter::fell_back); n > 0)
    out += fmt::format("{}{} handed to an engine but compiled here (its local fallback)", out.empty() ? "" : ", ",
                       plural(n, "job", "jobs"));
  if (const std::int64_t n = counter(b, Counter::declined); n > 0)
    out += fmt::format("{}{} declined after waiting too long", out.empty() ? "" : ", ", plural(n, "job", "jobs"));
  return out;
}

// "3 freezes, 1 requeue": the nonzero counters, or all of them when verbose.
std::string action_counts(const BuildFacts& f, bool verbose) {
  std::vector<std::string> parts;
  auto add = [&](std::int64_t n, const char* one, const char* many) {
    if (n > 0 || verbose) parts.push_back(plural(n, one, many));
  };
  add(f.freezes, "freeze", "freezes");
  add(f.requeues, "requeue", "requeues");
  add(f.retries, "retry", "retries");
  add(f.oom_kills, "OOM kill", "OOM kills");
  add(f.ran_alone, "job ran alone", "jobs ran alone");
  // What optimism cost, beside the counts that caused it.
  if (f.requeued_cpu_s >= 0.05) parts.push_back(fmt::format("{} of CPU done again", format_duration(f.requeued_cpu_s)));
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) out += (i ? ", " : "") + parts[i];
  return out;
}

// One or two lines when nothing notable happened, like ninja's or mold's
// last words: what ran, how long, how close to the budget, what limited it.
// The waits, the counters and the heaviest jobs follow when memgate acted
// (froze, requeued, reran, ran a job alone) or under --verbose.
std::string summary_body(const BuildRecord& b, bool verbose) {
  const BuildFacts f = build_facts(b);
  std::vector<std::string> lines;
  std::string status = b.exit_status != 0 ? fmt::format(", exit status {}", b.exit_status) : "";
  if (f.job_count == 0) {
    lines.push_back(fmt::format("finished in {}{}, no compiler jobs gated", format_duration(f.wall_s), status));
  } else {
    std::string jobs = plural(f.job_count, "job", "jobs");
    if (f.failed > 0) jobs += fmt::format(" ({} failed)", f.failed);
    std::string peak = f.budget > 0 ? fmt::format("peak {} of {} ({}%)", format_bytes(f.peak_bytes), format_bytes(f.budget),
                                                  percent(double(f.peak_bytes) / double(f.budget)))
                                    : fmt::format("peak {}", format_bytes(f.peak_bytes));
    lines.push_back(fmt::format("{} in {} ({:.1f}/min){}, {}", jobs, format_duration(f.wall_s), f.objects_per_min,
                                status, peak));
    lines.push_back(f.verdict);
    if (f.released_gib_s >= 0.05 || (verbose && f.released_gib_s >= 0))
      lines.push_back(fmt::format("released {:.1f} GiB·s of reservations past peaks (jobs ran beside others' tails){}{}",
                                  f.released_gib_s,
                                  f.timed_starts > 0 ? fmt::format("; {} started as others' memory fell",
                                                                   plural(f.timed_starts, "job", "jobs"))
                                                     : std::string(),
                                  f.room_starts > 0 ? fmt::format("; {} started on a guess in the room they left",
                                                                  plural(f.room_starts, "job", "jobs"))
                                                    : std::string()));
  }
  if (auto where = placement_line(b); !where.empty()) lines.push_back(where);
  if (verbose || memgate_acted(b.counters) || used_shared_profiles(b))
    if (std::string sources = prediction_sources(b); !sources.empty()) lines.push_back(sources);
  if (verbose || memgate_acted(b.counters)) {
    if (verbose || f.wait_s > 0 || f.frozen_s > 0)
      lines.push_back(fmt::format("jobs waited {} for memory in total ({} held back), {} frozen",
                                  format_duration(f.wait_s), plural(f.jobs_waited, "job", "jobs"),
                                  format_duration(f.frozen_s)));
    if (std::string counts = action_counts(f, verbose); !counts.empty()) lines.push_back(counts);
    if (!f.heaviest.empty()) {
      lines.push_back("heaviest jobs (peak, predicted):");
      for (int i : f.heaviest) {
        const JobRecord& j = b.jobs[static_cast<size_t>(i)];
        lines.push_back(fmt::format("  {:>9} {:>9}  {}", format_bytes(j.peak_bytes),
                                    j.predicted.peak > 0 ? format_bytes(j.predicted.peak) : "-",
                                    printable(shorten_middle(j.key.identity, 100))));
      }
    }
  }
  std::string out;
  for (const auto& l : lines) out += "memgate: " + l + "\n";
  return out;
}

}  // namespace

std::string format_summary(const BuildRecord& b) { return summary_body(b, false) + format_memory_failure(b); }

std::string format_summary(const BuildRecord& b, const std::vector<std::string>& degraded,
                           const std::vector<std::string>& notes, bool verbose) {
  std::string out = summary_body(b, verbose);
  for (const auto& n : notes) out += "memgate: " + printable(n) + "\n";
  if (!degraded.empty()) {
    out += "memgate: degraded: ";
    for (size_t i = 0; i < degraded.size(); ++i) out += (i ? "; " : "") + printable(degraded[i]);
    out += "\n";
  }
  return out + format_memory_failure(b);
}

std::vector<LostJob> jobs_lost_to_memory(const BuildRecord& b) {
  std::vector<LostJob> lost;
  if (b.exit_status == 0) return lost;
  for (size_t i = 0; i < b.jobs.size(); ++i) {
    const JobRecord& j = b.jobs[i];
    const std::optional<Outcome> last =
        j.attempt_log.empty() ? std::nullopt : std::optional(j.attempt_log.back().outcome);
    LostJob l{static_cast<int>(i), MemoryDeath::kernel_oom};
    if (last == Outcome::oom) l.how = MemoryDeath::kernel_oom;
    else if (last == Outcome::requeued) l.how = MemoryDeath::memgate;
    else if (j.exit_status == 128 + 9) l.how = MemoryDeath::sigkill;
    else continue;
    lost.push_back(l);
  }
  std::stable_sort(lost.begin(), lost.end(), [&](const LostJob& x, const LostJob& y) {
    return b.jobs[static_cast<size_t>(x.job)].peak_bytes > b.jobs[static_cast<size_t>(y.job)].peak_bytes;
  });
  return lost;
}

namespace {

int count_outcome(const JobRecord& j, Outcome outcome) {
  return static_cast<int>(std::count_if(j.attempt_log.begin(), j.attempt_log.end(),
                                        [&](const Attempt& a) { return a.outcome == outcome; }));
}

std::string peak_against_budget(Bytes peak, Bytes budget) {
  if (budget <= 0) return fmt::format("it reached {}", format_bytes(peak));
  return fmt::format("it reached {} against a budget of {} ({}%)", format_bytes(peak), format_bytes(budget),
                     percent(double(peak) / double(budget)));
}

// What killed it, in words, and how often.
std::string how_it_died(const JobRecord& j, MemoryDeath how) {
  switch (how) {
    case MemoryDeath::kernel_oom: {
      const int n = count_outcome(j, Outcome::oom);
      return fmt::format("was killed by the kernel's OOM killer (SIGKILL, exit status 137){}",
                         n > 1 ? fmt::format(", {} times: memgate reran it and gave up", n) : "");
    }
    case MemoryDeath::memgate:
      return fmt::format("was killed by memgate under memory pressure {} (exit status 137) and not run again",
                         plural(count_outcome(j, Outcome::requeued), "time", "times"));
    case MemoryDeath::sigkill: break;
  }
  return "was killed by SIGKILL (exit status 137), which is what the kernel's OOM killer does; memgate saw no OOM "
         "kill in its cgroup, so `dmesg | grep -i 'killed process'` tells whether it was one";
}

// How to make one job of this tool smaller.
std::string smaller(const std::string& tool) {
  if (tool == "nvcc") return "fewer GPU targets (TORCH_CUDA_ARCH_LIST, FLASH_ATTN_CUDA_ARCHS) or nvcc --threads 1 (NVCC_THREADS=1)";
  if (tool == "hipcc") return "fewer --offload-arch targets (PYTORCH_ROCM_ARCH)";
  return "a lower -O level or -g0 for this file, or split the source";
}

// What to do, by whether the job fits the budget on its own.
std::vector<std::string> advice(const JobRecord& j, MemoryDeath how, Bytes budget) {
  if (how != MemoryDeath::memgate && budget > 0 && j.peak_bytes >= budget) {
    return {"what to do: this one job needs more memory than the build may use, so no job count helps.",
            "  Give the build more (free memory, raise the container's or cgroup's limit, or --memory if you",
            "  lowered it; `memgate doctor` shows the budget), or make the job smaller:",
            "  " + smaller(j.key.tool) + "."};
  }
  return {"what to do: the job fits the budget on its own, so memory outside memgate's control ran out",
          "  (other programs, or a build run with --no-confine). Stop other memory users and run again:",
          "  memgate now knows this job's peak and reserves it. `memgate doctor` shows what holds memory."};
}

}  // namespace

std::string format_memory_failure(const BuildRecord& b) {
  if (b.exit_status == 0) return "";
  std::vector<std::string> lines;
  const std::vector<LostJob> lost = jobs_lost_to_memory(b);
  if (!lost.empty()) {
    lines.push_back(lost.size() == 1 ? "the build failed because a job ran out of memory, not because of a compiler error:"
                                     : fmt::format("the build failed because {} jobs ran out of memory, not because of "
                                                   "a compiler error:", lost.size()));
    for (const LostJob& l : lost) {
      const JobRecord& j = b.jobs[static_cast<size_t>(l.job)];
      lines.push_back(fmt::format("  {}", printable(shorten_middle(j.key.identity, 100))));
      lines.push_back(fmt::format("    {}; {}", how_it_died(j, l.how), peak_against_budget(j.peak_bytes, b.budget)));
    }
    lines.push_back("  the \"Killed\" or \"Error 137\" in the build's output above is this kill.");
    for (auto& a : advice(b.jobs[static_cast<size_t>(lost.front().job)], lost.front().how, b.budget)) lines.push_back(a);
  }
  if (const std::int64_t n = counter(b, Counter::oom_killed_ungated); n > 0) {
    lines.push_back(fmt::format("the kernel's OOM killer killed {} memgate did not gate (not a compiler or linker "
                                "call it saw); that is an OOM kill, not an error of the build's own",
                                plural(n, "process", "processes")));
    for (const auto& e : b.events)
      if (e.kind == EventKind::oom_kill && e.job < 0 && !e.reason.empty()) lines.push_back("  " + printable(e.reason));
    lines.push_back(fmt::format("  the build peaked at {}{}", format_bytes(b.peak_bytes),
                                b.budget > 0 ? fmt::format(" against a budget of {}", format_bytes(b.budget)) : ""));
    lines.push_back("what to do: run that step through a compiler memgate gates (CC/CXX), give the build more memory,");
    lines.push_back("  or lower --memory so the gated jobs leave it room.");
  }
  std::string out;
  for (const auto& l : lines) out += "memgate: " + l + "\n";
  return out;
}

}  // namespace memgate
