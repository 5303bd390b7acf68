#include "util/size.hpp"

#include <gtest/gtest.h>

using namespace memgate;

TEST(ParseSize, AcceptsBinaryUnits) {
  EXPECT_EQ(*parse_size("2560M"), 2560 * MiB);
  EXPECT_EQ(*parse_size("8G"), 8 * GiB);
  EXPECT_EQ(*parse_size("512k"), 512 * KiB);
  EXPECT_EQ(*parse_size("1T"), TiB);
  EXPECT_EQ(*parse_size("4096"), 4096);
  EXPECT_EQ(*parse_size("1.5G"), 3 * GiB / 2);
  EXPECT_EQ(*parse_size("2GiB"), 2 * GiB);
}

TEST(ParseSize, PercentNeedsABase) {
  EXPECT_FALSE(parse_size("80%").ok());
  EXPECT_EQ(*parse_size("50%", 4 * GiB), 2 * GiB);
  EXPECT_FALSE(parse_size("150%", 4 * GiB).ok());
}

TEST(ParseSize, RejectsGarbage) {
  for (const char* bad : {"", "G", "-1G", "12Q", "abc", "1e400", " +3M"}) {
    auto r = parse_size(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
}

// strtod read "0x10G" as hex and took "1e3", "inf" and
// half a byte; a size is decimal digits with at most one point.
TEST(ParseSize, OnlyDecimalNumbers) {
  for (const char* bad : {"0x10G", "0X10", "1e3", "1e3G", "inf", "nan", "infG", ".5G", "5.G", "1 G", "0.5", "1.5B"}) {
    auto r = parse_size(bad, 8 * GiB);
    EXPECT_FALSE(r.ok()) << bad;
  }
  EXPECT_EQ(*parse_size("0.5G"), GiB / 2);
  EXPECT_EQ(*parse_size("010M"), 10 * MiB);  // leading zeros are decimal, not octal
  EXPECT_EQ(*parse_size("12.5%", 8 * GiB), GiB);
}

TEST(FormatBytes, IsShortAndBinary) {
  EXPECT_EQ(format_bytes(512 * MiB), "512 MiB");
  EXPECT_EQ(format_bytes(5 * GiB / 2), "2.50 GiB");
  EXPECT_EQ(format_bytes(12), "12 B");
}
