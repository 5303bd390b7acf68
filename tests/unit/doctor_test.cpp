#include "doctor/doctor.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "platform/proc.hpp"

using namespace memgate;
using namespace memgate::doctor;

namespace {
const std::string kTree = std::string(MEMGATE_FIXTURES) + "/proc/tree";

std::vector<pid_t> pids_of(const std::vector<StaleProcess>& v) {
  std::vector<pid_t> out;
  for (const auto& s : v) out.push_back(s.pid);
  std::sort(out.begin(), out.end());
  return out;
}

Findings sample_findings() {
  Findings f;
  f.cores = 128;
  f.capacity = compute_capacity(432 * GiB, std::nullopt);
  f.budget = *compute_budget(f.capacity, std::nullopt, std::nullopt);
  f.meminfo.total = 432 * GiB;
  f.meminfo.available = 400 * GiB;
  f.meminfo.free = 20 * GiB;
  f.cgroups.version = platform::CgroupVersion::v2;
  f.can_confine = true;
  f.freezer = "cgroup-v2";
  f.psi = platform::Psi{platform::PsiWindow{1.5, 0.5, 0.25, 42}, std::nullopt};
  for (int i = 0; i < 12; ++i) f.stale.push_back({1000 + i, 1, "cicc", 38 * GiB / 12, 100});
  return f;
}

// A forked child of this test; `ignore_term` makes it need SIGKILL.
pid_t spawn_sleeper(bool ignore_term) {
  int fds[2];
  if (::pipe(fds) != 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    if (ignore_term) ::signal(SIGTERM, SIG_IGN);
    ::close(fds[0]);
    ::close(fds[1]);  // tells the parent the handler is in place
    for (;;) ::pause();
  }
  ::close(fds[1]);
  char c;
  while (::read(fds[0], &c, 1) > 0) {
  }
  ::close(fds[0]);
  return pid;
}

StaleProcess listed(pid_t pid) {
  auto p = platform::read_process(pid);
  return {pid, p ? p->ppid : 0, p ? p->comm : "", p ? p->rss : 0, p ? p->starttime : 0};
}
}  // namespace

TEST(StaleNames, CompilersAndTheirVersionedForms) {
  for (const char* n : {"cicc", "ptxas", "cudafe++", "cc1plus", "ld.lld", "clang-17", "clang++-18", "rustc", "gcc-12",
                        "g++", "x86_64-linux-gn"}) {
    EXPECT_TRUE(is_compiler_name(n)) << n;
  }
  for (const char* n : {"make", "ninja", "bash", "python3", "clang-", "clang-x", "memgate", "sccache", "ldconfig"}) {
    EXPECT_FALSE(is_compiler_name(n)) << n;
  }
  EXPECT_TRUE(is_init_like("systemd"));
  EXPECT_TRUE(is_init_like("tini"));
  EXPECT_FALSE(is_init_like("bash"));
}

TEST(FindStale, OrphanedCompileChainsOfTheUserOnly) {
  auto all = platform::read_all_processes(kTree);
  auto runs = find_memgate_runs(all, kTree);
  EXPECT_EQ(runs, std::set<pid_t>{400});
  auto stale = find_stale(all, 1000, runs);
  // See tests/fixtures/proc/tree/README for why each one is or is not stale.
  EXPECT_EQ(pids_of(stale), (std::vector<pid_t>{300, 310, 311, 312, 800, 901, 951}));
  EXPECT_EQ(total_rss(stale), (4194304 + 10240 + 6291456 + 1048576 + 900000 + 250000 + 700000) * KiB);
}

TEST(FindStale, OtherUsersProcessesAreNeverListed) {
  auto all = platform::read_all_processes(kTree);
  EXPECT_EQ(pids_of(find_stale(all, 0, {})), std::vector<pid_t>{500});
  EXPECT_TRUE(find_stale(all, 4321, {}).empty());
}

TEST(FindStale, ALiveInteractiveCompileIsNotStale) {
  auto all = platform::read_all_processes(kTree);
  auto stale = pids_of(find_stale(all, 1000, {}));
  for (pid_t live : {211, 212, 601, 602, 960, 961, 700}) {
    EXPECT_FALSE(std::binary_search(stale.begin(), stale.end(), live)) << live;
  }
}

