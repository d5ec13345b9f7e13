#include "core/json_limits.h"
#include "core/ordered_json.h"

#include <string>

#include "absl/strings/str_cat.h"

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

// protobuf's JSON parser reads 'text' as a string: a '"' inside one would open a string for a
// checker that knew only double quotes and hide the rest of the body from its counts.
TEST(JsonLimitsTest, SingleQuotedStringsAreRefusedNotSkipped) {
  JsonLimits l;
  l.max_values = 5;
  const std::string hidden = "{'a':'\"', \"b\":[" + std::string(1000, '[') + "]}";
  EXPECT_THAT(CheckJsonLimits(hidden, l).message(), HasSubstr("single quote at byte 1"));
  EXPECT_THAT(CheckJsonLimits(R"({"k": 'v'})").message(), HasSubstr("byte 6"));
  // Inside a double-quoted string a single quote is text.
  EXPECT_TRUE(CheckJsonLimits(R"({"it's": "don't"})").ok());
}

TEST(OrderedJsonTest, KeepsTheTextsOrderAndTheLastOfTwiceSentKeys) {
  absl::StatusOr<nlohmann::ordered_json> j =
      ParseOrderedJson(R"({"z": 1, "a": {"y": [1, {"b": 2}], "x": null}, "z": 3, "m": "s"})");
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ(j->dump(), R"({"z":3,"a":{"y":[1,{"b":2}],"x":null},"m":"s"})");
  // The same document as ordered_json's own parse, on a config-like text.
  const std::string text =
      R"({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "rope_scaling": )"
      R"({"factor": 8.0, "type": "llama3"}, "tie_word_embeddings": false, "x": 1e-05})";
  EXPECT_EQ(ParseOrderedJson(text)->dump(2), nlohmann::ordered_json::parse(text).dump(2));
  EXPECT_FALSE(ParseOrderedJson(R"({"a": )").ok());
  EXPECT_THAT(ParseOrderedJson("{'a': 1}").status().message(), HasSubstr("not JSON"));
}

// One object of 200,000 keys (ordered_json's own parse would compare each new key with every key
// before it, 2e10 comparisons): every key kept, in order. Its speed is bench/'s, not this test's.
TEST(OrderedJsonTest, AWideObjectParsesInLinearTime) {
  std::string text = "{";
  for (int i = 0; i < 200'000; ++i) absl::StrAppend(&text, i ? "," : "", "\"k", i, "\":", i);
  text += "}";
  absl::StatusOr<nlohmann::ordered_json> j = ParseOrderedJson(text);
  ASSERT_TRUE(j.ok());
  ASSERT_EQ(j->size(), 200'000u);
  EXPECT_EQ(j->begin().key(), "k0");
  EXPECT_EQ((--j->end()).key(), "k199999");
}

}  // namespace
}  // namespace wavecrest
