// The portable profile file of `history export/import` and `--prior`, and
// the imported profiles in the SQLite history.
#include "history/profiles.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "history/history.hpp"
#include "predict/envelope.hpp"
#include "predict/identity.hpp"
#include "predict/predictor.hpp"

using namespace memgate;
namespace fs = std::filesystem;

namespace {

JobRecord job(const std::string& stem, Bytes peak, int exit_status = 0, const std::string& klass = "nvcc:compile[sm_80]") {
  JobRecord j;
  j.key = {"nvcc", "nvcc:compile:src/" + stem + ".cu->csrc/" + stem + ".o[sm_80]", klass, stem, 1};
  j.cwd = "/home/alice/flash-attention/build/temp";
  j.peak_bytes = peak;
  j.start_s = 0;
  j.end_s = 100;
  j.cpu_s = 90;
  j.peak_over_frac = 0.25;
  j.after_peak_bytes = peak / 4;
  j.exit_status = exit_status;
  j.attempt_log.push_back({0, 100, exit_status == 0 ? Outcome::ok : Outcome::failed, peak});
  return j;
}

struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = (fs::temp_directory_path() / "memgate-profiles-test.XXXXXX").string();
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() { fs::remove_all(path); }
};

}  // namespace

TEST(Profiles, SummarizeKeepsCompleteRealRunsPerIdentity) {
  std::vector<JobRecord> jobs = {job("a", 5 * GiB), job("a", 6 * GiB), job("b", 3 * GiB, 1),
                                 job("probe", 4 * MiB, 0, "c++:probe")};
  auto profiles = summarize_profiles(jobs);
  ASSERT_EQ(profiles.size(), 1u);  // b failed, the probe is no kind of job
  EXPECT_EQ(profiles[0].key.stem, "a");
  EXPECT_EQ(profiles[0].peak, 6 * GiB);
  EXPECT_EQ(profiles[0].runs, 2);
  EXPECT_EQ(profiles[0].peak_over_frac, 0.25);
  EXPECT_DOUBLE_EQ(profiles[0].wall_s, 100);
}

TEST(Profiles, RoundTripWithoutPathsOrUsers) {
  auto profiles = summarize_profiles({job("a", 5 * GiB), job("b", 3 * GiB)});
  std::string text = encode_profiles(profiles);
  EXPECT_EQ(text.find("alice"), std::string::npos);
  EXPECT_EQ(text.find("/home"), std::string::npos);
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["format"], "memgate-profiles");
  EXPECT_EQ(j["version"], kProfilesVersion);
  auto back = decode_profiles(text, PredictionSource::imported);
  ASSERT_TRUE(back.ok()) << back.error();
  ASSERT_EQ(back->size(), 2u);
  EXPECT_EQ((*back)[0].key.identity, profiles[0].key.identity);
  EXPECT_EQ((*back)[0].peak, 5 * GiB);
  EXPECT_EQ((*back)[0].origin, PredictionSource::imported);
}

// Profiles imported into a fresh history, and read back from it.
static std::vector<JobProfile> through_history(const std::vector<JobProfile>& profiles) {
  TempDir d;
  auto h = History::open(d.path + "/h.db");
  EXPECT_TRUE(h.ok()) << h.error();
  if (!h.ok()) return {};
  EXPECT_TRUE((*h)->import_profiles(profiles).ok());
  return (*h)->imported_profiles();
}

static std::string error_of(const std::string& text) {
  auto r = decode_profiles(text, PredictionSource::imported);
  return r.ok() ? std::string("accepted") : r.error();
}

TEST(Profiles, BadFilesAreRefusedWholeWithTheReason) {
  std::string good = encode_profiles(summarize_profiles({job("a", 5 * GiB)}));
  EXPECT_EQ(error_of(good.substr(0, good.size() / 2)).rfind("not valid JSON (", 0), 0u);
  EXPECT_NE(error_of(R"({"builds": []})").find("not a memgate profile file"), std::string::npos);
  EXPECT_NE(error_of(R"({"format": "memgate-profiles", "profiles": []})").find("no format version"), std::string::npos);
  EXPECT_NE(error_of(R"({"format": "memgate-profiles", "version": 3, "profiles": []})").find("format version 3"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"format": "memgate-profiles", "version": 0, "profiles": []})").find("format version 0"),
            std::string::npos);
  auto j = nlohmann::json::parse(good);
  j["profiles"][0]["peak_bytes"] = "lots";
  EXPECT_NE(error_of(j.dump()).find("profile 1: 'peak_bytes'"), std::string::npos) << error_of(j.dump());
  j = nlohmann::json::parse(good);
  j["profiles"][0]["peak_over_frac"] = 7;
  EXPECT_NE(error_of(j.dump()).find("out of range"), std::string::npos);
  j = nlohmann::json::parse(good);
  j["profiles"][0]["envelope"] = {1, 0.5, 1.5};
  EXPECT_NE(error_of(j.dump()).find("'envelope' value 1.5"), std::string::npos) << error_of(j.dump());
  j["profiles"][0]["envelope"] = {1};
  EXPECT_NE(error_of(j.dump()).find("'envelope' is not a list"), std::string::npos);
  j["profiles"][0]["envelope"] = {1, "x"};
  EXPECT_NE(error_of(j.dump()).find("not a number"), std::string::npos);
  j = nlohmann::json::parse(good);
  j["profiles"][0].erase("identity");
  EXPECT_NE(error_of(j.dump()).find("'identity'"), std::string::npos);
}

