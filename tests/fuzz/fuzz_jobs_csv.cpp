// The measured-jobs CSV reader (src/plan/jobs_csv.hpp, `memgate plan
// --jobs-csv`): parse_jobs_csv, then the table as a workload; and the
// per-job profile CSVs (parse_profile_csv), which get the same input.
// Input: byte 0 picks the nvcc shape (--threads and target count), the
// rest is the table.
#include <cmath>
#include <cstddef>
#include <cstdint>

#include "fuzz_input.hpp"
#include "plan/jobs_csv.hpp"

using namespace memgate;
using namespace memgate::plan;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  NvccShape shape{1 + data[0] % 4, 1 + (data[0] >> 2) % 8};
  std::string_view text = fuzz::as_text(data + 1, size - 1);

  (void)parse_profile_csv(text);
  (void)count_targets(text);
  auto rows = parse_jobs_csv(text);
  if (!rows.ok()) return 0;
  for (MeasuredRow& r : *rows) {
    FUZZ_CHECK(r.target_count >= 1);
    FUZZ_CHECK(r.nvcc_threads >= 1);
    // A row may name a profile; give it one made of the same text.
    r.samples = parse_profile_csv(text);
  }
  auto workload = workload_from_measurements(*rows, shape);
  if (!workload.ok()) return 0;
  for (const PlanJob& j : workload->jobs) {
    FUZZ_CHECK(std::isfinite(j.work_s) && j.work_s >= 0);
    FUZZ_CHECK(j.threads >= 1);
    FUZZ_CHECK(j.peak >= 0);
  }
  return 0;
}
