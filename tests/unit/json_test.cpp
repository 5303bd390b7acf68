// The bounded JSON parser every JSON input goes through (util/json.hpp):
// both limits hold before any tree is built, and within them it is
// nlohmann's own parse.
#include "util/json.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace memgate;

namespace {

std::string error_of(const std::string& text, JsonLimits limits) {
  auto r = parse_json_bounded(text, limits);
  return r ? "" : r.error();
}

}  // namespace

TEST(BoundedJson, WithinTheLimitsItIsAnOrdinaryParse) {
  auto r = parse_json_bounded(R"({"a": [1, 2, {"b": null}], "c": "x"})", {3, 10});
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ((*r)["a"][2].count("b"), 1u);
  EXPECT_EQ((*r)["c"], "x");
  EXPECT_TRUE(parse_json_bounded("42", {1, 1}).ok());
}

TEST(BoundedJson, OneLevelTooDeepIsRefused) {
  EXPECT_EQ(error_of("[[[]]]", {3, 100}), "");
  EXPECT_EQ(error_of("[[[[]]]]", {3, 100}), "nested deeper than 3 levels");
  EXPECT_EQ(error_of(R"({"a":{"b":{"c":{}}}})", {3, 100}), "nested deeper than 3 levels");
}

TEST(BoundedJson, KeysAndValuesCountTowardsTheSize) {
  // {"a": 1, "b": [2]}: the object, two keys, 1, the list, 2.
  EXPECT_EQ(error_of(R"({"a": 1, "b": [2]})", {16, 6}), "");
  EXPECT_EQ(error_of(R"({"a": 1, "b": [2]})", {16, 5}), "more than 5 values");
}

// What the limits are for: a file of '[' once took gigabytes. It stops at
// the first level past the limit, before the rest is even read.
TEST(BoundedJson, AHugeNestingIsRefusedAtOnce) {
  EXPECT_EQ(error_of(std::string(50'000'000, '['), {16, 1u << 22}), "nested deeper than 16 levels");
  std::string wide = "[" + std::string(2'000'000, '0');
  for (std::size_t i = 2; i < wide.size(); i += 2) wide[i] = ',';
  EXPECT_EQ(error_of(wide + "]", {16, 1000}), "more than 1000 values");
}

TEST(BoundedJson, InvalidTextSaysWhere) {
  EXPECT_EQ(error_of("{\"a\": 1,", {16, 100}).rfind("not valid JSON (", 0), 0u);
  EXPECT_EQ(error_of("", {16, 100}).rfind("not valid JSON (", 0), 0u);
}
