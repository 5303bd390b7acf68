#include "util/age.hpp"

#include <gtest/gtest.h>

using namespace memgate;

TEST(ParseAge, AWholeNumberAndOneUnit) {
  EXPECT_EQ(*parse_age("30d"), 30 * 86400.0);
  EXPECT_EQ(*parse_age("12h"), 12 * 3600.0);
  EXPECT_EQ(*parse_age("2w"), 14 * 86400.0);
  EXPECT_EQ(*parse_age("90m"), 90 * 60.0);
  EXPECT_EQ(*parse_age("45s"), 45.0);
  EXPECT_EQ(*parse_age("0d"), 0.0);
}

TEST(ParseAge, AnythingElseSaysWhatIsExpected) {
  for (const char* bad : {"", "30", "d", "30 d", "1.5d", "-3d", "30D", "3y", "30days", "12h30m", "0x10d"}) {
    auto r = parse_age(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.error().find("e.g. 30d, 12h or 2w"), std::string::npos) << r.error();
  }
  EXPECT_FALSE(parse_age("99999999999w").ok());
  EXPECT_FALSE(parse_age("5300w").ok()) << "more than 100 years";
  EXPECT_TRUE(parse_age("5200w").ok());
}
