// url_normalizer.cc: the canonical form of a URL; see url_normalizer.h and
// docs/url_normalization.md for the rules, their order and why. This file
// runs the steps in order; each step lives in its own file (internal
// headers in core/url):
//   1-2 screening and parsing: url_screen, url_fast_parse, url_parse
//   3   scheme, 5 port: here
//   4   host (IDNA, IPv4/IPv6 literals, case): url_host
//   6   path and the host rule's path policy: url_path
//   7   query (tracking, session and policy parameters; sorting): url_query
//   percent-encoding rules shared by 6 and 7: url_escapes
//
// Design notes
// - The step order makes the output a fixed point (N(N(x)) == N(x)): every
//   decision is taken on a form that normalization does not change again.
//   Percent-encoding is normalized before session ids are matched and dot
//   segments removed; query keys are classified on their fully decoded form
//   and sorted on their normalized form.
// - Per-call scratch buffers are thread_local, so that steady-state calls
//   allocate only the returned string.
// - Steps are called once per URL (or per path / query parameter); the
//   per-character tests they share are inline in url_chars.h, so no
//   per-character loop calls across translation units.
// - No exception escapes: Boost.URL's url container can throw on allocation,
//   which Normalize turns into an Internal status.
#include "core/url/url_normalizer.h"

#include <cstdint>
#include <exception>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "core/url/url_chars.h"
#include "core/url/url_host.h"
#include "core/url/url_internal.h"
#include "core/url/url_parse.h"
#include "core/url/url_path.h"
#include "core/url/url_query.h"

namespace dedupd {

namespace {

using url_internal::FiredRules;
using url_internal::Invalid;
using url_internal::Param;
using url_internal::QueryScratch;
using url_internal::Quote;
using url_internal::UriParts;

// Scratch space reused across calls on the same thread.
struct Scratch {
  url_internal::ParseScratch parse;
  std::string host;
  std::string path;
  std::string path_tmp;
  QueryScratch query;
};

Scratch& GetScratch() {
  thread_local Scratch scratch;
  return scratch;
}

// NormalizePort applies step 5: `*port` is left empty when the port is
// absent, empty or the scheme's default, else views its digits without
// leading zeros. InvalidArgument when out of range.
absl::Status NormalizePort(const UriParts& parts, bool https, absl::string_view* port,
                           FiredRules* fired) {
  if (parts.has_port) {
    if (parts.port.empty()) {
      fired->Add(url_rules::kEmptyPortDropped);
    } else {
      // port = *DIGIT (RFC 3986): only the range needs checking.
      const size_t digits = parts.port.find_first_not_of('0');
      const absl::string_view number = digits == absl::string_view::npos
                                           ? parts.port.substr(parts.port.size() - 1)
                                           : parts.port.substr(digits);
      uint32_t value = 0;
      for (size_t i = 0; i < number.size() && value <= 65535; ++i) {
        if (!url_internal::IsAsciiDigit(number[i])) {
          return Invalid("URL", absl::StrCat("port ", Quote(parts.port), " is not a number"));
        }
        value = value * 10 + (number[i] - '0');
      }
      if (value > 65535) {
        return Invalid("URL",
                       absl::StrCat("port ", Quote(parts.port), " is out of range (max 65535)"));
      }
      if (value == (https ? 443u : 80u)) {
        fired->Add(url_rules::kDefaultPortDropped);
      } else {
        if (number.size() != parts.port.size()) {
          fired->Add(url_rules::kPortLeadingZerosDropped);
        }
        *port = number;
      }
    }
  }
  return absl::OkStatus();
}

// AssembleUrl returns scheme://host[:port]path[?query], allocated once.
std::string AssembleUrl(bool https, absl::string_view host, absl::string_view port,
                        absl::string_view path, const QueryScratch& query) {
  size_t size = (https ? 8 : 7) + host.size() + path.size();
  if (!port.empty()) size += 1 + port.size();
  for (const Param& p : query.params) size += 1 + p.size;
  std::string out;
  out.reserve(size);
  out.append(https ? "https://" : "http://");
  out.append(host.data(), host.size());
  if (!port.empty()) {
    out.push_back(':');
    out.append(port.data(), port.size());
  }
  out.append(path.data(), path.size());
  for (size_t i = 0; i < query.order.size(); ++i) {
    const Param& p = query.params[query.order[i]];
    out.push_back(i == 0 ? '?' : '&');
    out.append(query.query, p.offset, p.size);
  }
  return out;
}

absl::StatusOr<std::string> NormalizeImpl(absl::string_view url_in, absl::string_view base_in,
                                          const UrlPolicy& policy, bool fast_parse,
                                          FiredRules& fired) {
  Scratch& scratch = GetScratch();

  UriParts parts;
  bool had_fragment = false;
  DEDUPD_RETURN_IF_ERROR(url_internal::ParseUrl(url_in, base_in, fast_parse, &scratch.parse, &parts,
                                                &had_fragment, &fired));

  // Step 3: scheme.
  DEDUPD_RETURN_IF_ERROR(url_internal::CheckScheme(parts.scheme, "URL"));
  const bool https = parts.scheme.size() == 5;
  if (parts.scheme != (https ? "https" : "http")) {
    fired.Add(url_rules::kSchemeLowercased);
  }

  // Step 4: userinfo and host.
  if (!parts.has_authority) return Invalid("URL", "missing host");
  if (parts.has_userinfo) fired.Add(url_rules::kUserinfoDropped);
  std::string& host = scratch.host;
  DEDUPD_RETURN_IF_ERROR(url_internal::NormalizeHost(parts, &host, &fired));

  // Step 5: port.
  absl::string_view port;
  DEDUPD_RETURN_IF_ERROR(NormalizePort(parts, https, &port, &fired));

  const HostRule* rule = policy.Find(host);

  // Step 6: path. Escapes first, so that ";%6Asessionid=" and "%2E%2E" are
  // seen as what they are; session ids before dot segments, so that
  // "/a/..;jsessionid=1/b" does not leave a ".." for a second pass.
  std::string& path = scratch.path;
  url_internal::NormalizePath(parts.path, rule, &path, &scratch.path_tmp, &fired);

  // Step 7: query.
  QueryScratch& query = scratch.query;
  url_internal::NormalizeQuery(parts.query, parts.has_query, policy, rule, &query, &fired);
  if (had_fragment) fired.Add(url_rules::kFragmentDropped);

  return AssembleUrl(https, host, port, path, query);
}

}  // namespace

UrlNormalizer::UrlNormalizer(UrlPolicy policy) : policy_(std::move(policy)) {}

absl::StatusOr<std::string> UrlNormalizer::Normalize(absl::string_view url, absl::string_view base,
                                                     std::vector<absl::string_view>* fired) const {
  FiredRules rules(fired);
  absl::StatusOr<std::string> result;
  try {
    result = NormalizeImpl(url, base, policy_, fast_parse_, rules);
  } catch (const std::exception& e) {
    result = absl::InternalError(absl::StrCat("URL normalizer: ", e.what()));
  } catch (...) {
    result = absl::InternalError("URL normalizer: unknown exception");
  }
  if (!result.ok()) rules.Rollback();
  return result;
}

}  // namespace dedupd
