// Where this process sits in the cgroup hierarchies, how much memory they
// allow it, and a handle to one cgroup that works the same on v1 and v2.
//
// Version rule: v1 if a v1 hierarchy carries the memory controller; else v2
// if the unified hierarchy's root lists "memory" in cgroup.controllers; else
// none. (A machine may mount an empty cgroup2 at /sys/fs/cgroup/unified next
// to v1 controllers; that one must not count as memory control.)
//
// Every operation returns a value and never throws: a cgroup that vanished
// or a file the kernel lacks is a nullopt or an Error, for policy to judge.
#pragma once

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "platform/cgroup_files.hpp"
#include "platform/psi.hpp"
#include "util/result.hpp"
#include "util/size.hpp"

namespace memgate::platform {

// Absolute directories of THIS process's cgroups. Empty strings mean "not
// available". The *_root fields are the mount points of the hierarchies,
// where every upward walk stops.
struct CgroupLayout {
  CgroupVersion version = CgroupVersion::none;  // memory control
  std::string memory_dir, freezer_dir, cpu_dir;
  std::string memory_root, freezer_root, cpu_root;
  CgroupVersion cpu_version = CgroupVersion::none;  // v1 cpu controller, or the v2 tree
};

// Pure apart from reading `cgroup.controllers` of a v2 mount under
// fs_prefix; fs_prefix ("" for the real machine) lets tests point at a fake
// cgroupfs under tests/fixtures. Unparsable input gives version none.
CgroupLayout detect_cgroups(std::string_view proc_self_cgroup, std::string_view mountinfo,
                            const std::string& fs_prefix = "");
// Reads /proc/self/cgroup and /proc/self/mountinfo.
CgroupLayout detect_cgroups();

// `dir`, its parent, ... up to and including `root` (pure). Just `dir` if
// it does not lie below `root`.
std::vector<std::string> walk_up(const std::string& dir, const std::string& root);

struct MemoryLimit {
  Bytes bytes = 0;
  std::string dir;  // the cgroup whose file set it
};

// The smallest memory limit from `dir` up to `root`: v1 memory.limit_in_bytes;
// v2 the smaller of memory.max and memory.high, because above memory.high
// the kernel throttles and reclaims hard, which is the thrashing memgate
// exists to avoid. nullopt when nothing on the way limits memory.
std::optional<MemoryLimit> effective_memory_limit(CgroupVersion version, const std::string& dir,
                                                  const std::string& root);
std::optional<MemoryLimit> effective_memory_limit(const CgroupLayout& layout);

// MEMGATE_NO_FREEZER=1 turns the cgroup freezer off: memgate then pauses
// jobs with SIGSTOP/SIGCONT, as where no freezer exists. For tests of that
// degraded mode, and for kernels whose freezer misbehaves.
bool freezer_forced_off();

class Cgroup {
 public:
  Cgroup() = default;
  // A handle to an existing cgroup; nothing is checked (tests use fixture
  // dirs). v1: a memory dir and an optional freezer dir; v2: one dir.
  static Cgroup open(CgroupVersion version, std::string memory_dir, std::string freezer_dir = "");
  // This process's own cgroup (to read usage, not to create or remove).
  static Cgroup self(const CgroupLayout& layout);

  // mkdir `name` below our own cgroups: the memory hierarchy and, on v1, the
  // freezer hierarchy when there is one (a freezer that cannot be created is
  // left out, not an error). v2: where our own cgroup holds processes (as a
  // login shell's does), they all move into a leaf beside the new cgroup
  // first, and `parent` is updated to that leaf, where memgate now is; see
  // cgroup_v2.hpp. remove() undoes that when the last memgate leaves.
  static Result<Cgroup> create_under(CgroupLayout& parent, const std::string& name);
  Result<Cgroup> create_child(const std::string& name) const;
  // This cgroup, with its memory directory held open (O_PATH): its
  // children's reads of memory in use, peak, CPU time and members (what
  // a tick reads per job) then open their files relative to it, walking
  // two components of the path, not all eight from /sys (a tenth of
  // memgate's CPU at 2000 jobs). Unchanged where it cannot be opened.
  Cgroup with_open_dir() const;
  // rmdir this cgroup and any (empty) child cgroups left below it. Retries
  // for a short while on EBUSY, which the kernel returns while a cgroup's
  // last processes are still being torn down. A cgroup already gone is fine.
  // A cgroup from create_under on v2 also releases the leaf move.
  Status remove() const;
  // remove() without waiting: one rmdir each, so a cgroup whose last
  // processes are still being torn down stays (an Error) for a later try.
  Status remove_now() const;

