#include "core/url/revisit_policy.h"

#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"

namespace dedupd {

absl::StatusOr<RevisitPolicy> RevisitPolicy::Create(std::vector<RevisitRule> rules) {
  RevisitPolicy policy;
  policy.empty_ = rules.empty();
  // Per scope, the host rules in order, to build each scope's UrlPolicy.
  struct Pending {
    std::vector<HostRule> host_rules;
    std::vector<absl::Duration> after;
    std::vector<size_t> rule_index;
  };
  absl::flat_hash_map<std::string, Pending> pending_by_namespace;
  Pending pending_any;
  for (size_t i = 0; i < rules.size(); ++i) {
    const RevisitRule& r = rules[i];
    if (r.after <= absl::ZeroDuration()) {
      return absl::InvalidArgumentError(
          absl::StrCat("revisit_rules[", i, "]: revisit_after must be positive"));
    }
    std::vector<const std::string*> scopes;
    for (const std::string& ns : r.namespaces) scopes.push_back(&ns);
    if (scopes.empty()) scopes.push_back(nullptr);  // every namespace
    for (const std::string* ns : scopes) {
      Pending& p = ns == nullptr ? pending_any : pending_by_namespace[*ns];
      Scope& scope = ns == nullptr ? policy.any_namespace_ : policy.by_namespace_[*ns];
      const std::string where =
          ns == nullptr ? "every namespace" : absl::StrCat("namespace \"", *ns, "\"");
      if (r.hosts.empty()) {
        if (scope.any_host.has_value()) {
          return absl::InvalidArgumentError(
              absl::StrCat("revisit_rules[", i, "]: a second rule for every host of ", where));
        }
        scope.any_host = r.after;
        continue;
      }
      p.host_rules.push_back(HostRule{r.hosts, {}, {}, TrailingSlash::kStrip, false});
      p.after.push_back(r.after);
      p.rule_index.push_back(i);
    }
  }
  auto build = [](Pending& p, Scope* scope) -> absl::Status {
    absl::StatusOr<UrlPolicy> hosts = UrlPolicy::Create(p.host_rules, {});
    if (!hosts.ok()) {
      // UrlPolicy names its own rule index; name ours.
      std::string rules;
      for (size_t i : p.rule_index) absl::StrAppend(&rules, rules.empty() ? "" : ", ", i);
      return absl::InvalidArgumentError(
          absl::StrCat("revisit_rules (", rules, "): ", hosts.status().message()));
    }
    scope->hosts = *std::move(hosts);
    scope->after_by_rule = std::move(p.after);
    return absl::OkStatus();
  };
  if (absl::Status s = build(pending_any, &policy.any_namespace_); !s.ok()) return s;
  for (auto& [ns, p] : pending_by_namespace) {
    if (absl::Status s = build(p, &policy.by_namespace_[ns]); !s.ok()) return s;
  }
  return policy;
}

std::optional<absl::Duration> RevisitPolicy::FindIn(const Scope& scope, absl::string_view host) {
  const int i = scope.hosts.FindIndex(host);
  if (i < 0) return std::nullopt;
  return scope.after_by_rule[static_cast<size_t>(i)];
}

absl::Duration RevisitPolicy::Find(absl::string_view name_space, absl::string_view host) const {
  if (empty_) return absl::InfiniteDuration();
  auto ns = by_namespace_.find(name_space);
  const Scope* listed = ns == by_namespace_.end() ? nullptr : &ns->second;
  if (listed != nullptr) {
    if (std::optional<absl::Duration> d = FindIn(*listed, host)) return *d;
  }
  if (std::optional<absl::Duration> d = FindIn(any_namespace_, host)) return *d;
  if (listed != nullptr && listed->any_host.has_value()) return *listed->any_host;
  return any_namespace_.any_host.value_or(absl::InfiniteDuration());
}

absl::string_view UrlHost(absl::string_view url) {
  const size_t scheme_end = url.find("://");
  if (scheme_end == absl::string_view::npos) return {};
  absl::string_view rest = url.substr(scheme_end + 3);
  rest = rest.substr(0, rest.find_first_of("/?#"));
  if (const size_t at = rest.rfind('@'); at != absl::string_view::npos) {
    rest.remove_prefix(at + 1);
  }
  if (!rest.empty() && rest.front() == '[') {
    const size_t close = rest.find(']');
    return close == absl::string_view::npos ? rest : rest.substr(0, close + 1);
  }
  return rest.substr(0, rest.find(':'));
}

}  // namespace dedupd
