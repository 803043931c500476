// utf8_test.cc: the well-formedness rules of utf8.h (Unicode §3.9 Table 3-7).
#include "core/text/utf8.h"

#include <string>

#include "gtest/gtest.h"

namespace dedupd {
namespace {

size_t LengthOf(const std::string& s) {
  return Utf8SequenceLength(reinterpret_cast<const unsigned char*>(s.data()), s.size());
}

TEST(Utf8Test, SequenceLengthOfWellFormedSequences) {
  EXPECT_EQ(LengthOf("a"), 1u);
  EXPECT_EQ(LengthOf("\xC3\xA9x"), 2u);         // U+00E9
  EXPECT_EQ(LengthOf("\xE2\x82\xAC"), 3u);      // U+20AC
  EXPECT_EQ(LengthOf("\xED\x9F\xBF"), 3u);      // U+D7FF, below surrogates
  EXPECT_EQ(LengthOf("\xF0\x9F\x98\x80"), 4u);  // U+1F600
  EXPECT_EQ(LengthOf("\xF4\x8F\xBF\xBF"), 4u);  // U+10FFFF
}

TEST(Utf8Test, SequenceLengthIsZeroWhenIllFormed) {
  EXPECT_EQ(LengthOf("\x80"), 0u);              // lone continuation byte
  EXPECT_EQ(LengthOf("\xC0\xAF"), 0u);          // overlong
  EXPECT_EQ(LengthOf("\xC1\xBF"), 0u);          // overlong
  EXPECT_EQ(LengthOf("\xE0\x9F\xBF"), 0u);      // overlong
  EXPECT_EQ(LengthOf("\xED\xA0\x80"), 0u);      // surrogate U+D800
  EXPECT_EQ(LengthOf("\xF0\x8F\xBF\xBF"), 0u);  // overlong
  EXPECT_EQ(LengthOf("\xF4\x90\x80\x80"), 0u);  // above U+10FFFF
  EXPECT_EQ(LengthOf("\xF5\x80\x80\x80"), 0u);
  EXPECT_EQ(LengthOf("\xE2\x82"), 0u);  // truncated
  EXPECT_EQ(LengthOf("\xC3x"), 0u);     // bad continuation
}

TEST(Utf8Test, IsValidUtf8) {
  EXPECT_TRUE(IsValidUtf8(""));
  EXPECT_TRUE(IsValidUtf8("caf\xC3\xA9 \xF0\x9F\x98\x80"));
  EXPECT_FALSE(IsValidUtf8("caf\xC3"));
  EXPECT_FALSE(IsValidUtf8("a\xED\xB0\x80z"));
}

}  // namespace
}  // namespace dedupd
