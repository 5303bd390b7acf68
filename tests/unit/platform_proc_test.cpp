#include "platform/proc.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include <gtest/gtest.h>

#include "fixtures.hpp"
#include "util/fs.hpp"

using namespace memgate;
using namespace memgate::platform;
using memgate::test::fixture;

namespace {
const std::string kTree = std::string(MEMGATE_FIXTURES) + "/proc/tree";

std::vector<pid_t> sorted(std::vector<pid_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}
}  // namespace

TEST(ProcStat, ParsesRecordedFile) {
  auto st = parse_proc_stat(fixture("proc/stat"));
  ASSERT_TRUE(st);
  EXPECT_EQ(st->pid, 7080);
  EXPECT_EQ(st->comm, "sleep");
  EXPECT_EQ(st->state, 'S');
  EXPECT_EQ(st->ppid, 7073);
  EXPECT_EQ(st->pgrp, 7071);
  EXPECT_EQ(st->session, 4822);
  EXPECT_EQ(st->starttime, 76455u);
  EXPECT_EQ(st->rss_pages, 421);
}

TEST(ProcStat, CommWithSpacesAndParenthesesEndsAtTheLastParen) {
  auto st = parse_proc_stat(fixture("proc/stat.weird_comm"));
  ASSERT_TRUE(st);
  EXPECT_EQ(st->pid, 4242);
  EXPECT_EQ(st->comm, "a) b (c)");
  EXPECT_EQ(st->state, 'S');
  EXPECT_EQ(st->ppid, 7073);
  EXPECT_EQ(st->starttime, 76455u);
}

TEST(ProcStat, KernelThreadParses) {
  auto st = parse_proc_stat(fixture("proc/stat.kthread"));
  ASSERT_TRUE(st);
  EXPECT_EQ(st->comm, "kthreadd");
  EXPECT_EQ(st->ppid, 0);
}

TEST(ProcStat, MalformedAndTruncatedAreUnknown) {
  EXPECT_FALSE(parse_proc_stat(fixture("proc/stat.malformed")));
  EXPECT_FALSE(parse_proc_stat(fixture("proc/stat.truncated")));
  EXPECT_FALSE(parse_proc_stat(""));
  EXPECT_FALSE(parse_proc_stat("1 (x"));
  EXPECT_FALSE(parse_proc_stat(") 1 (x"));
}

TEST(ProcStatus, ParsesRecordedFile) {
  auto s = parse_proc_status(fixture("proc/status"));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->name, "sleep");
  EXPECT_EQ(s->state, 'S');
  EXPECT_EQ(s->ppid, 7073);
  EXPECT_EQ(s->uid, 0u);
  ASSERT_TRUE(s->vm_rss);
  EXPECT_EQ(*s->vm_rss, 1796 * KiB);
}

TEST(ProcStatus, KernelThreadHasNoRss) {
  auto s = parse_proc_status(fixture("proc/status.kthread"));
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->vm_rss);
}

TEST(ProcStatus, MalformedAndTruncatedAreUnknown) {
  EXPECT_FALSE(parse_proc_status(fixture("proc/status.malformed")));  // no Uid
  EXPECT_FALSE(parse_proc_status(fixture("proc/status.truncated")));
  EXPECT_FALSE(parse_proc_status(""));
}

// A VmRSS beyond what fits in bytes is unknown, not an overflow (the
// same bound as /proc/meminfo's kB values).
TEST(ProcStatus, AnRssTooLargeForBytesIsUnknown) {
  const std::string head = "Name:\tcc1plus\nState:\tR (running)\nPPid:\t1\nUid:\t0\t0\t0\t0\n";
  auto s = parse_proc_status(head + "VmRSS:\t9223372036854775807 kB\n");
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->vm_rss);
  s = parse_proc_status(head + "VmRSS:\t2048 kB\n");
  ASSERT_TRUE(s);
  EXPECT_EQ(s->vm_rss, 2 * 1024 * 1024);
}

TEST(Cmdline, SplitsOnNul) {
  auto argv = parse_cmdline(fixture("proc/cmdline"));
  ASSERT_EQ(argv.size(), 2u);
  EXPECT_EQ(argv[0], "sleep");
  EXPECT_EQ(argv[1], "100");
  EXPECT_TRUE(parse_cmdline("").empty());
  EXPECT_EQ(parse_cmdline(std::string("a\0\0b\0", 5)), (std::vector<std::string>{"a", "", "b"}));
}

TEST(ProcTree, ListsOnlyNumericEntries) {
  auto pids = list_pids(kTree);
  EXPECT_EQ(pids.size(), 28u);
  EXPECT_TRUE(std::is_sorted(pids.begin(), pids.end()));
  EXPECT_EQ(pids.front(), 1);
  EXPECT_TRUE(list_pids("/nonexistent").empty());
}

TEST(ProcTree, ReadProcessCombinesStatAndStatus) {
  auto p = read_process(311, kTree);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->comm, "cicc");
  EXPECT_EQ(p->ppid, 310);
  EXPECT_EQ(p->uid, 1000u);
  EXPECT_EQ(p->rss, 6291456 * KiB);
  EXPECT_EQ(p->starttime, 511u);
  auto zombie = read_process(700, kTree);
  ASSERT_TRUE(zombie);
  EXPECT_EQ(zombie->state, 'Z');
  EXPECT_EQ(zombie->rss, 0);
  EXPECT_FALSE(read_process(12345, kTree));
}

