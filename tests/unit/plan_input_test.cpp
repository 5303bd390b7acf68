// Where plan's jobs come from: the measured flash-attn table (and its nvcc
// --threads model), a .ninja_log, and a recorded build in history.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <set>

#include "plan/input.hpp"
#include "plan/jobs_csv.hpp"
#include "plan/machine.hpp"
#include "plan/plan.hpp"
#include "plan/recorded.hpp"
#include "plan/render.hpp"
#include "plan/ninja_log.hpp"

using namespace memgate;
using namespace memgate::plan;

namespace {

const std::string kCsv = std::string(MEMGATE_FIXTURES) + "/flash-attn/flash-attn-nvcc-jobs.csv";

std::vector<MeasuredRow> fixture_rows() {
  auto rows = read_jobs_csv(kCsv);
  EXPECT_TRUE(rows.ok()) << (rows.ok() ? "" : rows.error());
  return rows.ok() ? *rows : std::vector<MeasuredRow>{};
}

const MeasuredRow& row(const std::vector<MeasuredRow>& rows, const std::string& file, const std::string& targets,
                       int threads) {
  for (const auto& r : rows)
    if (r.file == file && r.targets == targets && r.nvcc_threads == threads) return r;
  throw std::runtime_error("no row " + file);
}

}  // namespace

TEST(PlanJobsCsv, ReadsTheFlashAttnTableAndItsProfiles) {
  auto rows = fixture_rows();
  ASSERT_EQ(rows.size(), 25u);
  const MeasuredRow& bwd = row(rows, "flash_bwd_hdim256_bf16_sm80.cu", "sm80", 1);
  EXPECT_EQ(bwd.peak, 6958387200);
  EXPECT_TRUE(bwd.contended);
  EXPECT_EQ(count_targets("all6"), 6);
  EXPECT_EQ(count_targets("sm80+sm90"), 2);
  size_t with_profile = 0;
  for (const auto& r : rows) with_profile += !r.samples.empty();
  EXPECT_EQ(with_profile, 17u);  // the clean rows; the contended ones have no profile file
}

TEST(PlanJobsCsv, BaseMeasurementsAreCleanSingleTargetRowsOnePerFile) {
  auto bases = base_measurements(fixture_rows());
  std::set<std::string> files;
  for (const auto& b : bases) {
    EXPECT_TRUE(!b.contended || b.profile.find("__rerun") != std::string::npos) << b.file;
    EXPECT_EQ(b.target_count, 1);
    files.insert(b.file);
  }
  EXPECT_EQ(files.size(), bases.size());
  EXPECT_EQ(bases.size(), 15u);
  for (const auto& b : bases) {
    if (b.file == "flash_fwd_hdim128_fp16_sm80.cu") {
      EXPECT_EQ(b.targets, "sm80") << "the sm80 rerun, not sm90";
    }
  }
}

TEST(PlanJobsCsv, TheNvccThreadsModelMatchesTheMeasuredMultiTargetJobs) {
  auto rows = fixture_rows();
  auto bases = base_measurements(rows);
  auto base = [&](const std::string& f) {
    for (const auto& b : bases)
      if (b.file == f) return b;
    throw std::runtime_error(f);
  };
  // bwd hdim128 at sm80+sm90 with --threads 4 peaked at 12.6 GB.
  PlanJob two = nvcc_job(base("flash_bwd_hdim128_fp16_sm80.cu"), "bwd", NvccShape{4, 2});
  double measured = static_cast<double>(row(rows, "flash_bwd_hdim128_fp16_sm80.cu", "sm80+sm90", 4).peak);
  EXPECT_NEAR(static_cast<double>(two.peak) / measured, 1.0, 0.05);
  EXPECT_EQ(two.threads, 2);
  EXPECT_EQ(two.key.cpu_weight, 2);
  // fwd hdim64 over all six targets with --threads 4: 14.6 GB.
  PlanJob six = nvcc_job(base("flash_fwd_hdim64_fp16_sm80.cu"), "fwd", NvccShape{4, 6});
  measured = static_cast<double>(row(rows, "flash_fwd_hdim64_fp16_sm80.cu", "all6", 4).peak);
  EXPECT_NEAR(static_cast<double>(six.peak) / measured, 1.0, 0.05);
  EXPECT_NEAR(six.cpu_s, 6 * 87.73, 1e-6);
  EXPECT_NEAR(six.work_s, 6 * 88.51 / 4, 1e-6);
  // Two rounds (4 pipelines, then 2): past the first peak the job still
  // needs the second round's.
  EXPECT_LT(six.predicted.peak_over_frac, 0.5);
  EXPECT_NEAR(static_cast<double>(six.predicted.after_peak) / (2 * 3683897344.0), 1.0, 0.05);
  // --threads 1 over six targets: one pipeline at a time, single peak height.
  PlanJob serial = nvcc_job(base("flash_fwd_hdim64_fp16_sm80.cu"), "fwd", NvccShape{1, 6});
  EXPECT_NEAR(static_cast<double>(serial.peak), 3683897344.0, 3683897344.0 * 0.01);
  EXPECT_NEAR(serial.work_s, 6 * 88.51, 1e-6);
}

