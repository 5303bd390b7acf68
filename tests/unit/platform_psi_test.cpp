#include "platform/psi.hpp"

#include <gtest/gtest.h>

#include "fixtures.hpp"

using namespace memgate;
using namespace memgate::platform;
using memgate::test::fixture;

TEST(Psi, ParsesRecordedFile) {
  auto p = parse_psi(fixture("proc/pressure_memory"));
  ASSERT_TRUE(p);
  ASSERT_TRUE(p->some);
  ASSERT_TRUE(p->full);
  EXPECT_EQ(p->some->total_us, 6811u);
  EXPECT_EQ(p->full->total_us, 5607u);
  EXPECT_DOUBLE_EQ(p->some->avg10, 0.0);
}

TEST(Psi, ReadsAveragesAndOnlySome) {
  auto p = parse_psi(fixture("proc/pressure_memory.some_only"));
  ASSERT_TRUE(p && p->some);
  EXPECT_FALSE(p->full);
  EXPECT_DOUBLE_EQ(p->some->avg10, 1.5);
  EXPECT_DOUBLE_EQ(p->some->avg60, 0.75);
  EXPECT_DOUBLE_EQ(p->some->avg300, 0.25);
  EXPECT_EQ(p->some->total_us, 123456u);
}

TEST(Psi, MalformedLineLeavesThatWindowUnknown) {
  auto p = parse_psi(fixture("proc/pressure_memory.malformed"));
  ASSERT_TRUE(p);
  EXPECT_FALSE(p->some);
  ASSERT_TRUE(p->full);
  EXPECT_EQ(p->full->total_us, 5607u);
}

TEST(Psi, TruncatedLastLineIsDropped) {
  auto p = parse_psi(fixture("proc/pressure_memory.truncated"));
  ASSERT_TRUE(p && p->some);
  EXPECT_FALSE(p->full);  // "avg60=0.0" would have parsed; the cut line is not trusted
}

TEST(Psi, GarbageOrEmptyIsUnknown) {
  EXPECT_FALSE(parse_psi(fixture("proc/pressure_memory.garbage")));
  EXPECT_FALSE(parse_psi(""));
  EXPECT_FALSE(parse_psi("some avg10=1 avg60=1 avg300=1\n"));  // no total
  EXPECT_FALSE(parse_psi("some avg10=1 avg60=1 avg300=1 total=1 extra=2\n"));
}

TEST(Psi, AbsentFileIsNoValueNotAnError) { EXPECT_FALSE(read_psi("/nonexistent/pressure/memory")); }
