#include "core/json_limits.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace wavecrest {
namespace {

using ::testing::HasSubstr;

TEST(JsonLimitsTest, DepthCountsOnlyBracketsOutsideStrings) {
  JsonLimits l;
  l.max_depth = 3;
  EXPECT_TRUE(CheckJsonLimits(R"({"a":[{"b":1}]})", l).ok());
  EXPECT_THAT(CheckJsonLimits(R"({"a":[{"b":[1]}]})", l).message(), HasSubstr("deeper than 3"));
  // Brackets and escaped quotes inside strings are text.
  EXPECT_TRUE(CheckJsonLimits(R"({"a":"[[[[[[\"[[[[{{{{"})", l).ok());
  // Deep input is refused at the first bracket past the limit, however deep it goes on.
  const std::string deep = std::string(1'000'000, '[') + std::string(1'000'000, ']');
  EXPECT_FALSE(CheckJsonLimits(deep).ok());
}

TEST(JsonLimitsTest, ValuesAndStringLengthsAreBounded) {
  JsonLimits l;
  l.max_values = 5;
  EXPECT_TRUE(CheckJsonLimits("[1,2,3,4]", l).ok());        // the array and four numbers
  EXPECT_FALSE(CheckJsonLimits("[1,2,3,4,5]", l).ok());     // six values
  EXPECT_TRUE(CheckJsonLimits(R"(["a,b,c,d,e,f"])", l).ok());  // commas in a string are text
  l = JsonLimits{};
  l.max_string_bytes = 4;
  EXPECT_TRUE(CheckJsonLimits(R"({"abcd":"wxyz"})", l).ok());
  EXPECT_THAT(CheckJsonLimits(R"({"abcde":1})", l).message(), HasSubstr("longer than 4 bytes"));
  EXPECT_FALSE(CheckJsonLimits(R"(["ab\"cd"])", l).ok());  // escapes count as written
}

}  // namespace
}  // namespace wavecrest
