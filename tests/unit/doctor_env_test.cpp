// doctor --build-env: the parsers on recorded and hand-written tool output,
// the rules on a fixture tree (tests/fixtures/build_env/), and flash-attn's
// MAX_JOBS against memgate's on the hard-reboot machine of flash-attention
// #2493 (880 GB, 96 CPUs: the formula picks 42 jobs).
#include "doctor/build_env.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "fixtures.hpp"
#include "plan/jobs_csv.hpp"

using namespace memgate;
using namespace memgate::doctor;
using memgate::test::fixture;
using memgate::test::kFixtures;

namespace {

const std::string kTree = kFixtures + "/build_env/tree";

// The flash-attn measurements, as the CLI gives them to doctor.
MeasuredPeaks measured() {
  return [csv = fixture("flash-attn/flash-attn-nvcc-jobs.csv")](int threads, int targets) {
    return plan::measured_peaks(csv, plan::NvccShape{threads, targets});
  };
}

// The fixture tree with a runner that answers for its programs.
BuildEnvSources sources(std::map<std::string, std::string> env) {
  BuildEnvSources s;
  s.root = kTree;
  env.emplace("PATH", "/usr/local/cuda/bin:/usr/bin");
  s.env = std::move(env);
  s.run = [](const std::vector<std::string>& argv) -> std::optional<std::string> {
    static const std::map<std::string, std::string> kOutputs = {
        {"/usr/local/cuda/bin/nvcc", "nvcc-13.0.txt"},
        {"/usr/bin/gcc", "gcc-12.txt"},
        {"/opt/gcc-16/bin/gcc", "gcc-16.txt"},
        {"/usr/bin/python3", "python3-sys-path.txt"},
        {"/opt/venv/bin/python3", "venv-sys-path.txt"},
    };
    const std::string logical = argv.at(0).substr(kTree.size());
    auto it = kOutputs.find(logical);
    if (it == kOutputs.end()) return std::nullopt;
    return fixture("build_env/outputs/" + it->second);
  };
  s.measured_peaks = measured();
  s.cpus = 2;
  s.slots = 2;
  s.available = 20 * GiB;
  s.budget = 19 * GiB;
  return s;
}

const Check* find_check(const std::vector<Check>& checks, const std::string& key) {
  for (const auto& c : checks)
    if (c.key == key) return &c;
  return nullptr;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST(BuildEnvParse, NvccVersionFromItsOutput) {
  auto v = parse_nvcc_version(fixture("build_env/outputs/nvcc-13.0.txt"));
  ASSERT_TRUE(v);
  EXPECT_EQ(v->major, 13);
  EXPECT_EQ(v->minor, 0);
  EXPECT_EQ(v->text, "13.0.88");
  auto old = parse_nvcc_version(fixture("build_env/outputs/nvcc-12.4.txt"));
  ASSERT_TRUE(old);
  EXPECT_EQ(old->text, "12.4.131");
  EXPECT_FALSE(parse_nvcc_version("nvcc: command not found"));
  EXPECT_EQ(parse_nvcc_version("Cuda compilation tools, release 11.8")->text, "11.8");
}

TEST(BuildEnvParse, HostCompilerVersions) {
  auto gcc = parse_cc_version(fixture("build_env/outputs/gcc-12.txt"));
  ASSERT_TRUE(gcc);
  EXPECT_FALSE(gcc->clang);
  EXPECT_EQ(gcc->version.text, "12.2.0");
  auto gcc16 = parse_cc_version(fixture("build_env/outputs/gcc-16.txt"));
  ASSERT_TRUE(gcc16);
  EXPECT_EQ(gcc16->version.major, 16);
  EXPECT_EQ(gcc16->version.text, "16.1.1") << "not the date after it";
  auto clang = parse_cc_version(fixture("build_env/outputs/clang-15.txt"));
  ASSERT_TRUE(clang);
  EXPECT_TRUE(clang->clang);
  EXPECT_EQ(clang->version.text, "15.0.6");
  EXPECT_EQ(parse_cc_version("13.2.0\n")->version.major, 13);  // -dumpfullversion
  EXPECT_FALSE(parse_cc_version(""));
}

TEST(BuildEnvParse, HostConfigGivesTheNewestAcceptedCompilers) {
  HostLimits h = parse_host_config(fixture("build_env/tree/usr/local/cuda/include/crt/host_config.h"));
  EXPECT_EQ(h.gcc_max, 15);
  EXPECT_EQ(h.clang_max, 20);
  HostLimits older = parse_host_config("#if defined(__GNUC__)\n#if __GNUC__ > 12\n#error too new\n#endif\n#endif\n");
  EXPECT_EQ(older.gcc_max, 12);
  EXPECT_FALSE(older.clang_max);
  EXPECT_EQ(parse_host_config("#if __GNUC__ >= 14\n").gcc_max, 13);
  EXPECT_FALSE(parse_host_config("/* no checks */").gcc_max);
}

TEST(BuildEnvParse, TorchVersionPyOldAndNewShapes) {
  auto t2 = parse_torch_version_py(fixture("build_env/tree/usr/lib/python3/dist-packages/torch/version.py"));
  ASSERT_TRUE(t2);
  EXPECT_EQ(t2->version, "2.3.1+cu121");
  EXPECT_EQ(t2->cuda, "12.1");
  EXPECT_FALSE(t2->hip);
  // Debian's python3-torch 1.13 (CPU): no annotations, cuda None.
  auto deb = parse_torch_version_py("__version__ = '1.13.0a0'\ndebug = False\ncuda = None\ngit_version = 'Unknown'\nhip = None\n");
  ASSERT_TRUE(deb);
  EXPECT_EQ(deb->version, "1.13.0a0");
  EXPECT_FALSE(deb->cuda);
  auto rocm = parse_torch_version_py("__version__ = \"2.4.0+rocm6.1\"\ncuda = None\nhip = \"6.1.40091\"\n");
  ASSERT_TRUE(rocm);
  EXPECT_EQ(rocm->hip, "6.1.40091");
  EXPECT_FALSE(parse_torch_version_py("import os\n"));
}

TEST(BuildEnvParse, ArchListsAndFlashAttnTargets) {
  using V = std::vector<std::string>;
  EXPECT_EQ(parse_torch_cuda_arch_list("8.0;8.6 9.0+PTX"), (V{"sm_80", "sm_86", "sm_90", "compute_90"}));
  EXPECT_EQ(parse_torch_cuda_arch_list("9.0a"), V{"sm_90a"});
  EXPECT_EQ(parse_torch_cuda_arch_list("Ampere"), V{"Ampere"});
  EXPECT_EQ(parse_rocm_arch_list("gfx90a;gfx942"), (V{"gfx90a", "gfx942"}));
  const Version cuda13{13, 0, 88, "13.0.88"}, cuda124{12, 4, 0, "12.4"}, cuda128{12, 8, 0, "12.8"};
  // The default list on CUDA 13: the "all6" of the measurements.
  EXPECT_EQ(flash_attn_targets("80;90;100;110;120", cuda13),
            (V{"sm_80", "sm_90", "sm_100", "sm_110", "sm_120", "compute_120"}));
  EXPECT_EQ(flash_attn_targets("80;90;100;110;120", cuda124), (V{"sm_80", "sm_90", "compute_90"}));
  EXPECT_EQ(flash_attn_targets("80;110", cuda128), (V{"sm_80", "sm_101", "compute_101"}));
  EXPECT_EQ(flash_attn_targets("80", cuda13), (V{"sm_80", "compute_80"}));
}

TEST(BuildEnvFormula, FlashAttnMaxJobs) {
  EXPECT_EQ(flash_attn_formula_jobs(96, 850 * GiB, 4), 42);  // flash-attention #2493
  EXPECT_EQ(flash_attn_formula_jobs(96, 850 * GiB, 1), 48);  // then the cores limit
  EXPECT_EQ(flash_attn_formula_jobs(2, 20 * GiB, 4), 1);
  EXPECT_EQ(flash_attn_formula_jobs(128, 4 * GiB, 4), 1);   // never 0
}

// Done-means 3: a torch for CUDA 12.1 with nvcc 13 is flagged.
TEST(BuildEnvChecks, TorchForCuda121WithNvcc13IsFlagged) {
  BuildEnv e = read_build_env(sources({}));
  ASSERT_TRUE(e.nvcc);
  EXPECT_EQ(e.nvcc->text, "13.0.88");
  EXPECT_EQ(e.cuda_home, "/usr/local/cuda");
  EXPECT_EQ(e.cuda_home_source, "nvcc in PATH");
  EXPECT_EQ(e.python, "/usr/bin/python3");
  ASSERT_TRUE(e.torch);
  EXPECT_EQ(e.torch->cuda, "12.1");
  EXPECT_EQ(e.torch->dir, "/usr/lib/python3/dist-packages/torch");
  auto checks = check_build_env(e);
  const Check* c = find_check(checks, "torch_cuda");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->level, "error");
  EXPECT_TRUE(contains(c->what, "built for CUDA 12.1, but nvcc is 13.0.88")) << c->what;
  EXPECT_TRUE(contains(c->what, "mismatches the version")) << c->what;
  EXPECT_TRUE(contains(c->fix, "torch built for CUDA 13.x")) << c->fix;
  EXPECT_TRUE(contains(c->fix, "CUDA 12.x toolkit")) << c->fix;
  for (const char* m : {"module_setuptools", "module_wheel", "module_packaging", "module_psutil"})
    EXPECT_EQ(find_check(checks, m)->level, "ok") << m;
}

TEST(BuildEnvChecks, MatchingTorchAndMissingModules) {
  BuildEnv e = read_build_env(sources({{"PYTHON", "/opt/venv/bin/python3"}}));
  ASSERT_TRUE(e.torch);
  EXPECT_EQ(e.torch->version, "2.9.0+cu130");
  auto checks = check_build_env(e);
  EXPECT_EQ(find_check(checks, "torch_cuda")->level, "ok");
  EXPECT_EQ(find_check(checks, "module_setuptools")->level, "ok");
  EXPECT_EQ(find_check(checks, "module_wheel")->level, "error");
  EXPECT_EQ(find_check(checks, "module_packaging")->level, "error");
  EXPECT_EQ(find_check(checks, "module_psutil")->level, "warn");
  EXPECT_EQ(find_check(checks, "module_wheel")->fix, "install it for this python: /opt/venv/bin/python3 -m pip install wheel");
  BuildEnv deb = read_build_env(sources({}));
  deb.modules["wheel"] = "";
  auto deb_checks = check_build_env(deb);
  EXPECT_EQ(find_check(deb_checks, "module_wheel")->fix, "install it for this python: apt install python3-wheel");
}

// Done-means 3: no ninja is flagged; with it in PATH it is not.
TEST(BuildEnvChecks, NoNinjaIsFlagged) {
  auto checks = check_build_env(read_build_env(sources({})));
  const Check* c = find_check(checks, "ninja");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->level, "error");
  EXPECT_TRUE(contains(c->what, "one file at a time")) << c->what;
  EXPECT_TRUE(contains(c->fix, "ninja-build")) << c->fix;
  BuildEnv with = read_build_env(sources({{"PATH", "/usr/local/cuda/bin:/usr/bin:/opt/ninja/bin"}}));
  EXPECT_EQ(with.ninja_path, "/opt/ninja/bin/ninja");
  EXPECT_EQ(find_check(check_build_env(with), "ninja")->level, "ok");
}