TEST(FindStale, ACompilerThatIsPidOneIsNotAnOrphan) {
  std::vector<platform::ProcInfo> all(2);
  all[0].pid = 1, all[0].ppid = 0, all[0].comm = "nvcc";
  all[1].pid = 7, all[1].ppid = 1, all[1].comm = "cicc";
  // cicc's parent is pid 1, which is the rule; nvcc, being pid 1 (a
  // container whose entry point is the compiler), never is.
  auto stale = find_stale(all, 0, {});
  EXPECT_EQ(pids_of(stale), std::vector<pid_t>{7});
}

TEST(Verdict, NamesCapacityBudgetAndStaleHolders) {
  auto f = sample_findings();
  f.meminfo.available = 428 * GiB;
  EXPECT_EQ(verdict(f),
            "capacity 432 GiB; a build may use 424 GiB; 38.0 GiB held by 12 stale compiler processes "
            "(run: memgate doctor --kill-stale)");
  f.stale.clear();
  f.meminfo.available = 100 * GiB;
  EXPECT_EQ(verdict(f), "capacity 432 GiB; a build may use 424 GiB (100 GiB is available right now); no stale compiler processes");
}

TEST(PageCacheNote, OnlyWhenFreeIsLowAndAvailableHigh) {
  platform::MemInfo m;
  m.total = 100 * GiB, m.free = 5 * GiB, m.available = 80 * GiB;
  EXPECT_TRUE(page_cache_note(m));
  m.available = 30 * GiB;
  EXPECT_FALSE(page_cache_note(m));
  m.free = 50 * GiB, m.available = 80 * GiB;
  EXPECT_FALSE(page_cache_note(m));
  EXPECT_FALSE(page_cache_note(platform::MemInfo{}));
}

TEST(RenderText, HasEverySection) {
  auto text = render_text(sample_findings());
  for (const char* s : {"physical memory  432 GiB", "capacity         432 GiB (physical)", "reserve          8.00 GiB",
                        "budget           424 GiB", "can confine      yes", "freezer          cgroup-v2",
                        "PSI some         avg10=1.50", "PSI full         unknown", "12 holding 38.0 GiB",
                        "MemFree is low but MemAvailable is high", "no need to drop caches"}) {
    EXPECT_NE(text.find(s), std::string::npos) << s << "\n" << text;
  }
}

TEST(RenderText, SettingsWithTheirSourceAndAConfigError) {
  auto f = sample_findings();
  f.settings = {{"reserve", "1G", "config /etc/x/config:2"}, {"jobs", "128", "default (the usable cores)"}};
  f.config_file = "/etc/x/config";
  auto text = render_text(f);
  EXPECT_NE(text.find("  reserve          1G                       config /etc/x/config:2\n"), std::string::npos) << text;
  EXPECT_NE(text.find("  jobs             128                      default (the usable cores)\n"), std::string::npos);
  EXPECT_NE(text.find("  config file      /etc/x/config\n"), std::string::npos);
  EXPECT_EQ(text.find("ignored"), std::string::npos);
  f.config_error = "/etc/x/config:2: unknown key 'jbos'";
  text = render_text(f);
  EXPECT_NE(text.find("  config file      IGNORED: /etc/x/config:2: unknown key 'jbos'\n"), std::string::npos) << text;
  EXPECT_NE(text.find("error: the config file was ignored: /etc/x/config:2"), std::string::npos);
  auto j = nlohmann::json::parse(render_json(f));
  EXPECT_EQ(j["settings"]["reserve"]["source"], "config /etc/x/config:2");
  EXPECT_EQ(j["settings"]["jobs"]["value"], "128");
  EXPECT_EQ(j["config_error"], "/etc/x/config:2: unknown key 'jbos'");
}

