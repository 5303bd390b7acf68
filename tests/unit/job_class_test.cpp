// The job class and identity (core/job_class.hpp): one writer and one
// reader of the stored form, and a reader that loses nothing.
#include "core/job_class.hpp"

#include <gtest/gtest.h>

#include <random>

using namespace memgate;

TEST(JobClass, WritesTheStoredForms) {
  JobClass nvcc{"", "nvcc", "compile", {"sm_80", "sm_90"}};
  EXPECT_EQ(nvcc.str(), "nvcc:compile[sm_80,sm_90]");
  EXPECT_EQ(nvcc.family(), "nvcc:compile");
  EXPECT_EQ((JobClass{"distcc", "g++", "compile", {}}).str(), "distcc>g++:compile");
  EXPECT_EQ((JobIdentity{nvcc, "src/k.cu", "obj/k.o", ""}).str(), "nvcc:compile:src/k.cu->obj/k.o[sm_80,sm_90]");
  EXPECT_EQ((JobIdentity{JobClass{"", "c++", "link", {}}, "", "app", ""}).str(), "c++:link->app");
  EXPECT_EQ((JobIdentity{JobClass{"", "cc", "compile", {}}, "", "", "0123abcd"}).str(), "cc:compile#0123abcd");
  EXPECT_EQ((JobIdentity{JobClass{"", "c++", "", {}}, "", "obj/a.o", ""}).str(), "c++->obj/a.o");
}

TEST(JobClass, ReadsEachPartBack) {
  JobIdentity id = parse_job_identity("distcc>nvcc:compile:src/k.cu->obj/k.cu.o[sm_80,sm_90]");
  EXPECT_EQ(id.klass, (JobClass{"distcc", "nvcc", "compile", {"sm_80", "sm_90"}}));
  EXPECT_EQ(id.source, "src/k.cu");
  EXPECT_EQ(id.output, "obj/k.cu.o");
  EXPECT_EQ(id.tag, "");
  EXPECT_EQ(parse_job_identity("c++:compile:src/a.cpp->obj/a.o").output, "obj/a.o");
  EXPECT_EQ(parse_job_identity("c++:link#abc").output, "");
  EXPECT_EQ(parse_job_identity("c++:link#abc").tag, "abc");
  EXPECT_EQ(parse_job_identity("c++->obj/a.o").output, "obj/a.o");
  EXPECT_EQ(parse_job_identity("c++->obj/a.o").klass.tool, "c++");
  EXPECT_EQ(parse_job_class("nvcc:compile[8 targets]").targets, std::vector<std::string>{"8 targets"});
  EXPECT_TRUE(parse_job_class("gcc:probe").is_probe());
  EXPECT_TRUE(parse_job_class("distcc>gcc:probe").is_probe());
  EXPECT_TRUE(parse_job_class("ld:link").is_link());
  EXPECT_FALSE(parse_job_class("nvcc:compile[sm_80]").remote());
  EXPECT_EQ(klass_family("distcc>nvcc:compile[sm_80]"), "distcc>nvcc:compile");
}

TEST(JobClass, ASourceOrOutputWithMarkersStaysWhole) {
  // A source named with '#' and an output: the tag is only a word at the end.
  JobIdentity id = parse_job_identity("cc:compile:src/a#b.c->a.o");
  EXPECT_EQ(id.source, "src/a#b.c");
  EXPECT_EQ(id.output, "a.o");
  // "->" is no engine, a path with ':' no mode.
  EXPECT_EQ(parse_job_identity("c++->x>y").klass.engine, "");
  EXPECT_EQ(parse_job_identity("g++:compile:dir>x/a.c").klass.engine, "");
}