TEST(PlanJobsCsv, TheFlashAttnWorkloadHas96KernelsFromTheirNearestMeasuredFile) {
  auto w = workload_from_measurements(fixture_rows(), NvccShape{1, 1});
  ASSERT_TRUE(w.ok()) << w.error();
  ASSERT_EQ(w->jobs.size(), 96u);
  std::map<std::string, const PlanJob*> by;
  for (const auto& j : w->jobs) by[j.name] = &j;
  EXPECT_EQ(by.size(), 96u);
  // Measured: its own figures.
  EXPECT_NEAR(by.at("flash_bwd_hdim256_bf16_sm80.cu")->cpu_s, 149.29, 1e-6);
  // Not measured: bwd hdim192 takes hdim256's figures (nearest, the larger on a tie).
  EXPECT_NEAR(by.at("flash_bwd_hdim192_bf16_sm80.cu")->cpu_s, 149.29, 1e-6);
  // bwd hdim64 (only a contended row) takes hdim128's clean figures.
  EXPECT_NEAR(by.at("flash_bwd_hdim64_fp16_sm80.cu")->cpu_s, 130.8, 1e-6);
  for (const auto& j : w->jobs) {
    EXPECT_GT(j.peak, 3 * GiB) << j.name;
    EXPECT_LT(j.peak, 7 * GiB) << j.name;
  }
  EXPECT_NE(w->description.find("96 files"), std::string::npos);
}

TEST(PlanJobsCsv, ATableThatIsNotFlashAttnGivesOneJobPerFile) {
  auto rows = parse_jobs_csv(
      "file,cpu_s,wall_s,peak_tree_bytes,t_peak_s,mean_bytes\n"
      "a.cu,10,10,1073741824,2,536870912\n"
      "b.cu,20,20,2147483648,5,1073741824\n");
  ASSERT_TRUE(rows.ok()) << rows.error();
  auto w = workload_from_measurements(*rows, NvccShape{1, 1});
  ASSERT_TRUE(w.ok());
  ASSERT_EQ(w->jobs.size(), 2u);
  EXPECT_EQ(w->jobs[1].peak, 2 * GiB);
  // Synthesized from the figures: the level after the peak gives the measured mean.
  double mean = 0;
  for (int i = 0; i < 1000; ++i) mean += static_cast<double>(memory_at(w->jobs[0].profile, (i + 0.5) / 1000));
  EXPECT_NEAR(mean / 1000, 512.0 * MiB, 0.05 * 512 * MiB);
  EXPECT_FALSE(parse_jobs_csv("file,cpu_s\nx,1\n").ok());
  EXPECT_FALSE(parse_jobs_csv("file,cpu_s,wall_s,peak_tree_bytes\nx,1,oops,3\n").ok());
}

// Found by fuzz_jobs_csv: a column shifted by a damaged line put a byte
// count (4.4e9) into nvcc_threads, whose conversion to int overflowed.
TEST(PlanJobsCsv, NumbersTooLargeForTheirColumnAreRejectedOrIgnoredNotOverflowed) {
  auto rows = parse_jobs_csv(
      "file,targets,nvcc_threads,cpu_s,wall_s,peak_tree_bytes,t_peak_s,mean_bytes\n"
      "a.cu,all1e300,4462133248,10,10,1073741824,2,1e300\n");
  ASSERT_TRUE(rows.ok()) << rows.error();
  EXPECT_EQ((*rows)[0].nvcc_threads, 1);
  EXPECT_EQ((*rows)[0].target_count, 1);
  EXPECT_EQ((*rows)[0].mean, 0);
  EXPECT_FALSE(parse_jobs_csv("file,cpu_s,wall_s,peak_tree_bytes\nx,1,1,1e300\n").ok());
  EXPECT_FALSE(parse_jobs_csv("file,cpu_s,wall_s,peak_tree_bytes\nx,1,1,-5\n").ok());
  // Above 1 PiB is not a job's peak; times an nvcc job's pipelines it overflowed.
  EXPECT_FALSE(parse_jobs_csv("file,cpu_s,wall_s,peak_tree_bytes\nx,1,1,4611686018427387904\n").ok());
  auto big = parse_jobs_csv("file,cpu_s,wall_s,peak_tree_bytes\nx.cu,1,1,1125899906842624\n");
  ASSERT_TRUE(big.ok()) << big.error();
  auto w = workload_from_measurements(*big, NvccShape{1 << 30, 1 << 30});
  ASSERT_TRUE(w.ok()) << w.error();
  EXPECT_EQ(w->jobs[0].peak, Bytes{1} << 60);  // 1 PiB x kMaxNvccTargets pipelines
  auto profile = parse_profile_csv("t_seconds,bytes\n0,100\n1,1e300\n2,200\n");
  ASSERT_EQ(profile.size(), 2u);
  EXPECT_EQ(profile[1].bytes, 200);
}

