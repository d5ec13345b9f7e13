// service/text.h: UTF-8 checks and repair for what the HTTP gateway echoes, and the escaping the
// CLI applies to what it prints.
#include "service/text.h"

#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace wavecrest {
namespace {

TEST(Utf8Test, AcceptsWellFormedTextIncludingFourByteSequences) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("llama-2-7b"));
  EXPECT_TRUE(IsValidUtf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80"));  // é € 😀
  EXPECT_TRUE(IsValidUtf8("\xF4\x8F\xBF\xBF"));                          // U+10FFFF
}

TEST(Utf8Test, FindsTheFirstIllFormedByte) {
  EXPECT_EQ(FirstInvalidUtf8("ab\xFF"), 2u);
  EXPECT_EQ(FirstInvalidUtf8("\xC3"), 0u);              // truncated two-byte sequence
  EXPECT_EQ(FirstInvalidUtf8("x\xE2\x82"), 1u);         // truncated three-byte sequence
  EXPECT_EQ(FirstInvalidUtf8("\xC0\xAF"), 0u);          // overlong '/'
  EXPECT_EQ(FirstInvalidUtf8("\xE0\x80\xAF"), 0u);      // overlong, three bytes
  EXPECT_EQ(FirstInvalidUtf8("\xED\xA0\x80"), 0u);      // a surrogate, U+D800
  EXPECT_EQ(FirstInvalidUtf8("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(FirstInvalidUtf8("\x80"), 0u);              // a lone continuation byte
}

TEST(Utf8Test, ReplacesEachMaximalSubpartWithOneReplacementCharacter) {
  EXPECT_EQ(ToValidUtf8("ok"), "ok");
  EXPECT_EQ(ToValidUtf8("a\xFF" "b"), "a\xEF\xBF\xBD" "b");
  // A truncated three-byte prefix is one subpart: one U+FFFD, then the next character is kept.
  EXPECT_EQ(ToValidUtf8("\xE2\x82z"), "\xEF\xBF\xBDz");
  // Two bad bytes in a row are two subparts.
  EXPECT_EQ(ToValidUtf8("\xFF\xFE"), "\xEF\xBF\xBD\xEF\xBF\xBD");
  EXPECT_TRUE(IsValidUtf8(ToValidUtf8("\xC0\xAF\xED\xA0\x80\xF4\x90")));
}

TEST(JsonTextTest, SerialisesStringsThatAreNotUtf8InsteadOfThrowing) {
  nlohmann::json j = {{"name", "\xFFmodel"}};
  EXPECT_THROW((void)j.dump(), nlohmann::json::type_error);  // what took the server down
  EXPECT_EQ(JsonText(j), "{\"name\":\"\xEF\xBF\xBDmodel\"}");
  EXPECT_EQ(JsonText(nlohmann::json{{"a", 1}}, 1), "{\n \"a\": 1\n}");
}

TEST(ForTerminalTest, EscapesControlsAndBadBytesAndKeepsPrintableText) {
  EXPECT_EQ(ForTerminal("name\tvalue\n"), "name\tvalue\n");
  EXPECT_EQ(ForTerminal("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(ForTerminal("\x1b]0;pwned\x07"), "\\x1b]0;pwned\\x07");
  EXPECT_EQ(ForTerminal("a\rb\x7f"), "a\\x0db\\x7f");
  EXPECT_EQ(ForTerminal("\xC2\x9B" "31m"), "\\u009b31m");  // C1 CSI written as UTF-8
  EXPECT_EQ(ForTerminal("x\xFF"), "x\\xff");
  EXPECT_EQ(ForTerminal(std::string("a\0b", 3)), "a\\x00b");
}

}  // namespace
}  // namespace wavecrest