TEST(Profiles, Version2CarriesTheEnvelopeOfTheRecordedCurves) {
  // Three runs that peak at 25% and fall to a tenth by 40%; one of them
  // noisy (high until 80%). The export keeps the majority's curve.
  auto with_curve = [](Bytes peak, int high_until) {
    JobRecord j = job("a", peak);
    for (int t = 0; t <= 100; t += 2)
      j.profile.push_back({static_cast<double>(t), t <= 25 ? peak * t / 25 : t <= high_until ? peak : peak / 10});
    return j;
  };
  auto profiles = summarize_profiles({with_curve(5 * GiB, 30), with_curve(5 * GiB, 80), with_curve(5 * GiB, 30)});
  ASSERT_EQ(profiles.size(), 1u);
  ASSERT_FALSE(profiles[0].envelope.empty());
  EXPECT_DOUBLE_EQ(envelope_at(profiles[0].envelope, 0.1), 1.0);
  EXPECT_NEAR(envelope_at(profiles[0].envelope, 0.5), 0.1, 1e-9);
  auto text = encode_profiles(profiles);
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["version"], 2);
  EXPECT_EQ(j["profiles"][0]["envelope"].size(), static_cast<std::size_t>(kEnvelopePoints));
  auto back = decode_profiles(text, PredictionSource::imported);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_NEAR(envelope_at((*back)[0].envelope, 0.5), 0.1, 1e-3);
  EXPECT_DOUBLE_EQ(envelope_at((*back)[0].envelope, 0.0), 1.0);
  // Imported into a history, it keeps its envelope.
  auto kept = through_history(*back);
  ASSERT_EQ(kept.size(), 1u);
  ASSERT_EQ(kept[0].envelope.at.size(), static_cast<std::size_t>(kEnvelopePoints));
  EXPECT_NEAR(envelope_at(kept[0].envelope, 0.5), 0.1, 1e-3);
  EXPECT_GE(envelope_at(kept[0].envelope, 0.5) + 1e-9, envelope_at((*back)[0].envelope, 0.5));  // rounded up
  // A predictor seeded with it predicts the curve, not the step.
  Predictor pred;
  pred.add_profile((*back)[0]);
  EXPECT_NEAR(envelope_at(pred.predict(profiles[0].key).envelope, 0.5), 0.1, 1e-3);
}

// The fall (Envelope::fall_x) travels with the envelope, so a job
// predicted from another machine's record is read from its fall as one
// from its own: rounded down (less progress). The climb does not: it
// would time a start on the other machine's clock. A file without the
// fall reads as before; a malformed one is refused.
TEST(Profiles, TheFallTravelsWithTheEnvelopeAndTheClimbDoesNot) {
  JobRecord r = job("a", 5 * GiB);
  for (int t = 0; t <= 100; t += 2)
    r.profile.push_back({static_cast<double>(t), t <= 25 ? 5 * GiB * t / 25 : t <= 30 ? 5 * GiB : GiB / 2});
  auto profiles = summarize_profiles({r});
  ASSERT_EQ(profiles.size(), 1u);
  const Envelope& e = profiles[0].envelope;
  ASSERT_FALSE(e.rise.empty());
  ASSERT_GT(e.fall_x, 0.3);
  auto text = encode_profiles(profiles);
  auto j = nlohmann::json::parse(text);
  EXPECT_EQ(j["version"], 2);
  EXPECT_FALSE(j["profiles"][0].contains("rise"));
  auto check = [&](const Envelope& got) {
    EXPECT_TRUE(got.rise.empty());
    EXPECT_LE(got.fall_x, e.fall_x + 1e-9);
    EXPECT_NEAR(got.fall_x, e.fall_x, 1e-3);
  };
  auto back = decode_profiles(text, PredictionSource::imported);
  ASSERT_TRUE(back.ok()) << back.error();
  check((*back)[0].envelope);
  // Imported into a history, it keeps it; a predictor seeded with it
  // predicts it.
  auto kept = through_history(*back);
  ASSERT_EQ(kept.size(), 1u);
  check(kept[0].envelope);
  Predictor pred;
  pred.add_profile(kept[0]);
  check(pred.predict(profiles[0].key).envelope);
  // Without it: unknown, as before it was written.
  j["profiles"][0].erase("fall_x");
  auto old = decode_profiles(j.dump(), PredictionSource::imported);
  ASSERT_TRUE(old.ok()) << old.error();
  EXPECT_LT((*old)[0].envelope.fall_x, 0);
  EXPECT_FALSE((*old)[0].envelope.empty());
  // Malformed: refused, with the key named.
  j["profiles"][0]["fall_x"] = 2;
  EXPECT_NE(error_of(j.dump()).find("'fall_x' is out of range"), std::string::npos);
  j["profiles"][0]["fall_x"] = "x";
  EXPECT_NE(error_of(j.dump()).find("'fall_x' is missing or not a number"), std::string::npos);
}