TEST(PlanNinjaLog, KeepsTheLastEntryPerOutputAndGroupsAnEdgesOutputs) {
  auto edges = parse_ninja_log(
      "# ninja log v5\n"
      "0\t1000\t1\tobj/a.o\taaa\n"
      "0\t4000\t1\tobj/b.cu.o\tbbb\n"
      "100\t2100\t1\tobj/a.o\taaa2\n"  // rebuilt: this one counts
      "2100\t3000\t1\tlib/libx.so\tccc\n"
      "2100\t3000\t1\tlib/libx.so.1\tccc\n");
  ASSERT_TRUE(edges.ok()) << edges.error();
  ASSERT_EQ(edges->size(), 3u);
  EXPECT_EQ(edges->at(0).outputs, std::vector<std::string>{"obj/b.cu.o"});
  EXPECT_DOUBLE_EQ(edges->at(1).start_s, 0.1);
  EXPECT_DOUBLE_EQ(edges->at(1).end_s, 2.1);
  EXPECT_EQ(edges->at(2).outputs.size(), 2u);
  EXPECT_FALSE(parse_ninja_log("# ninja log v4\n").ok());
  EXPECT_FALSE(parse_ninja_log("0\t1\t2\tx\th\n").ok());
  EXPECT_FALSE(parse_ninja_log("# ninja log v5\n0\t1\tx\n").ok());
}

TEST(PlanNinjaLog, GuessesTheToolFromTheOutput) {
  EXPECT_EQ(tool_for_output("x/flash_fwd.cu.o"), "nvcc");
  EXPECT_EQ(tool_for_output("CMakeFiles/k.dir/k.cuda.o"), "nvcc");
  EXPECT_EQ(tool_for_output("obj/a.o"), "c++");
  EXPECT_EQ(tool_for_output("bin/app"), "ld");
  EXPECT_EQ(tool_for_output("lib/libx.so"), "ld");
  EXPECT_EQ(tool_for_output("lib/libx.so.1.2"), "ld");
  EXPECT_EQ(tool_for_output("gen/version.h"), "other");
}

TEST(PlanNinjaLog, TakesMemoryFromHistoryByOutputAndDefaultsOtherwise) {
  auto edges = parse_ninja_log("# ninja log v5\n0\t10000\t1\tobj/a.o\th1\n0\t20000\t1\tobj/k.cu.o\th2\n");
  ASSERT_TRUE(edges.ok());
  JobRecord known;
  known.key.identity = "c++:compile:src/a.cpp->obj/a.o";
  known.key.tool = "c++";
  known.start_s = 0;
  known.end_s = 5;
  known.cpu_s = 5;
  known.peak_bytes = 300 * MiB;
  int matched = 0;
  auto jobs = jobs_from_ninja_log(*edges, {known}, 4, &matched);
  ASSERT_EQ(jobs.size(), 2u);
  EXPECT_EQ(matched, 1);
  EXPECT_EQ(jobs[0].name, "obj/a.o");
  EXPECT_EQ(jobs[0].peak, 300 * MiB);
  EXPECT_NEAR(jobs[0].work_s, 10, 1e-6);
  EXPECT_EQ(jobs[1].key.tool, "nvcc");
  EXPECT_GE(jobs[1].peak, 4 * GiB) << "nvcc's conservative default";
}

namespace {

// Just enough History for input_from_history.
class FakeHistory : public History {
 public:
  std::map<std::int64_t, BuildRecord> builds;
  Result<std::int64_t> save_build(const BuildRecord& b) override {
    std::int64_t id = static_cast<std::int64_t>(builds.size()) + 1;
    builds[id] = b;
    builds[id].id = id;
    return id;
  }
  std::vector<BuildSummary> list_builds(int) override { return {}; }
  std::optional<BuildRecord> load_build(std::int64_t id) override {
    auto it = builds.find(id);
    if (it == builds.end()) return std::nullopt;
    return it->second;
  }
  std::optional<std::int64_t> last_build_id(const BuildQuery& q) override {
    std::optional<std::int64_t> last;
    for (const auto& [id, b] : builds)
      if ((!q.cwd || b.cwd == *q.cwd) && (!q.with_jobs || !b.jobs.empty())) last = id;
    return last;
  }
  std::vector<JobRecord> jobs_for_prediction(int) override { return {}; }
  std::vector<JobProfile> imported_profiles() override { return {}; }
  Result<int> import_profiles(const std::vector<JobProfile>&) override { return 0; }
  Result<Forgotten> forget(const ForgetQuery&) override { return Forgotten{}; }
};

BuildRecord tiny_build(const std::string& cwd) {
  BuildRecord b;
  b.cwd = cwd;
  b.command = "make -j2";
  b.slots = 2;
  JobRecord j;
  j.key.identity = "c++:compile:a.c->a.o";
  j.end_s = 3;
  j.cpu_s = 3;
  j.peak_bytes = 200 * MiB;
  b.jobs = {j, j};
  return b;
}

}  // namespace

