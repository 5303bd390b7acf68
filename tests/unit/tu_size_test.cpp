#include "wrap/tu_size.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

using namespace memgate;

namespace {

std::vector<std::string> pre(const std::vector<std::string>& argv) {
  auto cmd = preprocess_command(argv, analyze_command(argv, "/src/build"));
  return cmd ? *cmd : std::vector<std::string>{"<none>"};
}

}  // namespace

// The preprocessor's command writes nothing but its stdout: the object,
// the dependency files and saved temporaries of the compile are dropped.
TEST(TuSize, ThePreprocessorCommandWritesOnlyToStdout) {
  EXPECT_EQ(pre({"/usr/bin/g++", "-O2", "-Iinc", "-MD", "-MT", "a.o", "-MF", "a.o.d", "-o", "a.o", "-c", "../a.cpp"}),
            (std::vector<std::string>{"/usr/bin/g++", "-O2", "-Iinc", "../a.cpp", "-E", "-o", "-"}));
  EXPECT_EQ(pre({"gcc", "-Wp,-MD,.a.o.d", "-save-temps=obj", "-MMD", "-MFa.d", "-oa.o", "-c", "a.c", "-DX=1"}),
            (std::vector<std::string>{"gcc", "a.c", "-DX=1", "-E", "-o", "-"}));
  EXPECT_EQ(pre({"clang++", "-x", "c++", "-include", "pch.h", "-c", "b.cc", "-o", "b.o"}),
            (std::vector<std::string>{"clang++", "-x", "c++", "-include", "pch.h", "b.cc", "-E", "-o", "-"}));
}

// Only gcc and clang compiles of one C or C++ file are measured.
TEST(TuSize, OnlyCAndCxxCompilesAreMeasured) {
  const std::vector<std::string> none{"<none>"};
  EXPECT_EQ(pre({"nvcc", "-c", "k.cu", "-o", "k.o"}), none);
  EXPECT_EQ(pre({"g++", "a.o", "b.o", "-o", "app"}), none);           // a link
  EXPECT_EQ(pre({"g++", "-E", "a.cpp"}), none);                       // already preprocessing
  EXPECT_EQ(pre({"gfortran", "-c", "m.f90", "-o", "m.o"}), none);     // no C preprocessor size
  EXPECT_EQ(pre({"g++", "-c", "-x", "c++", "-", "-o", "s.o"}), none);  // stdin
  EXPECT_EQ(pre({"rustc", "--crate-type", "lib", "lib.rs"}), none);
}

// What the program writes to stdout, counted; nothing when it fails or
// outlives its time.
TEST(TuSize, CountsStdoutAndGivesNothingForAFailureOrATimeout) {
  EXPECT_EQ(preprocessed_size("/bin/echo", {"echo", "hello"}, 10), 6);
  EXPECT_EQ(preprocessed_size("/bin/false", {"false"}, 10), 0);
  EXPECT_EQ(preprocessed_size("/nonexistent/cc", {"cc"}, 10), 0);
  EXPECT_EQ(preprocessed_size("/bin/sleep", {"sleep", "30"}, 0.2), 0);
}

// The preprocessor runs marked as a probe: nothing under it is gated or
// reported as ungated.
TEST(TuSize, ThePreprocessorRunsAsAProbe) {
  ::setenv("MEMGATE_JOB", "7", 1);
  EXPECT_EQ(preprocessed_size("/bin/sh", {"sh", "-c", "printf %s \"$MEMGATE_JOB\""}, 10), 5);
  ::unsetenv("MEMGATE_JOB");
}
