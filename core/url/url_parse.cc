// url_parse.cc: steps 1 and 2 of the URL normalizer; see url_parse.h.
//
// Absolute URLs with an authority and no IP literal (nearly all real links)
// are split by ParseAbsoluteFast. Everything it does not accept (relative
// references, IP literals, anything unusual) goes to Boost.URL
// (parse_uri_reference, resolve), which is the authority.
#include "core/url/url_parse.h"

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "core/url/url_chars.h"
#include "core/url/url_fast_parse.h"
#include "core/url/url_normalizer.h"
#include "core/url/url_screen.h"

namespace dedupd {
namespace url_internal {

namespace {

namespace urls = boost::urls;

UriParts PartsOf(const urls::url_view_base& u) {
  UriParts parts;
  parts.scheme = Sv(u.scheme());
  parts.has_authority = u.has_authority();
  parts.has_userinfo = u.has_userinfo();
  parts.host = Sv(u.encoded_host());
  switch (u.host_type()) {
    case urls::host_type::ipv6:
      parts.host_kind = HostKind::kIpv6;
      parts.ipv6 = u.host_ipv6_address();
      break;
    case urls::host_type::ipvfuture:
      parts.host_kind = HostKind::kIpvFuture;
      break;
    default:  // name, ipv4 (checked again by the WHATWG IPv4 parser), none
      parts.host_kind = HostKind::kName;
      break;
  }
  parts.has_port = u.has_port();
  parts.port = Sv(u.port());
  parts.path = Sv(u.encoded_path());
  parts.has_query = u.has_query();
  parts.query = Sv(u.encoded_query());
  return parts;
}

// PrepareForBoost works around a Boost.URL 1.81 bug: it takes the
// dotted-quad prefix of "1.2.3.4.example" as an IPv4 host and the rest as
// path. Escaping a leading digit of the host makes it a reg-name, which the
// host step decodes and gives to the WHATWG IPv4 parser anyway.
absl::string_view PrepareForBoost(absl::string_view s, std::string* buf) {
  const AuthoritySpan a = FindAuthority(s);
  if (a.host_begin >= a.end || !IsAsciiDigit(s[a.host_begin])) return s;
  buf->assign(s.data(), a.host_begin);
  buf->push_back('%');
  buf->push_back('3');
  buf->push_back(s[a.host_begin]);
  buf->append(s.data() + a.host_begin + 1, s.size() - a.host_begin - 1);
  return *buf;
}

// Boost.URL 1.81 also accepts "http://host:abc/" as port "" plus path
// "abc/"; RFC 3986 requires a path after an authority to start with '/'.
absl::Status CheckAuthorityEnd(const urls::url_view_base& u, absl::string_view what) {
  const absl::string_view path = Sv(u.encoded_path());
  if (u.has_authority() && !path.empty() && path[0] != '/') {
    return Invalid(what, u.has_port() ? "port is not a number" : "invalid authority");
  }
  return absl::OkStatus();
}

}  // namespace

bool IsHttpScheme(absl::string_view scheme) {
  return absl::EqualsIgnoreCase(scheme, "http") || absl::EqualsIgnoreCase(scheme, "https");
}

absl::Status CheckScheme(absl::string_view scheme, absl::string_view what) {
  if (IsHttpScheme(scheme)) return absl::OkStatus();
  return Invalid(
      what, absl::StrCat("scheme ", Quote(absl::AsciiStrToLower(scheme)), " is not http or https"));
}

absl::Status ParseUrl(absl::string_view url_in, absl::string_view base_in, bool fast_parse,
                      ParseScratch* scratch, UriParts* parts_out, bool* had_fragment,
                      FiredRules* fired) {
  // Steps 1-2: screening, then RFC 3986 parsing.
  absl::string_view text;
  DEDUPD_RETURN_IF_ERROR(
      Screen(url_in, "URL", &scratch->untabbed, &scratch->encoded, &text, had_fragment, fired));
  UriParts& parts = *parts_out;
  bool absolute = fast_parse && ParseAbsoluteFast(text, &parts);
  urls::url_view ref;
  if (!absolute) {
    const urls::result<urls::url_view> parsed =
        urls::parse_uri_reference(Bv(PrepareForBoost(text, &scratch->for_boost)));
    if (!parsed) {
      return Invalid("URL",
                     absl::StrCat("not a valid URI reference (", parsed.error().message(), ")"));
    }
    DEDUPD_RETURN_IF_ERROR(CheckAuthorityEnd(*parsed, "URL"));
    ref = *parsed;
    if (ref.has_scheme()) {
      parts = PartsOf(ref);
      absolute = true;
    }
  }

  // A non-empty base must be an absolute http(s) URL, even when `url` does
  // not need it: a bad base is a caller bug worth reporting.
  // Points at scratch->cached_base. Not a url_view: Boost.URL 1.81's
  // url_view::operator=(url) leaves the view's own copy of the parts stale,
  // and url_base::copy (used by resolve) reads that copy.
  const urls::url_view_base* base = nullptr;
  if (!base_in.empty() && !absolute && base_in == scratch->cached_base_input) {
    base = &scratch->cached_base;  // screened and checked when cached
  } else if (!base_in.empty()) {
    absl::string_view base_text;
    bool base_fragment = false;
    DEDUPD_RETURN_IF_ERROR(Screen(base_in, "base URL", &scratch->base_untabbed,
                                  &scratch->base_encoded, &base_text, &base_fragment, nullptr));
    UriParts base_parts;
    if (absolute && fast_parse && ParseAbsoluteFast(base_text, &base_parts)) {
      DEDUPD_RETURN_IF_ERROR(CheckScheme(base_parts.scheme, "base URL"));
    } else {
      const urls::result<urls::url_view> parsed =
          urls::parse_uri(Bv(PrepareForBoost(base_text, &scratch->base_for_boost)));
      if (!parsed) {
        return Invalid("base URL",
                       absl::StrCat("not an absolute URI (", parsed.error().message(), ")"));
      }
      DEDUPD_RETURN_IF_ERROR(CheckScheme(Sv(parsed->scheme()), "base URL"));
      DEDUPD_RETURN_IF_ERROR(CheckAuthorityEnd(*parsed, "base URL"));
      scratch->cached_base_input.clear();  // in case the copy throws
      scratch->cached_base = *parsed;
      scratch->cached_base_input.assign(base_in.data(), base_in.size());
      base = &scratch->cached_base;
    }
  }
  if (!absolute) {
    if (base_in.empty()) return Invalid("URL", "relative URL and no base URL");
    // RFC 3986 §5.2; may throw on allocation (caught in Normalize).
    const urls::result<void> r = urls::resolve(*base, ref, scratch->resolved);
    if (!r) {
      return Invalid("URL",
                     absl::StrCat("cannot resolve against base URL (", r.error().message(), ")"));
    }
    parts = PartsOf(scratch->resolved);
    fired->Add(url_rules::kResolvedAgainstBase);
  }
  return absl::OkStatus();
}

}  // namespace url_internal
}  // namespace dedupd
