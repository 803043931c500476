// revisit_policy.h: how long a crawled URL stays SEEN before it is DUE for
// a revisit, per namespace and host (the config file's revisit_rules).
//
// A URL of host H in namespace N takes the first of these that exists:
//   1. a rule that lists N and matches H,
//   2. a rule that lists no namespace (every one) and matches H,
//   3. a rule that lists N and no host (every one),
//   4. a rule that lists neither.
// "Matches H" is UrlPolicy's host rule: an exact name wins over a
// "*.suffix" pattern, the longest pattern over shorter ones. No rule: never
// due (absl::InfiniteDuration()). A rule's `after` of InfiniteDuration
// exempts what it matches from a broader rule.
//
// Example:
//   absl::StatusOr<RevisitPolicy> p = RevisitPolicy::Create({
//       {{"news"}, {"*.example.com"}, absl::Hours(1)},
//       {{}, {}, absl::Hours(24 * 7)}});
//   p->Find("news", "www.example.com");  // 1 h
//   p->Find("", "other.org");            // 7 days
#ifndef DEDUPD_CORE_URL_REVISIT_POLICY_H_
#define DEDUPD_CORE_URL_REVISIT_POLICY_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "core/url/url_policy.h"

namespace dedupd {

struct RevisitRule {
  // Namespaces the rule applies to; empty: every namespace. "" names the
  // empty namespace.
  std::vector<std::string> namespaces;
  // Hosts as HostRule::hosts (exact names or "*.suffix"); empty: every host.
  std::vector<std::string> hosts;
  // Revisit a URL whose last claim is at least this old; > 0, or
  // InfiniteDuration: never.
  absl::Duration after = absl::InfiniteDuration();
};

class RevisitPolicy {
 public:
  // The empty policy: nothing is ever due.
  RevisitPolicy() = default;

  // Create validates and indexes `rules`. Returns InvalidArgument naming
  // the rule index for a non-positive `after`, a malformed host pattern
  // (as UrlPolicy::Create), or two rules with the same scope (a namespace,
  // or every one, and a host, or every one).
  static absl::StatusOr<RevisitPolicy> Create(std::vector<RevisitRule> rules);

  // True when no rule exists (Find is InfiniteDuration for everything).
  bool empty() const { return empty_; }

  // Find returns the revisit interval of a URL of `host` (ASCII lowercase)
  // in `name_space`. O(labels of host).
  absl::Duration Find(absl::string_view name_space, absl::string_view host) const;

 private:
  // The rules of one namespace scope (a listed namespace, or every one).
  struct Scope {
    UrlPolicy hosts;  // host rules, in `after_by_rule` order
    std::vector<absl::Duration> after_by_rule;
    std::optional<absl::Duration> any_host;
  };
  static std::optional<absl::Duration> FindIn(const Scope& scope, absl::string_view host);

  bool empty_ = true;
  absl::flat_hash_map<std::string, Scope> by_namespace_;
  Scope any_namespace_;
};

// UrlHost returns the host of a normalized URL ("scheme://[user@]host[:port]/…"):
// lowercase already; an IPv6 literal with its brackets. Empty when `url` has
// no "://".
absl::string_view UrlHost(absl::string_view url);

}  // namespace dedupd

#endif  // DEDUPD_CORE_URL_REVISIT_POLICY_H_