// Whatever the text (an old record, a test's "a", a hostile string from
// an imported profile), parse then str gives it back.
TEST(JobClass, ReadingAndWritingBackLosesNothing) {
  const std::string alphabet = "ab:>-#[],/+ ";
  std::mt19937 rng(28);
  std::uniform_int_distribution<std::size_t> len(0, 14), pick(0, alphabet.size() - 1);
  for (int i = 0; i < 50000; ++i) {
    std::string s;
    for (std::size_t n = len(rng); n > 0; --n) s += alphabet[pick(rng)];
    ASSERT_EQ(parse_job_class(s).str(), s);
    ASSERT_EQ(parse_job_identity(s).str(), s);
  }
  for (std::string s : {"", "a", "distcc>", "c++:sm_80", "x[]", "[x]", "t::s", "a:", "a:b:", "unknown:link#empty"}) {
    EXPECT_EQ(parse_job_class(s).str(), s);
    EXPECT_EQ(parse_job_identity(s).str(), s);
  }
}

TEST(JobClass, AnEngineIsWrittenInFrontOnce) {
  JobKey local = make_job_key(JobIdentity{JobClass{"", "g++", "compile", {}}, "", "out.o", ""}, "out");
  EXPECT_EQ(local.tool, "g++");
  JobKey remote = with_engine(local, "distcc");
  EXPECT_EQ(remote.identity, "distcc>g++:compile->out.o");
  EXPECT_EQ(remote.klass, "distcc>g++:compile");
  EXPECT_EQ(remote.tool, "g++");
  EXPECT_TRUE(parse_job_class(remote.klass).remote());
  EXPECT_EQ(parse_job_class(remote.klass).engine, "distcc");
  EXPECT_EQ(with_engine(remote, "icecc").identity, remote.identity);  // never twice
  EXPECT_EQ(with_engine(local, "").identity, local.identity);
  JobKey bare;
  bare.identity = "a";
  EXPECT_EQ(with_engine(bare, "distcc").identity, "distcc>a");
}

// What an identity shows of the machine it was made on: its words, path
// components one by one, and whether any part is an absolute path.
TEST(JobClass, AnIdentityTellsItsWordsAndAbsolutePaths) {
  JobIdentity id = parse_job_identity("distcc>nvcc:compile:src/k.cu+2->obj/k.o#ab12[sm_80,sm_90]");
  EXPECT_EQ(id.words(), (std::vector<std::string>{"distcc", "nvcc", "compile", "src", "k.cu+2", "obj", "k.o", "ab12",
                                                  "sm_80", "sm_90"}));
  EXPECT_FALSE(id.names_absolute_path());
  EXPECT_TRUE(parse_job_identity("c++:compile:/abs/a.cpp->a.o").names_absolute_path());
  EXPECT_TRUE(parse_job_identity("c++:link->/usr/lib/x.so").names_absolute_path());
  EXPECT_TRUE(parse_job_identity("/usr/bin/cc:compile:a.c").names_absolute_path());
  EXPECT_TRUE(parse_job_identity("cc:compile:a.c+/abs/b.c").names_absolute_path());
  // A word behind a marker inside a part is a word too.
  EXPECT_EQ(parse_job_identity("c++:link->x:alice").words(), (std::vector<std::string>{"c++", "link", "x", "alice"}));
  EXPECT_TRUE(parse_job_identity("").words().empty());
}

TEST(ClassifyBuild, ConfigureRelinkEmptyAndBuild) {
  auto jobs = [](std::initializer_list<const char*> klasses) {
    std::vector<JobRecord> out;
    for (const char* k : klasses) {
      JobRecord j;
      j.key.klass = k;
      out.push_back(j);
    }
    return out;
  };
  EXPECT_EQ(classify_build({}), "empty");
  EXPECT_EQ(classify_build(jobs({"cc:probe", "c++:probe", "cc:probe"})), "configure") << "CMake's try_compile checks";
  EXPECT_EQ(classify_build(jobs({"c++:link", "c++:link"})), "relink");
  EXPECT_EQ(classify_build(jobs({"cc:probe", "ld:link"})), "relink");
  EXPECT_EQ(classify_build(jobs({"c++:compile", "c++:link"})), "build");
  EXPECT_EQ(classify_build(jobs({"cc:probe", "nvcc:compile[sm_80]"})), "build");
  EXPECT_TRUE(is_full_build_kind("build"));
  EXPECT_TRUE(is_full_build_kind("")) << "recorded before kinds were";
  EXPECT_FALSE(is_full_build_kind("relink"));
}
