// url_policy.h: per-host URL normalization policy (which query parameters
// survive, trailing slashes, path case), looked up by host.
//
// Example:
//   HostRule rule;
//   rule.hosts = {"*.shop.example"};
//   rule.allow_params = {"id", "page"};
//   absl::StatusOr<UrlPolicy> policy = UrlPolicy::Create({rule}, {"ref"});
//   const HostRule* r = policy->Find("www.shop.example");  // == that rule
#ifndef DEDUPD_CORE_URL_URL_POLICY_H_
#define DEDUPD_CORE_URL_URL_POLICY_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace dedupd {

enum class TrailingSlash {
  kStrip,  // /about/ -> /about (the default: almost always the same page)
  kAdd,    // /docs -> /docs/ when the last segment has no dot
  kKeep,   // as written
};

// One rule of the policy; see proto/dedupd/config/v1/config.proto.
struct HostRule {
  // Exact names ("example.com") or suffix patterns ("*.example.com", which
  // also matches example.com itself). ASCII, lowercase, punycoded.
  std::vector<std::string> hosts;
  // When non-empty, only these query keys survive (exact, case-sensitive).
  std::vector<std::string> allow_params;
  // Extra query keys dropped on these hosts (case-insensitive).
  std::vector<std::string> drop_params;
  TrailingSlash trailing_slash = TrailingSlash::kStrip;
  // Lowercase the path (IIS and other case-insensitive servers).
  bool case_insensitive_path = false;
};

// UrlPolicy: the set of host rules plus parameters dropped everywhere.
// Immutable after Create; thread-safe.
class UrlPolicy {
 public:
  // The empty policy: no host rules, no extra dropped parameters.
  UrlPolicy() = default;

  // Create validates and indexes `rules`. Host names and patterns are
  // lowercased. Returns InvalidArgument, naming the rule index and host, for
  // an empty host list, a malformed pattern ("*" alone, "a.*.b", empty
  // labels), or a host named by two rules.
  static absl::StatusOr<UrlPolicy> Create(std::vector<HostRule> rules,
                                          std::vector<std::string> drop_params);

  // Find returns the rule for `host` (ASCII lowercase), or nullptr when none
  // applies: an exact name first, else the longest matching "*.suffix".
  // The pointer lives as long as this policy.  O(number of labels in host).
  const HostRule* Find(absl::string_view host) const;

  // FindIndex returns the index (in the order given to Create) of the rule
  // Find returns, or -1 when none applies.
  int FindIndex(absl::string_view host) const;

  // Query keys dropped on every host, lowercased.
  const std::vector<std::string>& drop_params() const { return drop_params_; }

 private:
  std::vector<HostRule> rules_;
  absl::flat_hash_map<std::string, size_t> exact_;   // host -> rules_ index
  absl::flat_hash_map<std::string, size_t> suffix_;  // suffix -> rules_ index
  std::vector<std::string> drop_params_;
};

}  // namespace dedupd

#endif  // DEDUPD_CORE_URL_URL_POLICY_H_