// Done-means 3: a gcc newer than nvcc supports is flagged.
TEST(BuildEnvChecks, GccTooNewIsFlagged) {
  BuildEnv ok = read_build_env(sources({}));
  EXPECT_EQ(ok.host_cc, "/usr/bin/gcc");
  EXPECT_EQ(ok.host_limits.gcc_max, 15);
  EXPECT_EQ(find_check(check_build_env(ok), "host_compiler")->level, "ok");
  for (const char* var : {"NVCC_CCBIN", "CC"}) {
    BuildEnv e = read_build_env(sources({{var, "/opt/gcc-16/bin/gcc"}}));
    ASSERT_TRUE(e.host_cc_version) << var;
    auto checks = check_build_env(e);
    const Check* c = find_check(checks, "host_compiler");
    ASSERT_NE(c, nullptr);
    EXPECT_EQ(c->level, "error") << var;
    EXPECT_TRUE(contains(c->what, "gcc 16.1.1 (/opt/gcc-16/bin/gcc) is newer than nvcc 13.0.88 supports (gcc 15 at most"))
        << c->what;
    EXPECT_TRUE(contains(c->fix, "gcc-15")) << c->fix;
  }
}

TEST(BuildEnvChecks, CudaHomeWithoutNvccIsFlagged) {
  BuildEnv e = read_build_env(sources({{"CUDA_HOME", "/opt/cuda-12.1"}}));
  EXPECT_TRUE(e.nvcc_path.empty());
  auto checks = check_build_env(e);
  EXPECT_EQ(find_check(checks, "cuda_home")->level, "error");
  EXPECT_EQ(find_check(checks, "torch_cuda")->level, "error") << "torch for CUDA 12.1 and no nvcc";
}

