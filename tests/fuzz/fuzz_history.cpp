// The history loader (src/history) given a damaged database file: opened
// with History::open (which moves a corrupt file aside and starts anew),
// then every read memgate makes (history list, --build, the predictor's
// seed, plan's "last build") and one write. Whatever the file holds, each
// must return a value or an error, never crash.
//
// Input: byte 0 picks the mode.
// - even: the rest of the input is the whole file (seeds: a real history
//   database, tests/fuzz/corpus/history/).
// - odd: a real history database (made at start-up with save_build)
//   edited through SQL as a tool or a disk could leave it: the rest of the
//   input is a list of edits, each setting one column of the stored build
//   or its jobs to an integer, a real, a text, a blob or NULL, or changing
//   the schema version.
#include <fuzzer/FuzzedDataProvider.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "fuzz_input.hpp"
#include "history/history.hpp"
#include "history/sqlite.hpp"
#include "util/fs.hpp"
#include "util/log.hpp"

using namespace memgate;

namespace {

const char* const kBuildColumns[] = {
    "id", "cwd", "command", "start_unix", "end_unix", "exit_status", "capacity_bytes", "budget_bytes", "slots",
    "peak_bytes", "job_count", "wait_s", "counters", "memory", "events"};
const char* const kJobColumns[] = {
    "build_id", "seq", "identity", "tool", "klass", "stem", "cpu_weight", "argv_digest", "cwd", "submit_s",
    "start_s", "end_s", "wait_s", "frozen_s", "cpu_s", "peak_bytes", "predicted_peak_bytes", "predicted_wall_s",
    "predicted_cpu_s", "predicted_peak_over_frac", "predicted_after_peak_bytes", "predicted_confidence",
    "predicted_source", "t_peak_s", "peak_over_frac", "after_peak_bytes", "exit_status", "attempts",
    "attempt_log", "profile"};

BuildRecord sample_build() {
  BuildRecord b;
  b.cwd = "/src/app/build";
  b.command = "ninja -j8";
  b.start_unix = 1.7e9;
  b.end_unix = 1.7e9 + 120;
  b.capacity = 16 * GiB;
  b.budget = 14 * GiB;
  b.slots = 8;
  b.peak_bytes = 9 * GiB;
  b.counters[Counter::admitted] = 3;
  b.counters[Counter::wait_memory_ms] = 1500;
  b.memory = {{0, 100 * MiB}, {60, 9 * GiB}, {120, 1 * GiB}};
  b.events = {{30, EventKind::freeze, 1, "pressure"}, {31, EventKind::thaw, 1, ""}};
  for (int i = 0; i < 2; ++i) {
    JobRecord j;
    j.key.tool = "nvcc";
    j.key.identity = fmt::format("nvcc:compile:src/k{}.cu->obj/k{}.o[sm_80]", i, i);
    j.key.klass = "nvcc:compile[sm_80]";
    j.key.stem = fmt::format("k{}", i);
    j.argv_digest = "0123456789abcdef";
    j.cwd = b.cwd;
    j.submit_s = i;
    j.start_s = i + 1;
    j.end_s = i + 100;
    j.cpu_s = 95;
    j.peak_bytes = 4 * GiB;
    j.t_peak_s = 20;
    j.peak_over_frac = 0.3;
    j.after_peak_bytes = GiB;
    j.predicted.peak = 5 * GiB;
    j.attempts = 2;
    j.attempt_log = {{1, 40, Outcome::requeued, 3 * GiB}, {41, 100, Outcome::ok, 4 * GiB}};
    j.profile = {{0, 10 * MiB}, {20, 4 * GiB}, {90, GiB}};
    b.jobs.push_back(j);
  }
  return b;
}

// A private scratch directory, on tmpfs when there is one (fast, and
// nothing is left on disk). Every file in it is removed after each run.
const std::string& scratch_dir() {
  // Never destroyed: the atexit hook below runs after static destructors.
  static const std::string& dir = *new std::string([] {
    std::string base = "/dev/shm";
    if (::access(base.c_str(), W_OK) != 0) {
      const char* t = std::getenv("TMPDIR");
      base = t && *t ? t : "/tmp";
    }
    std::string templ = base + "/memgate-fuzz-history-XXXXXX";
    if (!::mkdtemp(templ.data())) fuzz::invariant_failed("mkdtemp");
    std::atexit([] {
      std::error_code ec;
      std::filesystem::remove_all(scratch_dir(), ec);
    });
    return templ;
  }());
  return dir;
}

void clear_scratch() {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(scratch_dir(), ec)) std::filesystem::remove(e.path(), ec);
}

