#include "platform/meminfo.hpp"

#include <gtest/gtest.h>

#include "fixtures.hpp"

using namespace memgate;
using namespace memgate::platform;
using memgate::test::fixture;

TEST(Meminfo, ParsesRecordedFileInBytes) {
  auto m = parse_meminfo(fixture("proc/meminfo"));
  ASSERT_TRUE(m.total && m.available && m.free && m.cached && m.shmem && m.swap_total && m.swap_free);
  EXPECT_EQ(*m.total, Bytes{24683620} * 1024);
  EXPECT_EQ(*m.cached, Bytes{109884} * 1024);
  EXPECT_EQ(*m.swap_total, 0);
  EXPECT_LE(*m.available, *m.total);
}

TEST(Meminfo, MalformedFieldsAreUnknownOthersSurvive) {
  auto m = parse_meminfo(fixture("proc/meminfo.malformed"));
  EXPECT_FALSE(m.total);      // "lots kB"
  EXPECT_FALSE(m.free);       // no colon
  EXPECT_FALSE(m.available);  // negative
  EXPECT_FALSE(m.cached);     // "MB" is not what the kernel writes
  EXPECT_FALSE(m.shmem);      // empty
  ASSERT_TRUE(m.swap_total);
  EXPECT_EQ(*m.swap_total, Bytes{2097148} * 1024);
}

TEST(Meminfo, TruncatedLineIsNotATinyNumber) {
  auto m = parse_meminfo(fixture("proc/meminfo.truncated"));
  ASSERT_TRUE(m.total);
  ASSERT_TRUE(m.free);
  EXPECT_FALSE(m.available);  // "MemAvailable:   2434" lost its unit and its digits
  EXPECT_FALSE(m.cached);
}

TEST(Meminfo, EmptyOrGarbageGivesNothing) {
  auto m = parse_meminfo("");
  EXPECT_FALSE(m.total);
  m = parse_meminfo("\x01\x02:::\n:\n");
  EXPECT_FALSE(m.total);
}

TEST(Meminfo, ReaderSaysUnknownForMissingFile) {
  EXPECT_FALSE(read_meminfo("/nonexistent/meminfo"));
  auto real = read_meminfo();
  ASSERT_TRUE(real);
  EXPECT_GT(real->total.value_or(0), 0);
}
