// Parsers, layout detection and the limit walk, against recorded (v1) and
// hand-written (v2) fixture trees. No real cgroup is touched here; see
// platform_cgroup_live_test.cpp for that.
#include "platform/cgroup.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

#include "fixtures.hpp"
#include "util/fs.hpp"

using namespace memgate;
using namespace memgate::platform;
using memgate::test::fixture;
using memgate::test::layout_of;
const std::string kFix = memgate::test::kFixtures;

namespace {
const std::string kV1Me = "/sys/fs/cgroup/memory/process_api/c2ae30854f5ab5eda091ee4d3e270dec";

}  // namespace

TEST(ProcCgroup, ParsesV1V2AndNamedLines) {
  auto cg = parse_proc_cgroup(fixture("proc/self_cgroup.v1"));
  ASSERT_TRUE(cg);
  ASSERT_EQ(cg->size(), 10u);
  EXPECT_EQ((*cg)[0].controllers, std::vector<std::string>{"name=systemd"});
  EXPECT_EQ((*cg)[5].hierarchy_id, 4);
  EXPECT_EQ((*cg)[5].controllers, std::vector<std::string>{"memory"});
  EXPECT_EQ((*cg)[5].path, "/process_api/c2ae30854f5ab5eda091ee4d3e270dec");
  EXPECT_EQ((*cg)[9].hierarchy_id, 0);
  EXPECT_TRUE((*cg)[9].controllers.empty());

  auto combined = parse_proc_cgroup("2:cpu,cpuacct:/x:y\n");
  ASSERT_TRUE(combined);
  EXPECT_EQ((*combined)[0].controllers, (std::vector<std::string>{"cpu", "cpuacct"}));
  EXPECT_EQ((*combined)[0].path, "/x:y");

  auto v2 = parse_proc_cgroup(fixture("proc/self_cgroup.v2"));
  ASSERT_TRUE(v2);
  EXPECT_EQ((*v2)[0].path, "/user.slice/user-1000.slice/session-2.scope");
}

TEST(ProcCgroup, MalformedAndTruncatedAreUnknown) {
  EXPECT_FALSE(parse_proc_cgroup(fixture("proc/self_cgroup.malformed")));
  EXPECT_FALSE(parse_proc_cgroup(fixture("proc/self_cgroup.truncated")));
  EXPECT_FALSE(parse_proc_cgroup(""));
  EXPECT_FALSE(parse_proc_cgroup("0:memory:/\n"));  // id 0 is v2, which has no controllers
  EXPECT_FALSE(parse_proc_cgroup("x::/\n"));
}

TEST(Mountinfo, FindsV1ControllersAndTheV2Mount) {
  auto m = parse_cgroup_mounts(fixture("proc/mountinfo.v1"));
  ASSERT_TRUE(m);
  ASSERT_EQ(m->size(), 10u);
  const CgroupMount* memory = nullptr;
  const CgroupMount* unified = nullptr;
  const CgroupMount* systemd = nullptr;
  for (const auto& x : *m) {
    if (x.mount_point == "/sys/fs/cgroup/memory") memory = &x;
    if (x.mount_point == "/sys/fs/cgroup/unified") unified = &x;
    if (x.mount_point == "/sys/fs/cgroup/systemd") systemd = &x;
  }
  ASSERT_TRUE(memory && unified && systemd);
  EXPECT_EQ(memory->version, CgroupVersion::v1);
  EXPECT_EQ(memory->controllers, std::vector<std::string>{"memory"});
  EXPECT_EQ(memory->root, "/");
  EXPECT_EQ(unified->version, CgroupVersion::v2);
  EXPECT_TRUE(unified->controllers.empty());
  EXPECT_EQ(systemd->controllers, std::vector<std::string>{"name=systemd"});
}

TEST(Mountinfo, DecodesEscapesAndOptionalFields) {
  auto m = parse_cgroup_mounts(
      "30 22 0:27 /a\\040b /sys/fs/cgroup/my\\040mem rw shared:5 master:1 - cgroup cgroup rw,nosuid,memory,xattr\n");
  ASSERT_TRUE(m);
  ASSERT_EQ(m->size(), 1u);
  EXPECT_EQ((*m)[0].root, "/a b");
  EXPECT_EQ((*m)[0].mount_point, "/sys/fs/cgroup/my mem");
  EXPECT_EQ((*m)[0].controllers, std::vector<std::string>{"memory"});
}