TEST(RenderJson, StableKeysAndTypes) {
  auto f = sample_findings();
  f.stale[0].comm = std::string("bad\xff\xfe");  // any bytes in comm: still valid JSON
  auto j = nlohmann::json::parse(render_json(f));
  EXPECT_EQ(j["capacity_bytes"], 432 * GiB);
  EXPECT_EQ(j["capacity_source"], "physical");
  EXPECT_EQ(j["budget_bytes"], 424 * GiB);
  EXPECT_EQ(j["reserve_bytes"], 8 * GiB);
  EXPECT_EQ(j["physical_bytes"], 432 * GiB);
  EXPECT_EQ(j["mem_available_bytes"], 400 * GiB);
  EXPECT_EQ(j["cores"], 128);
  EXPECT_EQ(j["cgroup_version"], "v2");
  EXPECT_EQ(j["can_confine"], true);
  EXPECT_EQ(j["freezer"], "cgroup-v2");
  EXPECT_DOUBLE_EQ(j["psi"]["some"]["avg10"].get<double>(), 1.5);
  EXPECT_EQ(j["psi"]["some"]["total_us"], 42);
  EXPECT_TRUE(j["psi"]["full"].is_null());
  ASSERT_EQ(j["stale_processes"].size(), 12u);
  EXPECT_EQ(j["stale_processes"][1]["pid"], 1001);
  EXPECT_EQ(j["stale_processes"][1]["comm"], "cicc");
  EXPECT_EQ(j["stale_processes"][1]["rss_bytes"], 38 * GiB / 12);
  EXPECT_FALSE(j.contains("killed"));
  f.psi.reset();
  EXPECT_TRUE(nlohmann::json::parse(render_json(f))["psi"].is_null());
}

TEST(KillStale, EndsListedProcessesTermThenKill) {
  pid_t polite = spawn_sleeper(false);
  pid_t stubborn = spawn_sleeper(true);
  ASSERT_GT(polite, 0);
  ASSERT_GT(stubborn, 0);
  auto out = kill_stale({listed(polite), listed(stubborn)}, std::chrono::milliseconds(200));
  int s1 = 0, s2 = 0;
  ASSERT_EQ(::waitpid(polite, &s1, 0), polite);
  ASSERT_EQ(::waitpid(stubborn, &s2, 0), stubborn);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[0].ended);
  EXPECT_EQ(out[0].result, "terminated");
  EXPECT_TRUE(WIFSIGNALED(s1) && WTERMSIG(s1) == SIGTERM);
  EXPECT_TRUE(out[1].ended);
  EXPECT_EQ(out[1].result, "killed");
  EXPECT_TRUE(WIFSIGNALED(s2) && WTERMSIG(s2) == SIGKILL);
}

TEST(KillStale, ARecycledPidIsLeftAlone) {
  pid_t child = spawn_sleeper(false);
  ASSERT_GT(child, 0);
  auto entry = listed(child);
  entry.starttime += 1;  // as if the pid now belonged to a newer process
  auto out = kill_stale({entry}, std::chrono::milliseconds(50));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].result, "pid reused: left alone");
  EXPECT_EQ(::waitpid(child, nullptr, WNOHANG), 0);  // still running
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
}

TEST(KillStale, AGoneProcessIsReportedNotSignalled) {
  pid_t child = spawn_sleeper(false);
  ASSERT_GT(child, 0);
  auto entry = listed(child);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  auto out = kill_stale({entry}, std::chrono::milliseconds(50));
  ASSERT_EQ(out.size(), 1u);
  EXPECT_TRUE(out[0].ended);
  EXPECT_EQ(out[0].result, "already gone");
}

TEST(DoctorBinary, JsonHasTheStableKeys) {
  FILE* p = ::popen(MEMGATE_BINARY " doctor --json", "r");
  ASSERT_NE(p, nullptr);
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = ::pclose(p);
  ASSERT_EQ(WEXITSTATUS(status), 0) << out;
  auto j = nlohmann::json::parse(out);
  for (const char* k : {"capacity_bytes", "capacity_source", "budget_bytes", "reserve_bytes", "physical_bytes",
                        "mem_available_bytes", "cores", "cgroup_version", "can_confine", "freezer", "psi",
                        "stale_processes"}) {
    EXPECT_TRUE(j.contains(k)) << k;
  }
  EXPECT_LE(j["capacity_bytes"].get<Bytes>(), j["physical_bytes"].get<Bytes>());
  EXPECT_EQ(j["budget_bytes"].get<Bytes>() + j["reserve_bytes"].get<Bytes>(), j["capacity_bytes"].get<Bytes>());
  EXPECT_TRUE(j["stale_processes"].is_array());
}