TEST(Profiles, AVersion1FileStillImportsItsTwoNumbersAsAStep) {
  const std::string v1 = R"({"format": "memgate-profiles", "version": 1, "profiles": [
    {"identity": "nvcc:compile:src/k.cu->k.o[sm_80]", "tool": "nvcc", "klass": "nvcc:compile[sm_80]",
     "stem": "k", "cpu_weight": 1, "peak_bytes": 4000000000, "wall_s": 100, "cpu_s": 98,
     "peak_over_frac": 0.3, "after_peak_bytes": 1000000000, "runs": 2}]})";
  auto back = decode_profiles(v1, PredictionSource::imported);
  ASSERT_TRUE(back.ok()) << back.error();
  ASSERT_EQ(back->size(), 1u);
  const Envelope& e = (*back)[0].envelope;
  ASSERT_FALSE(e.empty());
  EXPECT_DOUBLE_EQ(envelope_at(e, 0.2), 1.0);
  EXPECT_DOUBLE_EQ(envelope_at(e, 0.35), 0.25);
  EXPECT_DOUBLE_EQ(envelope_at(e, 1.0), 0.25);
  // Written again, it is a version 2 file with that step.
  auto again = decode_profiles(encode_profiles(*back), PredictionSource::imported);
  ASSERT_TRUE(again.ok()) << again.error();
  EXPECT_EQ((*again)[0].envelope, e);
  // The shipped prior is version 2: each kernel's measured curve, fallen
  // to well under half its peak by 40% of its life.
  auto shipped = read_profiles_file(std::string(MEMGATE_FIXTURES) + "/../../share/priors/flash-attn-2.json",
                                    PredictionSource::prior);
  ASSERT_TRUE(shipped.ok()) << shipped.error();
  ASSERT_FALSE(shipped->empty());
  int measured = 0;
  for (const JobProfile& p : *shipped) {
    ASSERT_EQ(p.envelope.at.size(), static_cast<std::size_t>(kEnvelopePoints)) << p.key.stem;
    if (p.peak_over_frac >= 1.0) continue;  // no profile was recorded: high to the end
    EXPECT_LT(envelope_at(p.envelope, 0.4), 0.7) << p.key.stem;
    // Its fall, from which a job is read once its memory has fallen too.
    EXPECT_GT(p.envelope.fall_x, 0) << p.key.stem;
    ++measured;
  }
  EXPECT_GE(measured, 15);
}

TEST(Profiles, IdentitiesNamingPathsOrPeopleStayHome) {
  const std::vector<std::string> words = {"alice", "users"};
  EXPECT_TRUE(is_portable("nvcc:compile:src/k.cu->csrc/k.o[sm_80]", words));
  EXPECT_TRUE(is_portable("c++:link#0123456789abcdef", words));
  EXPECT_FALSE(is_portable("c++:compile:/abs/a.cpp->a.o", words));
  EXPECT_FALSE(is_portable("c++:link->/usr/lib/x.so", words));
  EXPECT_FALSE(is_portable("c++:compile:alice/a.cpp->a.o", words));
  EXPECT_FALSE(is_portable("c++:compile:src/a.cpp->home/alice/a.o", words));
  EXPECT_FALSE(is_portable("c++:compile:src/a.cpp->users/x/a.o", words));
  EXPECT_TRUE(is_portable("c++:compile:src/alicexyz.cpp->alicexyz.o", words));
  EXPECT_FALSE(is_portable("c++:link->alice", words));
  EXPECT_FALSE(is_portable("nvcc:compile:src/k.cu->k.o[alice]", words));
  EXPECT_TRUE(is_portable("c++:link->app", {""})) << "an empty private word matches nothing";
}