TEST(BuildEnvChecks, CpuOnlyTorchAndUserMaxJobsAreNoted) {
  BuildEnv e = read_build_env(sources({{"MAX_JOBS", "32"}}));
  e.torch->cuda.reset();
  auto checks = check_build_env(e);
  EXPECT_EQ(find_check(checks, "torch_cuda")->level, "warn");
  EXPECT_TRUE(contains(find_check(checks, "torch_cuda")->what, "CPU-only"));
  const Check* mj = find_check(checks, "max_jobs");
  EXPECT_EQ(mj->level, "note");
  EXPECT_TRUE(contains(mj->what, "MAX_JOBS=32 is set")) << mj->what;
  EXPECT_TRUE(contains(mj->what, "sets MAX_JOBS=8 only when you did not")) << mj->what;
}

// flash-attention #2493: 880 GB, 96 CPUs, ~850 GB free, NVCC_THREADS=4,
// CUDA 13's six targets. The formula picks 42; memgate runs what fits.
TEST(BuildEnvFlashAttn, TheHardRebootMachine) {
  BuildEnv e;
  e.nvcc = Version{13, 0, 88, "13.0.88"};
  e.cpus = 96;
  e.slots = 96;
  e.available = 850 * GiB;
  e.budget = 880'000'000'000 - 8 * GiB;
  e.measured_peaks = measured();
  auto p = plan_flash_attn(e);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->targets.size(), 6u);
  EXPECT_EQ(p->nvcc_threads, 4);
  EXPECT_EQ(p->pipelines, 4);
  EXPECT_EQ(p->formula_jobs, 42);
  // The heaviest measured kernel peaks at ~7 GB with one pipeline.
  EXPECT_GT(p->peak_max, 24 * GiB);
  EXPECT_LT(p->peak_max, 30 * GiB);
  EXPECT_GT(p->formula_worst, e.available) << "42 of the heaviest jobs do not fit";
  EXPECT_EQ(p->memgate_cpu_jobs, 24);  // 96 slots / 4 threads per job
  EXPECT_EQ(p->memgate_jobs, std::min(p->memgate_cpu_jobs, p->memgate_heavy_jobs));
  EXPECT_LE(static_cast<Bytes>(p->memgate_heavy_jobs) * p->peak_max, e.budget);
  EXPECT_EQ(p->memgate_max_jobs, 192);
  EXPECT_TRUE(contains(p->peak_source, "measurements")) << p->peak_source;
  auto checks = check_build_env(e);
  const Check* c = find_check(checks, "flash_attn_max_jobs");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->level, "warn");
  EXPECT_TRUE(contains(c->what, "MAX_JOBS=42")) << c->what;
}

