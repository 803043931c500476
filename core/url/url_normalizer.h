// url_normalizer.h: the canonical form of a URL, which is the key of the URL
// layer's seen-set. Parses per RFC 3986 (Boost.URL), resolves relative
// references against a base, maps IDN hosts to punycode (libidn2, UTS #46
// non-transitional), canonicalizes IP literals, percent-encoding, ports and
// the query (tracking parameters and session ids dropped, the rest sorted
// stably), and applies the per-host UrlPolicy.
//
// Invariant: Normalize(Normalize(x)) == Normalize(x) for every x.
// Every rule that changes its output bumps kVersion (the store refuses to
// open with another version, since keys would no longer match).
//
// Example:
//   UrlNormalizer n;  // default policy
//   std::vector<absl::string_view> rules;
//   absl::StatusOr<std::string> u =
//       n.Normalize("HTTP://Example.COM:80/a/./b/?utm_source=x&b=2&a=1#top",
//                   "", &rules);
//   // *u == "http://example.com/a/b?a=1&b=2"
//   // rules == {"scheme_lowercased", "host_lowercased", ...}
#ifndef DEDUPD_CORE_URL_URL_NORMALIZER_H_
#define DEDUPD_CORE_URL_URL_NORMALIZER_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/url/url_policy.h"

namespace dedupd {

// The names UrlNormalizer reports through Normalize's `fired` argument, in
// the order the rules apply. Stable: tools and tests match on them.
namespace url_rules {
inline constexpr absl::string_view kResolvedAgainstBase = "resolved_against_base";
inline constexpr absl::string_view kWhitespaceTrimmed = "whitespace_trimmed";
inline constexpr absl::string_view kCharactersPercentEncoded = "characters_percent_encoded";
inline constexpr absl::string_view kSchemeLowercased = "scheme_lowercased";
inline constexpr absl::string_view kUserinfoDropped = "userinfo_dropped";
inline constexpr absl::string_view kHostLowercased = "host_lowercased";
inline constexpr absl::string_view kHostIdnaToAscii = "host_idna_to_ascii";
inline constexpr absl::string_view kHostTrailingDotDropped = "host_trailing_dot_dropped";
inline constexpr absl::string_view kIpv4Canonicalized = "ipv4_canonicalized";
inline constexpr absl::string_view kIpv6Canonicalized = "ipv6_canonicalized";
inline constexpr absl::string_view kDefaultPortDropped = "default_port_dropped";
inline constexpr absl::string_view kEmptyPortDropped = "empty_port_dropped";
inline constexpr absl::string_view kPortLeadingZerosDropped = "port_leading_zeros_dropped";
inline constexpr absl::string_view kPercentEncodingNormalized = "percent_encoding_normalized";
inline constexpr absl::string_view kPathSessionIdDropped = "path_session_id_dropped";
inline constexpr absl::string_view kDotSegmentsRemoved = "dot_segments_removed";
inline constexpr absl::string_view kEmptyPathSetToSlash = "empty_path_set_to_slash";
inline constexpr absl::string_view kPathLowercased = "path_lowercased";
inline constexpr absl::string_view kTrailingSlashStripped = "trailing_slash_stripped";
inline constexpr absl::string_view kTrailingSlashAdded = "trailing_slash_added";
inline constexpr absl::string_view kTrackingParamsDropped = "tracking_params_dropped";
inline constexpr absl::string_view kSessionParamsDropped = "session_params_dropped";
inline constexpr absl::string_view kPolicyParamsDropped = "policy_params_dropped";
inline constexpr absl::string_view kParamsNotAllowlistedDropped = "params_not_allowlisted_dropped";
inline constexpr absl::string_view kEmptyParamsDropped = "empty_params_dropped";
inline constexpr absl::string_view kParamsSorted = "params_sorted";
inline constexpr absl::string_view kEmptyQueryDropped = "empty_query_dropped";
inline constexpr absl::string_view kFragmentDropped = "fragment_dropped";
}  // namespace url_rules

// UrlNormalizer: immutable after construction; thread-safe.
class UrlNormalizer {
 public:
  // Version of the canonical form. Persisted in the store's meta record.
  static constexpr uint32_t kVersion = 1;
  // Longest accepted input URL and base URL, in bytes.
  static constexpr size_t kMaxUrlBytes = 8192;
  // Longest accepted host after IDNA, in bytes (RFC 1035).
  static constexpr size_t kMaxHostBytes = 253;

  explicit UrlNormalizer(UrlPolicy policy = UrlPolicy());

  // Normalize returns the canonical absolute http(s) form of `url`. When
  // `url` is a relative reference it is resolved against `base` (which must
  // itself be an absolute http(s) URL); when `base` is empty, a relative
  // `url` is an error. When `fired` is non-null, the names of the rules that
  // changed the URL are appended to it (views of static strings).
  //
  // Returns InvalidArgument with a one-line reason for: empty input, input
  // over kMaxUrlBytes, invalid UTF-8, NUL or other control characters,
  // unparsable syntax, a scheme other than http/https (javascript:,
  // mailto:, file:, ...), a missing or invalid host, an IDN that IDNA2008
  // rejects, a host over kMaxHostBytes, a port over 65535.
  absl::StatusOr<std::string> Normalize(absl::string_view url, absl::string_view base = {},
                                        std::vector<absl::string_view>* fired = nullptr) const;

  const UrlPolicy& policy() const { return policy_; }

 private:
  friend class UrlNormalizerTestPeer;

  UrlPolicy policy_;
  // Absolute URLs go through a strict hand-written RFC 3986 parser (Boost.URL
  // 1.81's parser costs more than the rest of normalization); anything it
  // does not accept goes to Boost.URL. Tests turn it off to check that both
  // paths agree.
  bool fast_parse_ = true;
};

}  // namespace dedupd

#endif  // DEDUPD_CORE_URL_URL_NORMALIZER_H_