TEST(Mountinfo, MalformedAndTruncatedAreUnknown) {
  EXPECT_FALSE(parse_cgroup_mounts(fixture("proc/mountinfo.malformed")));
  EXPECT_FALSE(parse_cgroup_mounts(fixture("proc/mountinfo.truncated")));
  auto empty = parse_cgroup_mounts("");
  ASSERT_TRUE(empty);
  EXPECT_TRUE(empty->empty());
}

TEST(CgroupFiles, V1Limit) {
  auto unlimited = parse_v1_limit(fixture("cgroup1/host/sys/fs/cgroup/memory/memory.limit_in_bytes"));
  ASSERT_TRUE(unlimited);
  EXPECT_TRUE(unlimited->unlimited());
  auto three = parse_v1_limit(fixture("cgroup1/docker/sys/fs/cgroup/memory/memory.limit_in_bytes"));
  ASSERT_TRUE(three && three->bytes);
  EXPECT_EQ(*three->bytes, 3 * GiB);
  EXPECT_FALSE(parse_v1_limit(fixture("cgroup1/files/memory.limit_in_bytes.malformed")));
  EXPECT_FALSE(parse_v1_limit(fixture("cgroup1/files/memory.limit_in_bytes.truncated")));
}

TEST(CgroupFiles, V2Limit) {
  auto max = parse_v2_limit(fixture("cgroup2/files/memory.max.max"));
  ASSERT_TRUE(max);
  EXPECT_TRUE(max->unlimited());
  auto n = parse_v2_limit(fixture("cgroup2/files/memory.max.number"));
  ASSERT_TRUE(n && n->bytes);
  EXPECT_EQ(*n->bytes, 8 * GiB);
  EXPECT_FALSE(parse_v2_limit(fixture("cgroup2/files/memory.max.malformed")));
  EXPECT_FALSE(parse_v2_limit(fixture("cgroup2/files/memory.max.truncated")));
  EXPECT_FALSE(parse_v2_limit("-5\n"));
}

TEST(CgroupFiles, ByteCounts) {
  EXPECT_EQ(parse_bytes_file(fixture("cgroup1/files/oom.memory.max_usage_in_bytes")), 33554432);
  EXPECT_FALSE(parse_bytes_file(""));
  EXPECT_FALSE(parse_bytes_file("12 34\n"));
}

TEST(CgroupFiles, OomControlRecordedAfterARealOomKill) {
  auto oc = parse_oom_control(fixture("cgroup1/files/oom.memory.oom_control"));
  ASSERT_TRUE(oc && oc->oom_kill);
  EXPECT_EQ(*oc->oom_kill, 1);
  EXPECT_FALSE(oc->under_oom);
  auto clean = parse_oom_control(fixture("cgroup1/files/memory.oom_control.clean"));
  ASSERT_TRUE(clean && clean->oom_kill);
  EXPECT_EQ(*clean->oom_kill, 0);
  auto old = parse_oom_control(fixture("cgroup1/files/memory.oom_control.old_kernel"));
  ASSERT_TRUE(old);
  EXPECT_FALSE(old->oom_kill);
  EXPECT_TRUE(old->under_oom);
  EXPECT_FALSE(parse_oom_control(fixture("cgroup1/files/memory.oom_control.malformed")));
  EXPECT_FALSE(parse_oom_control(fixture("cgroup1/files/memory.oom_control.truncated")));
}

TEST(CgroupFiles, MemoryEvents) {
  auto ev = parse_memory_events(fixture("cgroup2/files/memory.events"));
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->oom_kill, 2);
  EXPECT_EQ(ev->high, 12);
  EXPECT_FALSE(parse_memory_events(fixture("cgroup2/files/memory.events.malformed")));
  EXPECT_FALSE(parse_memory_events(fixture("cgroup2/files/memory.events.truncated")));  // oom_kill cut off
}

TEST(CgroupFiles, InactiveFile) {
  EXPECT_EQ(parse_inactive_file(fixture("cgroup2/host/sys/fs/cgroup/build.slice/ci.scope/job/memory.stat"),
                                CgroupVersion::v2),
            402653184);
  EXPECT_EQ(parse_inactive_file(fixture("cgroup1/files/oom.memory.stat"), CgroupVersion::v1), 61440);
  EXPECT_FALSE(parse_inactive_file(fixture("cgroup2/files/memory.stat.truncated"), CgroupVersion::v2));
  EXPECT_FALSE(parse_inactive_file(fixture("cgroup1/files/memory.stat.truncated"), CgroupVersion::v1));
}

