// url_policy_test.cc: UrlPolicy validation and host lookup.
#include "core/url/url_policy.h"

#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/testing/status_matchers.h"

namespace dedupd {
namespace {

using ::dedupd::testing::IsOk;
using ::dedupd::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

HostRule Rule(std::vector<std::string> hosts) {
  HostRule rule;
  rule.hosts = std::move(hosts);
  return rule;
}

TEST(UrlPolicyTest, EmptyPolicyFindsNothing) {
  UrlPolicy policy;
  EXPECT_EQ(policy.Find("example.com"), nullptr);
  EXPECT_EQ(policy.Find(""), nullptr);
  EXPECT_TRUE(policy.drop_params().empty());
}

TEST(UrlPolicyTest, CreateLowercasesHostsAndDropParams) {
  HostRule rule = Rule({"WWW.Example.COM", "*.Shop.Example"});
  rule.drop_params = {"Ref", "FB_Source"};
  rule.allow_params = {"ID"};  // allowlist is case-sensitive: kept as given
  ASSERT_OK_AND_ASSIGN(UrlPolicy policy, UrlPolicy::Create({rule}, {"Campaign", "x"}));
  const HostRule* found = policy.Find("www.example.com");
  ASSERT_NE(found, nullptr);
  EXPECT_THAT(found->hosts, ElementsAre("www.example.com", "*.shop.example"));
  EXPECT_THAT(found->drop_params, ElementsAre("ref", "fb_source"));
  EXPECT_THAT(found->allow_params, ElementsAre("ID"));
  EXPECT_THAT(policy.drop_params(), ElementsAre("campaign", "x"));
  EXPECT_EQ(policy.Find("a.shop.example"), found);
}

// Lookup table: host -> index of the rule expected, or -1 for none.
TEST(UrlPolicyTest, FindExactBeatsPatternAndLongestSuffixWins) {
  std::vector<HostRule> rules = {
      Rule({"example.com"}),               // 0
      Rule({"*.example.com"}),             // 1
      Rule({"*.deep.example.com"}),        // 2
      Rule({"www.deep.example.com"}),      // 3
      Rule({"other.org", "*.other.net"}),  // 4
      Rule({"10.0.0.1"}),                  // 5
  };
  ASSERT_OK_AND_ASSIGN(UrlPolicy policy, UrlPolicy::Create(rules, {}));
  const struct {
    const char* host;
    int rule;
  } kCases[] = {
      {"example.com", 0},  // exact beats "*.example.com"
      {"www.example.com", 1},
      {"a.b.c.example.com", 1},
      {"deep.example.com", 2},    // "*.x" matches x itself
      {"a.deep.example.com", 2},  // longer pattern wins
      {"x.y.deep.example.com", 2},
      {"www.deep.example.com", 3},  // exact beats every pattern
      {"other.org", 4},
      {"www.other.org", -1},  // exact names do not match subdomains
      {"other.net", 4},
      {"a.other.net", 4},
      {"10.0.0.1", 5},
      {"example.co", -1},
      {"notexample.com", -1},  // a suffix match is label-aligned
      {"com", -1},
      {"", -1},
      {"xample.com", -1},
  };
  for (const auto& c : kCases) {
    SCOPED_TRACE(c.host);
    const HostRule* found = policy.Find(c.host);
    if (c.rule < 0) {
      EXPECT_EQ(found, nullptr);
    } else {
      ASSERT_NE(found, nullptr);
      EXPECT_EQ(found->hosts, rules[c.rule].hosts);
    }
  }
}

TEST(UrlPolicyTest, FoundRuleCarriesItsSettings) {
  HostRule rule = Rule({"*.iis.example"});
  rule.trailing_slash = TrailingSlash::kAdd;
  rule.case_insensitive_path = true;
  rule.allow_params = {"id", "page"};
  ASSERT_OK_AND_ASSIGN(UrlPolicy policy, UrlPolicy::Create({rule}, {}));
  const HostRule* found = policy.Find("www.iis.example");
  ASSERT_NE(found, nullptr);
  EXPECT_EQ(found->trailing_slash, TrailingSlash::kAdd);
  EXPECT_TRUE(found->case_insensitive_path);
  EXPECT_THAT(found->allow_params, ElementsAre("id", "page"));
}

TEST(UrlPolicyTest, SameHostTwiceInOneRuleIsAccepted) {
  EXPECT_THAT(UrlPolicy::Create({Rule({"a.com", "A.com"})}, {}), IsOk());
}

TEST(UrlPolicyTest, ExactAndPatternForTheSameNameAreDistinct) {
  EXPECT_THAT(UrlPolicy::Create({Rule({"a.com"}), Rule({"*.a.com"})}, {}), IsOk());
}

TEST(UrlPolicyTest, InvalidRulesNameTheRuleIndex) {
  const struct {
    std::vector<std::vector<std::string>> hosts;  // one entry per rule
    const char* error;
  } kCases[] = {
      {{{}}, "host rule 0: empty host list"},
      {{{"a.com"}, {}}, "host rule 1: empty host list"},
      {{{"*"}}, "host rule 0: malformed host pattern '*'"},
      {{{"a.com"}, {"a.*.b"}}, "host rule 1: malformed host 'a.*.b'"},
      {{{"*.*.a"}}, "host rule 0: malformed host '*.*.a'"},
      {{{"a*.com"}}, "host rule 0: malformed host 'a*.com'"},
      {{{"a..b"}}, "empty label"},
      {{{".a.com"}}, "empty label"},
      {{{"a.com."}}, "empty label"},
      {{{"*."}}, "empty host name"},
      {{{""}}, "empty host name"},
      {{{"a b.com"}}, "host rule 0: malformed host 'a b.com': character ' '"},
      {{{"b\xC3\xBC"
         "cher.de"}},
       "ASCII"},
      {{{"a.com"}, {"b.com"}, {"A.COM"}}, "host rule 2: host 'a.com' is also named by host rule 0"},
      {{{"*.a.com"}, {"*.A.com"}}, "host rule 1: host '*.a.com' is also named by host rule 0"},
  };
  for (const auto& c : kCases) {
    std::vector<HostRule> rules;
    for (const auto& hosts : c.hosts) rules.push_back(Rule(hosts));
    SCOPED_TRACE(c.error);
    EXPECT_THAT(UrlPolicy::Create(rules, {}),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(c.error)));
  }
}

TEST(UrlPolicyTest, FindPointerLivesAsLongAsThePolicy) {
  ASSERT_OK_AND_ASSIGN(UrlPolicy policy, UrlPolicy::Create({Rule({"a.com"})}, {}));
  const UrlPolicy moved = std::move(policy);
  const HostRule* found = moved.Find("a.com");
  ASSERT_NE(found, nullptr);
  EXPECT_THAT(found->hosts, ElementsAre("a.com"));
}

}  // namespace
}  // namespace dedupd