TEST(ProcTree, TreeIsRootAndAllDescendants) {
  EXPECT_EQ(sorted(process_tree(200, kTree)), (std::vector<pid_t>{200, 210, 211, 212, 400, 401, 402, 403, 404}));
  auto tree = process_tree(310, kTree);
  ASSERT_FALSE(tree.empty());
  EXPECT_EQ(tree.front(), 310);
  EXPECT_EQ(sorted(tree), (std::vector<pid_t>{310, 311, 312}));
  EXPECT_TRUE(process_tree(9999, kTree).empty());
}

// Jobs measured from /proc in one tick share one scan; a later tick reads
// /proc again.
TEST(ProcTree, ASnapshotIsSharedWhileItIsFresh) {
  ProcSnapshot fresh(3600, kTree);
  EXPECT_EQ(sorted(descendants(310, fresh.all())), (std::vector<pid_t>{310, 311, 312}));
  EXPECT_EQ(sorted(descendants(200, fresh.all())).size(), 9u);
  EXPECT_EQ(fresh.scans(), 1);
  ProcSnapshot stale(-1, kTree);
  stale.all();
  stale.all();
  EXPECT_EQ(stale.scans(), 2);
}

TEST(ProcTree, DescentFollowsParentLinksUpwards) {
  EXPECT_TRUE(descends_from(404, 200, kTree));
  EXPECT_TRUE(descends_from(311, 310, kTree));
  EXPECT_TRUE(descends_from(310, 310, kTree));
  EXPECT_FALSE(descends_from(200, 404, kTree)) << "an ancestor is not a descendant";
  EXPECT_FALSE(descends_from(311, 200, kTree));
  EXPECT_FALSE(descends_from(1, 200, kTree));
  EXPECT_FALSE(descends_from(9999, 200, kTree)) << "a pid that is gone";
  EXPECT_FALSE(descends_from(0, 200, kTree));
}

TEST(ProcTree, TreeRssSumsTheTree) {
  EXPECT_EQ(tree_rss(310, kTree), (10240 + 6291456 + 1048576) * KiB);
  EXPECT_EQ(tree_rss(9999, kTree), 0);
}

TEST(ProcTree, DescendantsSurvivesAParentCycle) {
  std::vector<ProcInfo> all(2);
  all[0].pid = 5, all[0].ppid = 6;
  all[1].pid = 6, all[1].ppid = 5;
  auto d = descendants(5, all);
  EXPECT_LE(d.size(), 3u);
  EXPECT_EQ(d.front(), 5);
}

TEST(ProcLive, SeesOurOwnChild) {
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::pause();
    ::_exit(0);
  }
  auto p = read_process(child);
  auto me = read_process(::getpid());
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  ASSERT_TRUE(p && me);
  EXPECT_EQ(p->ppid, ::getpid());
  EXPECT_EQ(p->uid, ::getuid());
  EXPECT_GT(me->rss, 0);
  EXPECT_FALSE(read_process(child));  // reaped: gone is a value
}

TEST(ProcStat, ReadsTheCpuTimeOfWaitedForChildren) {
  // Recorded: a shell that ran a loop itself and one in a subshell it
  // waited for, then exec'd cat.
  auto st = parse_proc_stat(fixture("proc/stat.children"));
  ASSERT_TRUE(st);
  EXPECT_EQ(st->utime, 40u);
  EXPECT_EQ(st->stime, 2u);
  EXPECT_EQ(st->cutime, 44u);
  EXPECT_EQ(st->cstime, 4u);
}

TEST(ProcTree, TreeCpuCountsLiveMembersAndTheChildrenTheyWaitedFor) {
  std::vector<ProcInfo> all(4);
  all[0].pid = 10, all[0].ppid = 1, all[0].utime = 5, all[0].cutime = 300, all[0].cstime = 20;  // nvcc: cicc done
  all[1].pid = 11, all[1].ppid = 10, all[1].utime = 100, all[1].stime = 7;                     // ptxas running
  all[2].pid = 12, all[2].ppid = 11, all[2].utime = 1;
  all[3].pid = 20, all[3].ppid = 1, all[3].utime = 999;  // not in the job
  EXPECT_EQ(tree_cpu_ticks(10, all), 5u + 300 + 20 + 100 + 7 + 1);
  EXPECT_EQ(tree_cpu_ticks(99, all), 0u);
}

// One read where the kernel's file fits the buffer; a longer file is read
// to its end like any other.
TEST(ReadKernelFile, ReadsKernelFilesAndLongFilesWhole) {
  EXPECT_EQ(read_kernel_file("/proc/self/cmdline"), read_file("/proc/self/cmdline"));
  const std::string path = "/tmp/memgate-read-kernel-file-" + std::to_string(::getpid());
  for (std::size_t size : {std::size_t{0}, std::size_t{8192}, std::size_t{20000}}) {
    const std::string content(size, 'x');
    ASSERT_TRUE(write_file(path, content, true).ok());
    auto got = read_kernel_file(path);
    ASSERT_TRUE(got.has_value());
    EXPECT_EQ(got->size(), size);
  }
  ::unlink(path.c_str());
  EXPECT_FALSE(read_kernel_file(path).has_value());
}