TEST(CgroupFiles, FreezerStates) {
  EXPECT_EQ(parse_freezer_state(fixture("cgroup1/files/freezer.state.thawed")), FreezerState::thawed);
  EXPECT_EQ(parse_freezer_state(fixture("cgroup1/files/freezer.state.frozen")), FreezerState::frozen);
  EXPECT_EQ(parse_freezer_state(fixture("cgroup1/files/freezer.state.freezing")), FreezerState::freezing);
  EXPECT_FALSE(parse_freezer_state(fixture("cgroup1/files/freezer.state.malformed")));
  EXPECT_FALSE(parse_freezer_state(""));
  EXPECT_EQ(parse_cgroup_freeze(fixture("cgroup2/files/cgroup.freeze.1")), true);
  EXPECT_EQ(parse_cgroup_freeze("0\n"), false);
  EXPECT_FALSE(parse_cgroup_freeze(fixture("cgroup2/files/cgroup.freeze.malformed")));
  EXPECT_EQ(parse_events_frozen(fixture("cgroup2/files/cgroup.events.frozen")), true);
  EXPECT_EQ(parse_events_populated(fixture("cgroup2/files/cgroup.events.thawed")), false);
  EXPECT_FALSE(parse_events_frozen(fixture("cgroup2/files/cgroup.events.malformed")));
}

TEST(CgroupFiles, Procs) {
  EXPECT_EQ(parse_cgroup_procs(fixture("cgroup1/files/cgroup.procs.one")), std::vector<pid_t>{7177});
  EXPECT_EQ(parse_cgroup_procs(fixture("cgroup2/files/cgroup.procs.two")), (std::vector<pid_t>{4242, 4243}));
  EXPECT_EQ(parse_cgroup_procs(""), std::vector<pid_t>{});
  EXPECT_FALSE(parse_cgroup_procs(fixture("cgroup2/files/cgroup.procs.malformed")));
  EXPECT_FALSE(parse_cgroup_procs(fixture("cgroup2/files/cgroup.procs.truncated")));
  EXPECT_FALSE(parse_cgroup_procs(fixture("cgroup1/files/cgroup.procs.truncated")));
}

TEST(CgroupFiles, Controllers) {
  EXPECT_EQ(parse_controllers(fixture("cgroup1/host/sys/fs/cgroup/unified/cgroup.controllers")),
            std::vector<std::string>{"hugetlb"});
  EXPECT_TRUE(parse_controllers("\n").empty());
}

TEST(DetectCgroups, ThisMachineIsV1AndTheEmptyUnifiedMountIsIgnored) {
  auto l = layout_of("cgroup1/host");
  EXPECT_EQ(l.version, CgroupVersion::v1);
  std::string root = kFix + "/cgroup1/host/sys/fs/cgroup";
  EXPECT_EQ(l.memory_dir, root + "/memory" + kV1Me.substr(21) + "/memgate-fixture/inner/leaf");
  EXPECT_EQ(l.memory_root, root + "/memory");
  EXPECT_EQ(l.freezer_dir, root + "/freezer");
  EXPECT_EQ(l.cpu_version, CgroupVersion::v1);
  EXPECT_EQ(l.cpu_dir, root + "/cpu");
}

TEST(DetectCgroups, V1ContainerWithBindMountedSubtree) {
  auto l = layout_of("cgroup1/docker");
  std::string root = kFix + "/cgroup1/docker/sys/fs/cgroup";
  EXPECT_EQ(l.version, CgroupVersion::v1);
  EXPECT_EQ(l.memory_dir, root + "/memory");
  EXPECT_EQ(l.freezer_dir, root + "/freezer");
  EXPECT_EQ(l.cpu_dir, root + "/cpu,cpuacct");
}

TEST(DetectCgroups, V2HostNestedScope) {
  auto l = layout_of("cgroup2/host");
  std::string root = kFix + "/cgroup2/host/sys/fs/cgroup";
  EXPECT_EQ(l.version, CgroupVersion::v2);
  EXPECT_EQ(l.memory_dir, root + "/build.slice/ci.scope/job");
  EXPECT_EQ(l.freezer_dir, l.memory_dir);
  EXPECT_EQ(l.memory_root, root);
  EXPECT_EQ(l.cpu_version, CgroupVersion::v2);
}

TEST(DetectCgroups, V2WithoutMemoryControllerIsNone) {
  auto l = layout_of("cgroup2/nomemory");
  EXPECT_EQ(l.version, CgroupVersion::none);
  EXPECT_TRUE(l.memory_dir.empty());
  EXPECT_EQ(l.cpu_version, CgroupVersion::v2);  // cpu is still there
}