TEST(Profiles, FilesAreWrittenWholeAndReadBounded) {
  TempDir d;
  const std::string f = d.path + "/p.json";
  ASSERT_TRUE(write_profiles_file(f, summarize_profiles({job("a", 5 * GiB)})).ok());
  auto back = read_profiles_file(f, PredictionSource::prior);
  ASSERT_TRUE(back.ok()) << back.error();
  EXPECT_EQ(back->size(), 1u);
  // A symlink at the destination is replaced, not followed.
  const std::string target = d.path + "/target";
  std::ofstream(target) << "keep";
  fs::create_symlink(target, d.path + "/link.json");
  ASSERT_TRUE(write_profiles_file(d.path + "/link.json", {}).ok());
  EXPECT_FALSE(fs::is_symlink(d.path + "/link.json"));
  std::ifstream in(target);
  std::string kept;
  in >> kept;
  EXPECT_EQ(kept, "keep");
  auto dir = read_profiles_file(d.path, PredictionSource::prior);
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.error().find("not a regular file"), std::string::npos);
  auto missing = read_profiles_file(d.path + "/none.json", PredictionSource::prior);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("none.json"), std::string::npos);
}

TEST(Profiles, ImportMergesIntoHistory) {
  TempDir d;
  auto h = History::open(d.path + "/h.db");
  ASSERT_TRUE(h.ok()) << h.error();
  auto first = summarize_profiles({job("a", 5 * GiB), job("b", 3 * GiB)});
  auto added = (*h)->import_profiles(first);
  ASSERT_TRUE(added.ok()) << added.error();
  EXPECT_EQ(*added, 2);
  auto second = summarize_profiles({job("b", 4 * GiB), job("c", 2 * GiB)});
  added = (*h)->import_profiles(second);
  ASSERT_TRUE(added.ok());
  EXPECT_EQ(*added, 1);  // c is new; b is replaced
  auto all = (*h)->imported_profiles();
  ASSERT_EQ(all.size(), 3u);
  EXPECT_EQ(all[1].key.stem, "b");
  EXPECT_EQ(all[1].peak, 4 * GiB);
  for (const auto& p : all) EXPECT_EQ(p.origin, PredictionSource::imported);
}

// The shipped flash-attn prior (share/priors, made by
// scripts/make-flash-attn-prior from the measured jobs) is a valid file,
// and torch's own command line for a measured kernel finds its profile.
TEST(Profiles, TheShippedFlashAttnPriorMatchesTorchsCommandLine) {
  const std::string fixtures = MEMGATE_FIXTURES;
  auto prior = read_profiles_file(fixtures + "/../../share/priors/flash-attn-2.json", PredictionSource::prior);
  ASSERT_TRUE(prior.ok()) << prior.error();
  EXPECT_GE(prior->size(), 16u);
  std::ifstream in(fixtures + "/cmdlines/torch_nvcc_flash_bwd.txt");
  std::string cwd, line;
  std::vector<std::string> argv;
  const std::string req = "/tmp/pip-req-build-abc12345";
  while (std::getline(in, line)) {
    for (size_t at = line.find("@REQ@"); at != std::string::npos; at = line.find("@REQ@")) line.replace(at, 5, req);
    for (size_t at = line.find("@ENV@"); at != std::string::npos; at = line.find("@ENV@"))
      line.replace(at, 5, "/tmp/pip-build-env-xyz98765");
    if (line.rfind("cwd=", 0) == 0) cwd = line.substr(4);
    else if (!line.empty()) argv.push_back(line);
  }
  const JobKey key = analyze_command(argv, cwd).key;
  Predictor p;
  for (const JobProfile& pr : *prior) p.add_profile(pr);
  Prediction pred = p.predict(key);
  EXPECT_EQ(pred.source, PredictionSource::prior) << key.identity;
  // Measured: 12.6 GB at sm80+sm90 with --threads 4.
  EXPECT_GE(pred.peak, 12'589'047'808);
  EXPECT_LE(pred.peak, 12'589'047'808 * 11 / 10);
  // An unmeasured kernel of the same kind: from its kind, by stem.
  JobKey other = key;
  other.identity = "nvcc:compile:src/flash_bwd_hdim192_bf16_sm80.cu->csrc/flash_attn/src/flash_bwd_hdim192_bf16_sm80.o[sm_80]";
  other.klass = "nvcc:compile[sm_80]";
  other.stem = "flash_bwd_hdim192_bf16_sm80";
  other.cpu_weight = 1;
  Prediction similar = p.predict(other);
  EXPECT_EQ(similar.source, PredictionSource::similar);
  EXPECT_GE(similar.peak, 6'000'000'000);
  EXPECT_LE(similar.peak, 7'500'000'000);
}
