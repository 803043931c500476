#include "server/config.h"

#include <cstdio>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::StatusIs;
using ::testing::HasSubstr;

TEST(ParseConfigTest, EmptyTextIsTheDefaults) {
  ASSERT_OK_AND_ASSIGN(DedupConfig c, ParseConfig("", "empty.conf"));
  EXPECT_EQ(c.url_policy.Find("example.com"), nullptr);
  EXPECT_TRUE(c.url_policy.drop_params().empty());
}

TEST(ParseConfigTest, HostRulesBecomeThePolicy) {
  ASSERT_OK_AND_ASSIGN(DedupConfig c, ParseConfig(R"(
    # comments are allowed
    host_rules {
      hosts: "shop.example.com"
      allow_params: ["id", "page"]
      trailing_slash: TRAILING_SLASH_KEEP
    }
    host_rules {
      hosts: "*.iis.example"
      case_insensitive_path: true
      drop_params: "view"
      trailing_slash: TRAILING_SLASH_ADD
    }
    drop_params: "ref"
  )",
                                                  "t.conf"));
  const HostRule* shop = c.url_policy.Find("shop.example.com");
  ASSERT_NE(shop, nullptr);
  EXPECT_THAT(shop->allow_params, ::testing::ElementsAre("id", "page"));
  EXPECT_EQ(shop->trailing_slash, TrailingSlash::kKeep);
  EXPECT_FALSE(shop->case_insensitive_path);
  const HostRule* iis = c.url_policy.Find("www.iis.example");
  ASSERT_NE(iis, nullptr);
  EXPECT_TRUE(iis->case_insensitive_path);
  EXPECT_EQ(iis->trailing_slash, TrailingSlash::kAdd);
  EXPECT_THAT(iis->drop_params, ::testing::ElementsAre("view"));
  EXPECT_EQ(c.url_policy.Find("other.example"), nullptr);
  EXPECT_THAT(c.url_policy.drop_params(), ::testing::ElementsAre("ref"));
}

struct BadConfigCase {
  const char* text;
  const char* want;  // substring of the error message
};

TEST(ParseConfigTest, BadConfigsNameTheLineAndTheProblem) {
  const BadConfigCase cases[] = {
      {"host_rules {\n  hosts: \"a.com\"\n  colour: 3\n}\n", "t.conf:3:"},
      {"host_rules {\n  hosts: \"a.com\"\n", "t.conf:3:"},
      {"drop_params: 5 6\n", "t.conf:1:"},
      {"host_rules { trailing_slash: SIDEWAYS hosts: \"a.com\" }", "SIDEWAYS"},
      {"host_rules { allow_params: \"id\" }", "t.conf: "},
      {"host_rules { hosts: \"a.com\" } host_rules { hosts: \"a.com\" }", "a.com"},
      {"revisit_rules { namespaces: \"a b\" revisit_after_seconds: 5 }",
       "t.conf: revisit_rules[0]: namespace: byte 1 (0x20)"},
      {"revisit_rules { revisit_after_seconds: 5 } revisit_rules { revisit_after_seconds: 6 }",
       "t.conf: revisit_rules[1]: a second rule for every host of every namespace"},
      {"revisit_rules { hosts: \"*\" revisit_after_seconds: 5 }", "t.conf: revisit_rules (0)"},
  };
  for (const BadConfigCase& c : cases) {
    EXPECT_THAT(ParseConfig(c.text, "t.conf"),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.want)))
        << c.text;
  }
}

TEST(ParseConfigTest, RevisitRulesBecomeTheRevisitPolicy) {
  ASSERT_OK_AND_ASSIGN(DedupConfig c, ParseConfig(R"(
    revisit_rules { namespaces: "news" hosts: "*.example.com" revisit_after_seconds: 3600 }
    revisit_rules { hosts: "static.example.com" revisit_after_seconds: 0 }
    revisit_rules { revisit_after_seconds: 604800 }
  )",
                                                  "r.conf"));
  EXPECT_EQ(c.revisit_policy.Find("news", "www.example.com"), absl::Hours(1));
  EXPECT_EQ(c.revisit_policy.Find("", "static.example.com"), absl::InfiniteDuration());
  EXPECT_EQ(c.revisit_policy.Find("", "other.org"), absl::Hours(24 * 7));
  ASSERT_OK_AND_ASSIGN(DedupConfig none, ParseConfig("", "e.conf"));
  EXPECT_TRUE(none.revisit_policy.empty());
}

TEST(LoadConfigFileTest, EmptyPathIsTheDefaults) { EXPECT_THAT(LoadConfigFile(""), IsOk()); }

TEST(LoadConfigFileTest, MissingFileIsNotFoundWithThePath) {
  EXPECT_THAT(LoadConfigFile("/nonexistent/dedupd.conf"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("/nonexistent/dedupd.conf")));
}

TEST(LoadConfigFileTest, ReadsAFile) {
  const std::string path = ::testing::TempDir() + "/config_test.conf";
  {
    std::ofstream out(path);
    out << "host_rules { hosts: \"a.example\" allow_params: \"id\" }\n";
  }
  ASSERT_OK_AND_ASSIGN(DedupConfig c, LoadConfigFile(path));
  ASSERT_NE(c.url_policy.Find("a.example"), nullptr);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace dedupd
