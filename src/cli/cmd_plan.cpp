// memgate plan: estimated build time and peak memory for each static job
// count, here or on another machine, and the one safe MAX_JOBS.
//
// Exit status: 0; 1 if there is nothing to plan from (no recorded build,
// an unreadable file); 2 for usage errors; 3 with --recommend when no job
// count is safe (one job alone needs more than capacity - reserve, or the
// --jobs-range starts above the safe counts): it still prints 1, the
// least bad choice, for scripts that go on anyway
// (`MAX_JOBS=$(memgate plan --recommend || true)`).
#include <CLI/CLI.hpp>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <string>

#include "cli/cli.hpp"
#include "cli/config.hpp"
#include "cli/help.hpp"
#include "history/history.hpp"
#include "plan/input.hpp"
#include "plan/machine.hpp"
#include "plan/plan.hpp"
#include "plan/render.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"
#include "util/size.hpp"

namespace memgate {

namespace {

constexpr int kNothingSafe = 3;

struct PlanArgs {
  std::optional<int> cores;
  std::string capacity, memory, reserve, jobs_range, build, ninja_log, history, jobs_csv, profiles;
  bool recommend = false, json = false;
  std::string admission;  // "" = the governor's default
  int nvcc_threads = 1, gpu_targets = 1, orders = 200;
  std::uint64_t seed = 1;
};

// "A-B" or a single "N".
Result<std::pair<int, int>> parse_range(const std::string& text) {
  size_t dash = text.find('-');
  try {
    size_t used = 0;
    int a = std::stoi(text.substr(0, dash), &used);
    if (used != (dash == std::string::npos ? text.size() : dash)) throw std::invalid_argument(text);
    int b = a;
    if (dash != std::string::npos) {
      std::string rest = text.substr(dash + 1);
      b = std::stoi(rest, &used);
      if (used != rest.size()) throw std::invalid_argument(text);
    }
    if (a < 1 || b < a) throw std::invalid_argument(text);
    return std::make_pair(a, b);
  } catch (const std::exception&) {
    return Error{fmt::format("invalid --jobs-range '{}': expected A-B with 1 <= A <= B", text)};
  }
}

Result<plan::Machine> machine_from(const PlanArgs& a) {
  plan::Machine here = plan::this_machine();
  int cores = a.cores ? *a.cores : here.cores;
  if (cores < 1) return Error{"--cores must be at least 1"};
  Capacity cap = detect_capacity();
  const std::string& size = a.capacity.empty() ? a.memory : a.capacity;
  if (!size.empty()) {  // another machine: all of SIZE is its physical memory
    auto m = parse_size(size, here.capacity);
    if (!m) return Error{fmt::format("--capacity: {}", m.error())};
    cap = compute_capacity(*m, std::nullopt);
  }
  if (cap.capacity <= 0) return Error{"cannot tell this machine's memory: give --capacity SIZE"};
  auto budget = compute_budget(cap, a.reserve.empty() ? std::nullopt : std::optional(a.reserve), std::nullopt);
  if (!budget) return Error{budget.error()};
  plan::Machine m = plan::machine_with(cores, cap.capacity);
  m.reserve = budget->reserve;
  return m;
}

// The only use of the history file; every other source works without it.
// A --history in a directory that does not exist is never created.
Result<std::unique_ptr<History>> open_history(const std::string& flag) {
  const std::string path = History::resolve_path(flag);
  if (auto s = History::check_location(path); !s) return Error{s.error()};
  auto h = History::open(path);
  if (!h) return Error{h.error()};
  return std::move(*h);
}

Result<plan::PlanInput> load_input(const PlanArgs& a) {
  if (!a.jobs_csv.empty())
    return plan::input_from_jobs_csv(a.jobs_csv, a.profiles, plan::NvccShape{a.nvcc_threads, a.gpu_targets});
  auto history = open_history(a.history);
  if (!a.ninja_log.empty()) {
    if (!history) log::warn("history unavailable: {}", history.error());
    return plan::input_from_ninja_log(a.ninja_log, history ? history->get() : nullptr, plan::this_machine().cores);
  }
  if (!history) return Error{fmt::format("{}; or give --ninja-log or --jobs-csv", history.error())};
  return plan::input_from_history(**history, a.build.empty() ? "last" : a.build, current_dir(),
                                  History::resolve_path(a.history));
}

int run_plan(const PlanArgs& a) {
  // `--memory` is the budget in `run`; in plan it was the machine's size.
  if (!a.memory.empty()) log::warn("plan --memory is now --capacity (the machine's memory); --memory will go away");
  plan::PlanOptions options;
  if (!a.jobs_range.empty()) {
    auto r = parse_range(a.jobs_range);
    if (!r) {
      log::error("{}", r.error());
      return 2;
    }
    options.jobs_from = r->first;
    options.jobs_to = r->second;
  }
  options.orders = a.orders;
  options.seed = a.seed;
  if (auto policy = parse_admission_policy(a.admission)) options.memgate_options.admission = *policy;
  options.memgate = !a.recommend;
  options.rows = !a.recommend;
  auto machine = machine_from(a);
  if (!machine) {
    log::error("{}", machine.error());
    return 2;
  }
  auto input = load_input(a);
  if (!input) {
    log::error("{}", input.error());
    return 1;
  }
  for (const std::string& note : input->notes) log::info("{}", note);
  plan::PlanResult result = plan::make_plan(input->jobs, *machine, options);

  if (a.recommend) {
    if (result.recommended) {
      std::cout << *result.recommended << "\n";
      return 0;
    }
    log::warn("{}", plan::no_recommendation_message(result));
    std::cout << 1 << "\n";
    return kNothingSafe;
  }
  if (a.json) std::cout << plan::to_json(result, input->source, input->measured).dump(2) << "\n";
  else std::cout << plan::render_table(result, input->source, input->measured);
  return 0;
}

}  // namespace

void add_plan_command(CLI::App& app, int* status) {
  auto* cmd = app.add_subcommand("plan", "estimate build time and peak memory for each job count, here or elsewhere");
  auto args = std::make_shared<PlanArgs>();
  cmd->add_option("--cores", args->cores, "simulate a machine with this many cores (default: this one's)")
      ->type_name("N");
  cmd->add_option("--capacity", args->capacity, "simulate a machine with this much memory (SIZE or % of this one's)")
      ->type_name("SIZE");
  cmd->add_option("--memory", args->memory, "old name of --capacity")->group("");
  cmd->add_option("--reserve", args->reserve, "memory never handed to jobs (default: 5%, 512M..8G)")->type_name("SIZE");
  cmd->add_option("--jobs-range", args->jobs_range,
                  "job counts to consider (default: 1 to max(8, 2 x cores), at most the number of jobs)")
      ->type_name("A-B");
  cmd->add_flag("--recommend", args->recommend, "print only the recommended static job count");
  cmd->add_flag("--json", args->json, "print JSON");
  cmd->add_option("--build", args->build, "plan from this recorded build (an id, or 'last')")
      ->type_name("ID|last")
      ->check(build_ref_check());
  cmd->add_option("--ninja-log", args->ninja_log, "plan from a .ninja_log, with memory from history")
      ->type_name("FILE");
  cmd->add_option("--history", args->history, kHistoryHelp)->type_name("FILE");
  cmd->add_option("--jobs-csv", args->jobs_csv, "plan from a measured job table (see tests/fixtures/flash-attn)")
      ->type_name("FILE");
  cmd->add_option("--profiles", args->profiles, "memory profiles of the --jobs-csv rows (default: next to it)")
      ->type_name("DIR");
  cmd->add_option("--nvcc-threads", args->nvcc_threads, "with --jobs-csv: nvcc --threads")
      ->type_name("N")
      ->check(CLI::Range(1, plan::kMaxNvccTargets));
  cmd->add_option("--gpu-targets", args->gpu_targets, "with --jobs-csv: GPU archs per job")
      ->type_name("N")
      ->check(CLI::Range(1, plan::kMaxNvccTargets));
  cmd->add_option("--orders", args->orders, "random job orders sampled for the OOM risk (default 200)")
      ->type_name("N")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--seed", args->seed, "seed of those orders")->type_name("N");
  cmd->add_option("--admission", args->admission,
                  "memgate's admission policy to simulate: longest-first or packing (default: run's default)")
      ->type_name("POLICY")
      ->check(CLI::IsMember({"longest-first", "packing"}));
  describe_command(cmd, "",
                   {"memgate plan", "memgate plan --cores 128 --capacity 432G",
                    "MAX_JOBS=$(memgate plan --recommend) pip install flash-attn",
                    "memgate plan --ninja-log build/.ninja_log"});
  cmd->callback([status, args] {
    args->history = history_flag_or_config(args->history);
    *status = run_plan(*args);
  });
}

}  // namespace memgate
