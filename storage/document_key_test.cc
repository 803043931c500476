#include "storage/document_key.h"

#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::StatusIs;
using ::testing::HasSubstr;

TEST(DocumentKeyTest, IdsAreCheckedWithTheLimitInTheMessage) {
  struct Case {
    std::string id;
    std::string problem;  // empty: accepted
  } cases[] = {
      {"s3://bucket/key", ""},
      {"db:row/42", ""},
      {"ünïcödé 文書", ""},
      {"http://looks.like/a/url", ""},
      {std::string(kMaxDocumentIdBytes, 'x'), ""},
      {"", "document_id: is empty"},
      {std::string(kMaxDocumentIdBytes + 1, 'x'), "is 1025 bytes; the limit is 1024"},
      {std::string("a\0b", 3), "byte 1 is NUL"},
      {"bad \xff utf-8", "not valid UTF-8"},
  };
  for (const Case& c : cases) {
    if (c.problem.empty()) {
      EXPECT_THAT(CheckDocumentId(c.id), IsOk()) << c.id;
    } else {
      EXPECT_THAT(CheckDocumentId(c.id),
                  StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.problem)))
          << c.id;
    }
  }
}

TEST(DocumentKeyTest, KeysOfIdsNeverLookLikeUrlsAndGiveTheIdBack) {
  const std::string key = DocumentKeyOfId("http://a/");
  EXPECT_EQ(key, std::string("\x01http://a/"));
  EXPECT_TRUE(IsDocumentIdKey(key));
  EXPECT_EQ(DocumentIdOfKey(key), "http://a/");
  EXPECT_FALSE(IsDocumentIdKey("http://a/"));
  EXPECT_FALSE(IsDocumentIdKey(""));
}

}  // namespace
}  // namespace dedupd
