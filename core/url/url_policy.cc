// url_policy.cc: validation and host lookup for UrlPolicy.
#include "core/url/url_policy.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace dedupd {
namespace {

// CheckHostName returns why `name` (lowercased, without any "*." prefix) is
// not a usable host name, or an empty string when it is. The character set
// matches what UrlNormalizer emits for reg-name and IPv4 hosts.
std::string CheckHostName(absl::string_view name) {
  if (name.empty()) return "empty host name";
  size_t label_start = 0;
  for (size_t i = 0; i <= name.size(); ++i) {
    if (i == name.size() || name[i] == '.') {
      if (i == label_start) return "empty label";
      label_start = i + 1;
      continue;
    }
    const char c = name[i];
    if (c == '*') return "'*' is only allowed as a leading \"*.\"";
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    if (!ok) {
      return absl::StrCat("character '", absl::CEscape(absl::string_view(&c, 1)),
                          "' is not allowed (hosts are ASCII, punycoded)");
    }
  }
  return std::string();
}

}  // namespace

absl::StatusOr<UrlPolicy> UrlPolicy::Create(std::vector<HostRule> rules,
                                            std::vector<std::string> drop_params) {
  UrlPolicy policy;
  for (size_t i = 0; i < rules.size(); ++i) {
    HostRule& rule = rules[i];
    if (rule.hosts.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("host rule ", i, ": empty host list"));
    }
    for (std::string& host : rule.hosts) {
      absl::AsciiStrToLower(&host);
      const bool is_pattern = absl::StartsWith(host, "*.");
      const absl::string_view name = is_pattern ? absl::string_view(host).substr(2) : host;
      if (host == "*") {
        return absl::InvalidArgumentError(
            absl::StrCat("host rule ", i, ": malformed host pattern '*': use \"*.suffix\""));
      }
      const std::string why = CheckHostName(name);
      if (!why.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat("host rule ", i, ": malformed host '", absl::CEscape(host), "': ", why));
      }
      auto& index = is_pattern ? policy.suffix_ : policy.exact_;
      const auto [it, inserted] = index.emplace(std::string(name), i);
      if (!inserted && it->second != i) {
        return absl::InvalidArgumentError(absl::StrCat(
            "host rule ", i, ": host '", host, "' is also named by host rule ", it->second));
      }
    }
    // Find returns pointers into rules_, and matching is case-insensitive.
    for (std::string& key : rule.drop_params) absl::AsciiStrToLower(&key);
  }
  for (std::string& key : drop_params) absl::AsciiStrToLower(&key);
  policy.rules_ = std::move(rules);
  policy.drop_params_ = std::move(drop_params);
  return policy;
}

const HostRule* UrlPolicy::Find(absl::string_view host) const {
  const int i = FindIndex(host);
  return i < 0 ? nullptr : &rules_[static_cast<size_t>(i)];
}

int UrlPolicy::FindIndex(absl::string_view host) const {
  if (rules_.empty()) return -1;
  if (auto it = exact_.find(host); it != exact_.end()) {
    return static_cast<int>(it->second);
  }
  if (suffix_.empty()) return -1;
  // "*.example.com" is stored as "example.com" and matches the host itself
  // and every subdomain; trying suffixes from the longest finds the most
  // specific pattern first.
  absl::string_view rest = host;
  while (!rest.empty()) {
    if (auto it = suffix_.find(rest); it != suffix_.end()) {
      return static_cast<int>(it->second);
    }
    const size_t dot = rest.find('.');
    if (dot == absl::string_view::npos) break;
    rest.remove_prefix(dot + 1);
  }
  return -1;
}

}  // namespace dedupd