TEST(DetectCgroups, GarbageIsNone) {
  auto l = detect_cgroups(fixture("proc/self_cgroup.truncated"), fixture("proc/mountinfo.v1"), "/nonexistent");
  EXPECT_EQ(l.version, CgroupVersion::none);
  l = detect_cgroups(fixture("proc/self_cgroup.v1"), fixture("proc/mountinfo.malformed"), "/nonexistent");
  EXPECT_EQ(l.version, CgroupVersion::none);
  EXPECT_EQ(detect_cgroups("", "", "").version, CgroupVersion::none);
}

TEST(WalkUp, StopsAtTheRoot) {
  EXPECT_EQ(walk_up("/r/a/b", "/r"), (std::vector<std::string>{"/r/a/b", "/r/a", "/r"}));
  EXPECT_EQ(walk_up("/r/a/b/", "/r/"), (std::vector<std::string>{"/r/a/b", "/r/a", "/r"}));
  EXPECT_EQ(walk_up("/r", "/r"), (std::vector<std::string>{"/r"}));
  EXPECT_EQ(walk_up("/rx/a", "/r"), (std::vector<std::string>{"/rx/a"}));
  EXPECT_EQ(walk_up("/a/b", "/"), (std::vector<std::string>{"/a/b", "/a", "/"}));
}

TEST(EffectiveLimit, V1NestedTakesTheSmallestOnTheWay) {
  auto lim = effective_memory_limit(layout_of("cgroup1/host"));
  ASSERT_TRUE(lim);
  EXPECT_EQ(lim->bytes, 3 * GiB);  // leaf says 8G, but its grandparent says 3G
  EXPECT_EQ(lim->dir, kFix + "/cgroup1/host/sys/fs/cgroup/memory" + kV1Me.substr(21) + "/memgate-fixture");
}

TEST(EffectiveLimit, V1UnlimitedChainIsNoLimit) {
  std::string root = kFix + "/cgroup1/host/sys/fs/cgroup/memory";
  EXPECT_FALSE(effective_memory_limit(CgroupVersion::v1, root + kV1Me.substr(21), root));
}

TEST(EffectiveLimit, V1ContainerLimitAtTheMountRoot) {
  auto lim = effective_memory_limit(layout_of("cgroup1/docker"));
  ASSERT_TRUE(lim);
  EXPECT_EQ(lim->bytes, 3 * GiB);
}

TEST(EffectiveLimit, V2NestedTreeWalk) {
  auto lim = effective_memory_limit(layout_of("cgroup2/host"));
  ASSERT_TRUE(lim);
  EXPECT_EQ(lim->bytes, 8 * GiB);  // job 16G max, ci.scope 12G high, build.slice 8G max
  EXPECT_EQ(lim->dir, kFix + "/cgroup2/host/sys/fs/cgroup/build.slice");
}

TEST(EffectiveLimit, V2MemoryHighCountsToo) {
  std::string root = kFix + "/cgroup2/host/sys/fs/cgroup";
  auto lim = effective_memory_limit(CgroupVersion::v2, root + "/build.slice/ci.scope/throttled", root);
  ASSERT_TRUE(lim);
  EXPECT_EQ(lim->bytes, 4 * GiB);
  EXPECT_EQ(lim->dir, root + "/build.slice/ci.scope/throttled");
}

TEST(EffectiveLimit, V2ContainerRoot) {
  auto lim = effective_memory_limit(layout_of("cgroup2/container"));
  ASSERT_TRUE(lim);
  EXPECT_EQ(lim->bytes, 3 * GiB);
}

TEST(EffectiveLimit, NoneOrMissingDirIsNoLimit) {
  EXPECT_FALSE(effective_memory_limit(layout_of("cgroup2/nomemory")));
  EXPECT_FALSE(effective_memory_limit(CgroupVersion::v1, "/nonexistent/a", "/nonexistent"));
}

TEST(CgroupHandle, FreezerCanBeForcedOff) {
  auto cg = Cgroup::open(CgroupVersion::v2, kFix + "/cgroup2/host/sys/fs/cgroup/build.slice/ci.scope/job");
  ASSERT_TRUE(cg.can_freeze());
  ::setenv("MEMGATE_NO_FREEZER", "1", 1);
  EXPECT_TRUE(freezer_forced_off());
  EXPECT_FALSE(cg.can_freeze());
  ::setenv("MEMGATE_NO_FREEZER", "0", 1);  // "0" means not set
  EXPECT_TRUE(cg.can_freeze());
  ::unsetenv("MEMGATE_NO_FREEZER");
  EXPECT_FALSE(freezer_forced_off());
}

