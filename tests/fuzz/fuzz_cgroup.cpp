// The cgroup parsers of src/platform: /proc/self/cgroup, mountinfo, v1 and
// v2 limits, byte counters, memory.stat and the other "key value" files,
// memory.oom_control, memory.events, freezer.state, cgroup.freeze,
// cgroup.events, cgroup.procs, cgroup.controllers, cpu.max and the v1 CFS
// quota, and detect_cgroups over /proc/self/cgroup + mountinfo.
//
// Every single-file parser gets the whole input. Two-file parsers
// (detect_cgroups, parse_cfs_quota) split it at the first NUL byte, or
// use the whole input for both halves when there is none.
#include <cstddef>
#include <cstdint>

#include "fuzz_input.hpp"
#include "platform/cgroup.hpp"
#include "platform/cgroup_files.hpp"
#include "platform/cpu.hpp"

using namespace memgate;
using namespace memgate::platform;

namespace {

// A cgroupfs that does not exist: detect_cgroups reads cgroup.controllers
// below it, and must find nothing (and read nothing real).
constexpr const char* kNoFs = "/nonexistent-memgate-fuzz";

void single_files(std::string_view text) {
  (void)parse_proc_cgroup(text);
  (void)parse_cgroup_mounts(text);
  if (auto l = parse_v1_limit(text); l && l->bytes) FUZZ_CHECK(*l->bytes >= 0);
  if (auto l = parse_v2_limit(text); l && l->bytes) FUZZ_CHECK(*l->bytes >= 0);
  if (auto b = parse_bytes_file(text)) FUZZ_CHECK(*b >= 0);
  (void)parse_keyed(text);
  (void)parse_oom_control(text);
  (void)parse_memory_events(text);
  (void)parse_inactive_file(text, CgroupVersion::v1);
  (void)parse_inactive_file(text, CgroupVersion::v2);
  (void)parse_freezer_state(text);
  (void)parse_cgroup_freeze(text);
  (void)parse_events_frozen(text);
  (void)parse_events_populated(text);
  (void)parse_cgroup_procs(text);
  (void)parse_controllers(text);
  if (auto q = parse_cpu_max(text)) {
    if (auto cores = quota_cores(*q)) FUZZ_CHECK(*cores >= 1);
    FUZZ_CHECK(usable_cores(64, quota_cores(*q)) >= 1);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view text = fuzz::as_text(data, size);
  single_files(text);

  std::string_view first = text, second = text;
  if (size_t nul = text.find('\0'); nul != std::string_view::npos) {
    first = text.substr(0, nul);
    second = text.substr(nul + 1);
  }
  if (auto q = parse_cfs_quota(first, second)) {
    if (auto cores = quota_cores(*q)) FUZZ_CHECK(*cores >= 1);
  }
  CgroupLayout layout = detect_cgroups(first, second, kNoFs);
  for (const std::string* dir : {&layout.memory_dir, &layout.freezer_dir, &layout.cpu_dir}) {
    // walk_up stops at the mount point, and never loops.
    if (!dir->empty()) FUZZ_CHECK(walk_up(*dir, layout.memory_root).size() <= dir->size() + 1);
  }
  return 0;
}
