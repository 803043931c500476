// url_internal.h: INTERNAL to core/url (not part of the public API; include
// url_normalizer.h instead). What the stages of UrlNormalizer::Normalize
// share: the parsed parts of a URI reference, rule reporting, and error
// messages. The stages live in url_screen, url_fast_parse, url_parse,
// url_host, url_escapes, url_path and url_query; url_normalizer.cc runs them
// in order.
//
// Example:
//   FiredRules fired(&names);
//   fired.Add(url_rules::kHostLowercased);  // once per call, however often
//   return Invalid("host", "empty host");  // "host: empty host"
#ifndef DEDUPD_CORE_URL_URL_INTERNAL_H_
#define DEDUPD_CORE_URL_URL_INTERNAL_H_

#include <boost/url/ipv6_address.hpp>
#include <boost/url/string_view.hpp>
#include <cstddef>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"

namespace dedupd {
namespace url_internal {

// absl::string_view is not std::string_view in this Abseil build, and
// Boost.URL has its own string_view: convert explicitly.
inline absl::string_view Sv(boost::urls::string_view s) {
  return absl::string_view(s.data(), s.size());
}
inline boost::urls::string_view Bv(absl::string_view s) {
  return boost::urls::string_view(s.data(), s.size());
}

// FiredRules appends rule names to the caller's vector, each at most once
// per Normalize call. Not thread-safe (one per call).
class FiredRules {
 public:
  explicit FiredRules(std::vector<absl::string_view>* out)
      : out_(out), start_(out == nullptr ? 0 : out->size()) {}

  void Add(absl::string_view rule) {
    if (out_ == nullptr) return;
    for (size_t i = start_; i < out_->size(); ++i) {
      if ((*out_)[i] == rule) return;
    }
    out_->push_back(rule);
  }
  // Forget what this call added (the URL was rejected).
  void Rollback() {
    if (out_ != nullptr) out_->resize(start_);
  }

 private:
  std::vector<absl::string_view>* out_;
  size_t start_;
};

// Invalid returns InvalidArgument "<what>: <reason>".
inline absl::Status Invalid(absl::string_view what, absl::string_view reason) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", reason));
}

// Quote shows a bounded, escaped excerpt of input in an error message.
inline std::string Quote(absl::string_view s) {
  constexpr size_t kMaxShown = 64;
  if (s.size() <= kMaxShown) return absl::StrCat("'", absl::CHexEscape(s), "'");
  return absl::StrCat("'", absl::CHexEscape(s.substr(0, kMaxShown)), "...'");
}

enum class HostKind { kName, kIpv6, kIpvFuture };

// The parts of a parsed URI reference, as views of the parsed text (which
// the parse stage keeps alive until the call ends).
struct UriParts {
  absl::string_view scheme;
  bool has_authority = false;
  bool has_userinfo = false;
  HostKind host_kind = HostKind::kName;
  absl::string_view host;  // encoded; IP literals with their brackets
  boost::urls::ipv6_address ipv6;
  bool has_port = false;
  absl::string_view port;
  absl::string_view path;
  bool has_query = false;
  absl::string_view query;
};

}  // namespace url_internal
}  // namespace dedupd

#endif  // DEDUPD_CORE_URL_URL_INTERNAL_H_