std::string db_path() { return scratch_dir() + "/history.db"; }

bool write_bytes(const std::string& path, std::string_view bytes) {
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return false;
  bool ok = std::fwrite(bytes.data(), 1, bytes.size(), f) == bytes.size();
  return std::fclose(f) == 0 && ok;
}

// The bytes of a real history database holding sample_build().
const std::string& template_db() {
  static const std::string bytes = [] {
    clear_scratch();
    {
      auto h = History::open(db_path(), 100);
      if (!h.ok() || !(*h)->save_build(sample_build()).ok()) fuzz::invariant_failed("template history");
    }
    auto text = read_file(db_path());
    if (!text) fuzz::invariant_failed("template history read");
    clear_scratch();
    return *text;
  }();
  return bytes;
}

void apply_edits(FuzzedDataProvider& in) {
  auto db = sql::Db::open(db_path(), 100);
  if (!db.ok()) return;
  for (int n = 0; n < 8 && in.remaining_bytes() > 0; ++n) {
    const bool builds = in.ConsumeBool();
    if (in.ConsumeIntegralInRange(0, 15) == 0) {
      (void)db->exec(fmt::format("PRAGMA user_version = {}", in.ConsumeIntegralInRange(-2, 5)));
      continue;
    }
    const char* column = builds ? in.PickValueInArray(kBuildColumns) : in.PickValueInArray(kJobColumns);
    auto st = db->prepare(fmt::format("UPDATE {} SET {} = ?1", builds ? "builds" : "jobs", column));
    if (!st.ok()) continue;
    switch (in.ConsumeIntegralInRange(0, 4)) {
      case 0: st->bind(1, in.ConsumeIntegral<std::int64_t>()); break;
      case 1: st->bind(1, in.ConsumeFloatingPoint<double>()); break;
      case 2: st->bind(1, std::string_view(in.ConsumeRandomLengthString(512))); break;
      case 3: st->bind_null(1); break;
      default: {
        // Text that is nearly a valid stored value: JSON with a number
        // swapped in, where the codecs read counters, series, events and
        // attempts.
        std::string number = in.ConsumeRandomLengthString(40);
        std::string json = fmt::format(
            "{{\"admitted\":{0},\"wait_memory_ms\":{0}}}|[[{0},{0}]]|[{{\"t_s\":{0},\"kind\":\"freeze\",\"job\":{0}}}]",
            number);
        (void)st->bind(1, std::string_view(json).substr(0, in.ConsumeIntegralInRange<std::size_t>(0, json.size())));
        break;
      }
    }
    (void)st->run();
  }
}

// Every read memgate makes, and one write.
void exercise(History& h) {
  for (const BuildSummary& s : h.list_builds(0)) {
    if (auto b = h.load_build(s.id)) (void)summarize_build(*b);
  }
  (void)h.last_build_id({});
  (void)h.last_build_id({std::string("/src/app/build"), std::string("ninja -j8"), true});
  (void)h.jobs_for_prediction(20);
  if (auto id = h.save_build(sample_build()); id.ok()) FUZZ_CHECK(h.load_build(*id).has_value());
}

}  // namespace

// MEMGATE_FUZZ_HISTORY_SEED=FILE: write the real database as a raw-mode
// seed (tests/fuzz/corpus/history/) and exit.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  log::set_sink([](log::Level, std::string_view) {});
  const std::string& db = template_db();
  if (const char* seed = std::getenv("MEMGATE_FUZZ_HISTORY_SEED")) {
    std::_Exit(write_bytes(seed, std::string(1, '\0') + db) ? 0 : 1);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  clear_scratch();
  if (data[0] % 2 == 0) {
    if (!write_bytes(db_path(), fuzz::as_text(data + 1, size - 1))) return 0;
  } else {
    if (!write_bytes(db_path(), template_db())) return 0;
    FuzzedDataProvider in(data + 1, size - 1);
    apply_edits(in);
  }
  if (auto h = History::open(db_path(), 100); h.ok()) exercise(**h);
  clear_scratch();
  return 0;
}