TEST(BuildEnvFlashAttn, AJobBiggerThanTheBudgetAsksForFewerTargetsAtOnce) {
  BuildEnv e;
  e.nvcc = Version{13, 0, 88, "13.0.88"};
  e.cpus = e.slots = 2;
  e.available = 21 * GiB;
  e.budget = 22 * GiB;
  e.measured_peaks = measured();
  auto checks = check_build_env(e);
  const Check* c = find_check(checks, "flash_attn_max_jobs");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->level, "warn");
  EXPECT_TRUE(contains(c->what, "no job count avoids the OOM killer")) << c->what;
  EXPECT_TRUE(contains(c->fix, "NVCC_THREADS=1 (about 6.")) << c->fix;
}

TEST(BuildEnvFlashAttn, HistoryOfTheSameTargetsWinsOverTheMeasurements) {
  BuildEnv e;
  e.nvcc = Version{13, 0, 88, "13.0.88"};
  e.env["FLASH_ATTN_CUDA_ARCHS"] = "80";
  e.env["NVCC_THREADS"] = "2";
  e.cpus = e.slots = 8;
  e.available = e.budget = 64 * GiB;
  e.measured_peaks = measured();
  JobRecord j;
  j.key.tool = "nvcc";
  j.key.klass = "nvcc:compile[sm_80,compute_80]";
  j.key.cpu_weight = 2;
  j.peak_bytes = 10 * GiB;
  e.history_nvcc = {j};
  auto p = plan_flash_attn(e);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->pipelines, 2);
  EXPECT_EQ(p->peak_max, 10 * GiB);
  EXPECT_TRUE(contains(p->peak_source, "history: 1 nvcc job of nvcc:compile[sm_80,compute_80]")) << p->peak_source;
}

