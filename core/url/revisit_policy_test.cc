#include "core/url/revisit_policy.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace dedupd {
namespace {

using ::testing::HasSubstr;

TEST(RevisitPolicyTest, TheMostSpecificRuleWins) {
  absl::StatusOr<RevisitPolicy> p = RevisitPolicy::Create({
      {{"news"}, {"*.example.com"}, absl::Hours(1)},
      {{"news"}, {"static.example.com"}, absl::InfiniteDuration()},
      {{}, {"*.example.com"}, absl::Hours(2)},
      {{"news"}, {}, absl::Hours(3)},
      {{}, {}, absl::Hours(4)},
      {{"", "shop"}, {"shop.example"}, absl::Minutes(5)},
  });
  ASSERT_TRUE(p.ok()) << p.status();
  struct Case {
    const char* ns;
    const char* host;
    absl::Duration want;
  } cases[] = {
      {"news", "www.example.com", absl::Hours(1)},
      {"news", "example.com", absl::Hours(1)},
      {"news", "static.example.com", absl::InfiniteDuration()},
      {"blog", "www.example.com", absl::Hours(2)},
      {"news", "other.org", absl::Hours(3)},
      {"blog", "other.org", absl::Hours(4)},
      {"", "shop.example", absl::Minutes(5)},
      {"shop", "shop.example", absl::Minutes(5)},
      {"news", "shop.example", absl::Hours(3)},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(p->Find(c.ns, c.host), c.want) << c.ns << " " << c.host;
  }
  EXPECT_FALSE(p->empty());
}

TEST(RevisitPolicyTest, NoRulesMeansNever) {
  RevisitPolicy p;
  EXPECT_TRUE(p.empty());
  EXPECT_EQ(p.Find("", "a.example"), absl::InfiniteDuration());
  absl::StatusOr<RevisitPolicy> only_news = RevisitPolicy::Create({{{"news"}, {}, absl::Hours(1)}});
  ASSERT_TRUE(only_news.ok());
  EXPECT_EQ(only_news->Find("", "a.example"), absl::InfiniteDuration());
  EXPECT_EQ(only_news->Find("news", "a.example"), absl::Hours(1));
}

TEST(RevisitPolicyTest, BadRulesAreInvalidArgumentNamingTheRule) {
  EXPECT_THAT(
      std::string(RevisitPolicy::Create({{{}, {}, absl::ZeroDuration()}}).status().message()),
      HasSubstr("revisit_rules[0]: revisit_after must be positive"));
  EXPECT_THAT(
      std::string(RevisitPolicy::Create({{{"a"}, {}, absl::Hours(1)}, {{"a"}, {}, absl::Hours(2)}})
                      .status()
                      .message()),
      HasSubstr("revisit_rules[1]: a second rule for every host of namespace \"a\""));
  EXPECT_THAT(
      std::string(RevisitPolicy::Create({{{}, {"a.*.b"}, absl::Hours(1)}}).status().message()),
      HasSubstr("revisit_rules (0): "));
  EXPECT_FALSE(RevisitPolicy::Create(
                   {{{}, {"x.example"}, absl::Hours(1)}, {{}, {"x.example"}, absl::Hours(2)}})
                   .ok())
      << "one host named twice in one scope";
}

TEST(UrlHostTest, Table) {
  struct Case {
    const char* url;
    const char* host;
  } cases[] = {
      {"https://a.example/x", "a.example"},       {"http://a.example:8080/x?q", "a.example"},
      {"http://user:pw@a.example/", "a.example"}, {"http://[::1]:80/", "[::1]"},
      {"https://a.example?q=1", "a.example"},     {"not a url", ""},
  };
  for (const Case& c : cases) EXPECT_EQ(UrlHost(c.url), c.host) << c.url;
}

}  // namespace
}  // namespace dedupd