TEST(CgroupHandle, ReadsV2FixtureFiles) {
  auto cg = Cgroup::open(CgroupVersion::v2, kFix + "/cgroup2/host/sys/fs/cgroup/build.slice/ci.scope/job");
  EXPECT_EQ(cg.freezer_dir(), cg.memory_dir());
  EXPECT_EQ(cg.usage(), 1610612736);
  EXPECT_EQ(cg.peak(), 3 * GiB);
  EXPECT_EQ(cg.inactive_file(), 402653184);
  EXPECT_EQ(cg.oom_kills(), 2);
  EXPECT_FALSE(cg.under_oom());
  EXPECT_EQ(cg.processes(), (std::vector<pid_t>{4242, 4243}));
  EXPECT_TRUE(cg.can_freeze());
  EXPECT_EQ(cg.frozen(), false);
  auto lim = cg.memory_limit();
  ASSERT_TRUE(lim && lim->bytes);
  EXPECT_EQ(*lim->bytes, 16 * GiB);
  EXPECT_FALSE(cg.reset_peak().ok());  // per-fd on v2: explained, not faked
  auto throttled = Cgroup::open(CgroupVersion::v2, kFix + "/cgroup2/host/sys/fs/cgroup/build.slice/ci.scope/throttled");
  EXPECT_EQ(throttled.frozen(), true);  // from cgroup.events
  EXPECT_FALSE(throttled.peak());       // no memory.peak on this kernel
}

TEST(CgroupHandle, ReadsRecordedV1Files) {
  std::string leaf = kFix + "/cgroup1/host/sys/fs/cgroup/memory" + kV1Me.substr(21) + "/memgate-fixture/inner/leaf";
  auto cg = Cgroup::open(CgroupVersion::v1, leaf);
  EXPECT_TRUE(cg.usage().has_value());
  EXPECT_TRUE(cg.peak().has_value());
  EXPECT_EQ(cg.oom_kills(), 0);
  EXPECT_EQ(cg.under_oom(), false);
  EXPECT_FALSE(cg.can_freeze());  // no freezer dir given
  EXPECT_FALSE(cg.frozen());
  EXPECT_EQ(cg.processes().size(), 1u);
  auto lim = cg.memory_limit();
  ASSERT_TRUE(lim && lim->bytes);
  EXPECT_EQ(*lim->bytes, 8 * GiB);
}

TEST(CgroupHandle, VanishedCgroupIsValuesNotErrors) {
  auto cg = Cgroup::open(CgroupVersion::v1, "/nonexistent/memgate-gone", "/nonexistent/freezer-gone");
  EXPECT_FALSE(cg.usage());
  EXPECT_FALSE(cg.peak());
  EXPECT_FALSE(cg.oom_kills());
  EXPECT_FALSE(cg.frozen());
  EXPECT_TRUE(cg.processes().empty());
  EXPECT_FALSE(cg.can_freeze());
  EXPECT_TRUE(cg.remove().ok());  // already gone is done
  EXPECT_TRUE(cg.kill_all().ok());  // nothing left to kill
  EXPECT_FALSE(cg.add_process(1).ok());
}

TEST(CgroupHandle, CreateRefusesBadNamesAndNoCgroups) {
  CgroupLayout none;
  EXPECT_FALSE(Cgroup::create_under(none, "x").ok());
  auto cg = Cgroup::open(CgroupVersion::v1, "/nonexistent");
  EXPECT_FALSE(cg.create_child("../escape").ok());
  EXPECT_FALSE(cg.create_child("").ok());
}

TEST(CgroupCpu, ReadsCpuacctUsageAndCpuStat) {
  // v1 cpuacct.usage recorded on this machine's root; v2 cpu.stat as the kernel writes it.
  auto v1 = parse_cpuacct_usage(fixture("cgroup1/files/cpuacct.usage"));
  ASSERT_TRUE(v1);
  EXPECT_NEAR(*v1, 656.218083845, 1e-6);
  EXPECT_FALSE(parse_cpuacct_usage(fixture("cgroup1/files/cpuacct.usage.truncated_no_newline")));
  EXPECT_FALSE(parse_cpuacct_usage(fixture("cgroup1/files/cpuacct.usage.malformed")));
  EXPECT_FALSE(parse_cpuacct_usage(""));
  auto v2 = parse_cpu_stat_usage(fixture("cgroup2/files/cpu.stat"));
  ASSERT_TRUE(v2);
  EXPECT_NEAR(*v2, 8.123456, 1e-9);
  EXPECT_FALSE(parse_cpu_stat_usage(fixture("cgroup2/files/cpu.stat.no_usage")));
  EXPECT_FALSE(parse_cpu_stat_usage(fixture("cgroup2/files/cpu.stat.truncated")));
}