TEST(BuildEnvRender, TextAndJsonCarryTheFindings) {
  BuildEnv e = read_build_env(sources({{"FLASH_ATTN_CUDA_ARCHS", "80;90"}}));
  std::string text = render_build_env_text(e);
  EXPECT_TRUE(contains(text, "nvcc             13.0.88")) << text;
  EXPECT_TRUE(contains(text, "error torch 2.3.1+cu121 was built for CUDA 12.1")) << text;
  EXPECT_TRUE(contains(text, "fix: install ninja")) << text;
  EXPECT_TRUE(contains(text, "FLASH_ATTN_CUDA_ARCHS  80;90 -> sm_80, sm_90, compute_90 (3 targets)")) << text;
  auto j = build_env_json(e);
  EXPECT_EQ(j["nvcc_version"], "13.0.88");
  EXPECT_EQ(j["torch"]["cuda"], "12.1");
  EXPECT_TRUE(j["ninja_path"].is_null());
  EXPECT_EQ(j["host_compiler"]["nvcc_gcc_max"], 15);
  EXPECT_EQ(j["flash_attn"]["targets"].size(), 3u);
  bool flagged = false;
  for (const auto& c : j["checks"]) flagged = flagged || (c["key"] == "torch_cuda" && c["level"] == "error");
  EXPECT_TRUE(flagged);
}

// A plain C++ project hears nothing about torch; an extension's does, and
// an `error` finding is what doctor --build-env exits 1 for.
TEST(BuildEnvChecks, QuietAboutTorchForAProjectWithout) {
  BuildEnvSources s = sources({});
  s.project_dir = "/projects/cpp";
  BuildEnv plain = read_build_env(s);
  EXPECT_FALSE(plain.torch_project);
  auto checks = check_build_env(plain);
  for (const char* k : {"torch_cuda", "module_wheel", "module_setuptools", "ninja", "max_jobs", "flash_attn_max_jobs"})
    EXPECT_EQ(find_check(checks, k), nullptr) << k;
  const Check* note = find_check(checks, "torch");
  ASSERT_NE(note, nullptr);
  EXPECT_EQ(note->level, "note");
  EXPECT_TRUE(contains(note->what, "no setup.py, pyproject.toml, setup.cfg or requirements.txt in /projects/cpp")) << note->what;
  EXPECT_FALSE(has_error(checks));
  const std::string text = render_build_env_text(plain);
  EXPECT_FALSE(contains(text, "FLASH_ATTN_CUDA_ARCHS")) << text;
  EXPECT_FALSE(contains(text, "flash-attn 2.8")) << text;
  EXPECT_TRUE(contains(text, "no problems found for CUDA/ROCm builds")) << text;
  EXPECT_EQ(nlohmann::json::parse(build_env_json(plain).dump())["torch_project"], false);

  s.project_dir = "/projects/ext";
  BuildEnv ext = read_build_env(s);
  EXPECT_TRUE(ext.torch_project);
  EXPECT_EQ(ext.torch_why, "/projects/ext/setup.py names torch");
  EXPECT_EQ(find_check(check_build_env(ext), "torch_cuda")->level, "error");  // torch for CUDA 12.1, nvcc 13
  EXPECT_TRUE(has_error(check_build_env(ext)));

  s.project_dir = "/projects/cpp";
  s.python = "/usr/bin/python3";  // asked for by name: checked wherever it runs
  EXPECT_TRUE(read_build_env(s).torch_project);
}