TEST(PlanHistoryInput, UsesTheLastBuildHereElseTheLastOfAllAndSaysWhich) {
  FakeHistory h;
  h.save_build(tiny_build("/src/a"));
  h.save_build(tiny_build("/src/b"));
  auto here = input_from_history(h, "last", "/src/a");
  ASSERT_TRUE(here.ok()) << here.error();
  EXPECT_NE(here->source.find("build #1 in /src/a"), std::string::npos) << here->source;
  ASSERT_EQ(here->notes.size(), 1u);
  EXPECT_EQ(here->notes[0], "planning from build #1, the last in this directory that compiled");
  auto elsewhere = input_from_history(h, "last", "/src/c");
  ASSERT_TRUE(elsewhere.ok());
  EXPECT_NE(elsewhere->source.find("build #2"), std::string::npos) << elsewhere->source;
  ASSERT_EQ(elsewhere->notes.size(), 1u);
  EXPECT_NE(elsewhere->notes[0].find("the last anywhere that compiled (none in /src/c)"), std::string::npos);
  EXPECT_EQ(elsewhere->jobs.size(), 2u);
  EXPECT_FALSE(input_from_history(h, "7", "/src/a").ok());
  FakeHistory empty;
  auto none = input_from_history(empty, "last", "/src/a");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().find("memgate run"), std::string::npos);
}

// A build recorded with --jobs 8 on 2 cores: 8 compiles of 3 CPU-s that
// overlapped for 12 s shared 2 cores, so each is a 3 s job, not a 12 s one
// half asleep; plan shows the build's measured time beside its -j8.
TEST(PlanHistoryInput, ABuildWithMoreSlotsThanCoresIsReadAgainstTheCores) {
  FakeHistory h;
  BuildRecord b = tiny_build("/src/a");
  b.slots = 8;
  b.cores = 2;
  b.start_unix = 100;
  b.end_unix = 112;
  b.jobs.clear();
  for (int i = 0; i < 8; ++i) {
    JobRecord j;
    j.key.identity = "c++:compile:f" + std::to_string(i) + ".c->f.o";
    j.end_s = 12;
    j.cpu_s = 3;
    j.peak_bytes = 100 * MiB;
    b.jobs.push_back(j);
  }
  EXPECT_DOUBLE_EQ(cores_left_to_build(b), 2.0);
  const auto id = h.save_build(b);
  auto in = input_from_history(h, "last", "/src/a");
  ASSERT_TRUE(in.ok()) << in.error();
  for (const PlanJob& j : in->jobs) EXPECT_NEAR(j.work_s, 3.0, 0.05) << j.name;
  bool noted = false;
  for (const auto& n : in->notes) noted = noted || n.find("--jobs 8 on 2 cores") != std::string::npos;
  EXPECT_TRUE(noted);
  ASSERT_TRUE(in->measured);
  EXPECT_EQ(in->measured->build, *id);
  EXPECT_EQ(in->measured->jobs, 8);
  EXPECT_EQ(in->measured->cores, 2);
  EXPECT_DOUBLE_EQ(in->measured->wall_s, 12.0);
  PlanOptions o;
  o.jobs_from = 1;
  o.jobs_to = 8;
  o.orders = 4;
  PlanResult r = make_plan(in->jobs, machine_with(2, 8 * GiB), o);
  const std::string table = render_table(r, in->source, in->measured);
  EXPECT_NE(table.find("measured 12.0s"), std::string::npos) << table;
  EXPECT_NE(table.find("measured: build #" + std::to_string(*id) + " ran -j8 on 2 cores in 12.0s"), std::string::npos);
  for (const PlanRow& row : r.rows) {
    if (row.jobs == 1) {
      EXPECT_NEAR(row.wall_s, 24.0, 1.0) << "8 jobs of 3 s, one at a time";
    } else if (row.jobs == 2 || row.jobs == 4 || row.jobs == 8) {
      EXPECT_NEAR(row.wall_s, 12.0, 1.0) << "-j" << row.jobs << ": 2 cores";
    }
  }
  EXPECT_EQ(to_json(r, in->source, in->measured)["measured"]["cores"], 2);
}