  // v1 memory.limit_in_bytes (v1 has no memory.high; `high` is ignored);
  // v2 memory.max and memory.high ("max" when `high` is nullopt).
  Status set_memory_limit(Bytes hard, std::optional<Bytes> high = std::nullopt) const;
  std::optional<LimitValue> memory_limit() const;
  std::optional<Bytes> usage() const;          // v1 usage_in_bytes; v2 memory.current
  std::optional<Bytes> peak() const;           // v1 max_usage_in_bytes; v2 memory.peak (5.19+)
  std::optional<Bytes> inactive_file() const;  // reclaimable page cache, from memory.stat
  // CPU time of everything in it, in seconds: v2 cpu.stat usage_usec; v1
  // cpuacct.usage where cpuacct is mounted with memory (nullopt otherwise).
  std::optional<double> cpu_s() const;
  // v1 writes 0 to max_usage_in_bytes. v2 resets memory.peak only for the
  // file descriptor that wrote it, which a handle like this cannot keep, so
  // v2 returns an Error: use a fresh cgroup per attempt instead.
  Status reset_peak() const;

  // OOM kills in this cgroup AND below it. v2 memory.events is already
  // hierarchical; the v1 oom_control counter is local to the victim's
  // cgroup (it does not propagate to parents), so v1 sums the subtree.
  std::optional<std::int64_t> oom_kills() const;
  std::optional<bool> under_oom() const;  // v1 only; nullopt on v2

  // Writes cgroup.procs in every hierarchy dir of this cgroup.
  Status add_process(pid_t pid) const;
  std::vector<pid_t> processes() const;      // direct members
  std::vector<pid_t> all_processes() const;  // members of this cgroup and every child cgroup
  // ... except the child cgroups (and their subtrees) whose name starts
  // with `skip` (a job's own cgroups, which need no reading).
  std::vector<pid_t> all_processes_except(std::string_view skip) const;

  // False when MEMGATE_NO_FREEZER is set (see freezer_forced_off).
  bool can_freeze() const;
  Status freeze(bool frozen) const;  // v1 freezer.state FROZEN/THAWED; v2 cgroup.freeze 1/0
  // Whether the freeze has completed: v1 FREEZING counts as not yet frozen;
  // v2 reads "frozen" from cgroup.events, not the request in cgroup.freeze.
  std::optional<bool> frozen() const;

  // Memory stalls of this cgroup's own processes (v2 memory.pressure; v1
  // only where the kernel offers it): nullopt where there is no such file.
  std::optional<Psi> pressure() const;

  // Ends every process in this cgroup and below, and waits (briefly,
  // bounded) until they are gone. v2 writes cgroup.kill where the kernel has
  // it (5.14+); otherwise SIGKILL each listed pid, repeating while new ones
  // appear. A frozen v1 cgroup is thawed after the SIGKILLs are queued, since
  // a frozen task cannot act on them.
  Status kill_all() const;
  // Thaws this cgroup and every cgroup below it (a v1 child frozen on its
  // own stays frozen when its parent thaws; v2 likewise keeps a child's own
  // cgroup.freeze). Best effort: what cannot be thawed is left.
  void thaw_all() const;

  CgroupVersion version() const { return version_; }
  const std::string& memory_dir() const { return memory_dir_; }
  const std::string& freezer_dir() const { return freezer_dir_; }  // v2: same as memory_dir
  bool valid() const { return version_ != CgroupVersion::none && !memory_dir_.empty(); }

 private:
  Cgroup(CgroupVersion v, std::string memory_dir, std::string freezer_dir)
      : version_(v), memory_dir_(std::move(memory_dir)), freezer_dir_(std::move(freezer_dir)) {}
  std::string mem_file(std::string_view name) const;
  // A file of the memory dir: through the held directory where there is
  // one (with_open_dir), else by its whole path.
  std::optional<std::string> read_mem(std::string_view name) const;
  std::vector<std::string> dirs() const;  // memory dir, then a distinct freezer dir
  Status remove_trying(int tries) const;

  CgroupVersion version_ = CgroupVersion::none;
  std::string memory_dir_, freezer_dir_;
  std::string release_base_;  // v2: the cgroup whose leaf move remove() releases
  struct OpenDir {
    int fd = -1;
    explicit OpenDir(int f) : fd(f) {}
    OpenDir(const OpenDir&) = delete;
    OpenDir& operator=(const OpenDir&) = delete;
    ~OpenDir();
  };
  std::shared_ptr<const OpenDir> at_;  // a memory dir held open: this one's or an ancestor's
  std::string at_rel_;                 // memory_dir_ relative to it ("" for the dir itself)
};

// The memory stalls that may freeze a build: the build cgroup's own
// memory.pressure where the kernel has one (cgroup v2), so that pressure
// other tenants cause does not freeze the build; else, or without a build
// cgroup, the machine's /proc/pressure/memory. `source` says which.
struct BuildPressure {
  std::optional<Psi> psi;
  const char* source = "none";  // "build cgroup", "machine" or "none"
};
BuildPressure build_memory_pressure(const Cgroup* build);

}  // namespace memgate::platform
