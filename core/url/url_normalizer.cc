// url_normalizer.cc: the canonical form of a URL; see url_normalizer.h and
// docs/url_normalization.md for the rules, their order and why.
//
// Design notes
// - Parsing is RFC 3986. Absolute URLs with an authority and no IP literal
//   (nearly all real links) are split by ParseAbsoluteFast, a strict
//   hand-written parser: Boost.URL 1.81's parse_uri_reference costs ~0.8 us
//   per 80-byte URL, more than all the normalization steps together.
//   Everything the fast parser does not accept (relative references, IP
//   literals, anything unusual) goes to Boost.URL (parse_uri_reference,
//   resolve), which is the authority; url_normalizer_test checks that both
//   paths give identical results over a generated corpus.
// - The step order makes the output a fixed point (N(N(x)) == N(x)): every
//   decision is taken on a form that normalization does not change again.
//   Percent-encoding is normalized before session ids are matched and dot
//   segments removed; query keys are classified on their fully decoded form
//   and sorted on their normalized form.
// - Per-call scratch buffers are thread_local, so that steady-state calls
//   allocate only the returned string.
// - No exception escapes: Boost.URL's url container can throw on allocation,
//   which Normalize turns into an Internal status.
#include "core/url/url_normalizer.h"

#include <idn2.h>

#include <algorithm>
#include <array>
#include <boost/url/ipv6_address.hpp>
#include <boost/url/parse.hpp>
#include <boost/url/url.hpp>
#include <boost/url/url_view.hpp>
#include <cstdint>
#include <cstring>
#include <exception>
#include <utility>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"

namespace dedupd {

namespace {

namespace urls = boost::urls;

// absl::string_view is not std::string_view in this Abseil build, and
// Boost.URL has its own string_view: convert explicitly.
absl::string_view Sv(urls::string_view s) {
  return absl::string_view(s.data(), s.size());
}
urls::string_view Bv(absl::string_view s) {
  return urls::string_view(s.data(), s.size());
}

// ---------------------------------------------------------------------------
// Character classes.

constexpr bool IsAsciiAlpha(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}
constexpr bool IsAsciiDigit(unsigned char c) { return c >= '0' && c <= '9'; }
constexpr bool IsHexDigit(unsigned char c) {
  return IsAsciiDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}
constexpr int HexValue(unsigned char c) {
  return IsAsciiDigit(c) ? c - '0' : (c >= 'a' ? c - 'a' + 10 : c - 'A' + 10);
}
constexpr char kUpperHex[] = "0123456789ABCDEF";

// RFC 3986 §2.3 unreserved: decoded wherever they appear percent-encoded.
constexpr bool IsUnreserved(unsigned char c) {
  return IsAsciiAlpha(c) || IsAsciiDigit(c) || c == '-' || c == '.' ||
         c == '_' || c == '~';
}
constexpr bool IsSubDelim(unsigned char c) {
  return c == '!' || c == '$' || c == '&' || c == '\'' || c == '(' ||
         c == ')' || c == '*' || c == '+' || c == ',' || c == ';' || c == '=';
}

// Bytes that cannot appear in an RFC 3986 URI but that real links contain;
// they are percent-encoded before parsing (as browsers do when they send
// such a link).
constexpr bool MustEncode(unsigned char c) {
  return c >= 0x80 || c == ' ' || c == '"' || c == '<' || c == '>' ||
         c == '\\' || c == '^' || c == '`' || c == '{' || c == '|' || c == '}';
}

// Characters of an ASCII host: letters, digits, '-', '_' (seen in real host
// names although RFC 952 forbids it) and the label separator.
constexpr bool IsHostChar(unsigned char c) {
  return (c >= 'a' && c <= 'z') || IsAsciiDigit(c) || c == '-' || c == '_' ||
         c == '.';
}

// Byte classes for the single screening pass (step 1-2).
enum : uint8_t {
  kScreenControl = 1,  // C0 control or DEL
  kScreenEncode = 2,   // MustEncode, ASCII part
  kScreenHigh = 4,     // >= 0x80: UTF-8 sequence, encoded
  kScreenPercent = 8,
  kScreenBracket = 16,
  kScreenHash = 32,
};

// Byte classes of RFC 3986 for the fast parser; each scan uses one bit.
enum : uint8_t {
  kRfcRegName = 1,    // unreserved / sub-delims (plus '%' escapes)
  kRfcPathQuery = 2,  // pchar / "/" / "?" (plus '%' escapes)
  kRfcHost = 4,       // IsHostChar
};

struct ByteTables {
  std::array<uint8_t, 256> screen{};
  std::array<uint8_t, 256> rfc{};
};

constexpr ByteTables MakeByteTables() {
  ByteTables t;
  for (int i = 0; i < 256; ++i) {
    const unsigned char c = static_cast<unsigned char>(i);
    uint8_t s = 0;
    if (c < 0x20 || c == 0x7F) s |= kScreenControl;
    if (c >= 0x80) {
      s |= kScreenHigh;
    } else if (MustEncode(c)) {
      s |= kScreenEncode;
    }
    if (c == '%') s |= kScreenPercent;
    if (c == '[' || c == ']') s |= kScreenBracket;
    if (c == '#') s |= kScreenHash;
    t.screen[i] = s;
    uint8_t r = 0;
    if (IsUnreserved(c) || IsSubDelim(c)) r |= kRfcRegName;
    if (IsUnreserved(c) || IsSubDelim(c) || c == ':' || c == '@' || c == '/' ||
        c == '?') {
      r |= kRfcPathQuery;
    }
    if (IsHostChar(c)) r |= kRfcHost;
    t.rfc[i] = r;
  }
  return t;
}
constexpr ByteTables kTables = MakeByteTables();

inline uint8_t RfcClass(char c) {
  return kTables.rfc[static_cast<unsigned char>(c)];
}
inline bool IsHostByte(char c) { return (RfcClass(c) & kRfcHost) != 0; }

// ---------------------------------------------------------------------------
// Rule reporting.

// FiredRules appends rule names to the caller's vector, each at most once
// per Normalize call.
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

absl::Status Invalid(absl::string_view what, absl::string_view reason) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", reason));
}

// Quote shows a bounded, escaped excerpt of input in an error message.
std::string Quote(absl::string_view s) {
  constexpr size_t kMaxShown = 64;
  if (s.size() <= kMaxShown) return absl::StrCat("'", absl::CHexEscape(s), "'");
  return absl::StrCat("'", absl::CHexEscape(s.substr(0, kMaxShown)), "...'");
}

// ---------------------------------------------------------------------------
// Scratch space reused across calls on the same thread.

struct Param {
  uint32_t offset;  // into Scratch::query
  uint32_t size;
  uint32_t key_size;  // bytes before the first '=' (or size)
};

struct Scratch {
  std::string untabbed;       // URL without TAB/CR/LF
  std::string encoded;        // URL with invalid bytes percent-encoded
  std::string for_boost;      // URL as given to Boost.URL
  std::string base_untabbed;  // the same three for the base
  std::string base_encoded;
  std::string base_for_boost;
  std::string host;
  std::string path;
  std::string path_tmp;
  std::string query;  // normalized parameters, back to back
  std::string key;    // a decoded query key
  std::vector<Param> params;
  std::vector<uint32_t> order;
  urls::url resolved;
  // The last base parsed by Boost.URL on this thread, and its input: a
  // crawler resolves all the links of a page against one base.
  std::string cached_base_input;
  urls::url cached_base;
};

Scratch& GetScratch() {
  thread_local Scratch scratch;
  return scratch;
}

// ---------------------------------------------------------------------------
// Steps 1 and 2: screening the raw bytes.

// Utf8SequenceLength returns the length of the well-formed UTF-8 sequence
// (RFC 3629: no overlongs, no surrogates, nothing above U+10FFFF) starting
// at p[i] >= 0x80, or 0.
size_t Utf8SequenceLength(const unsigned char* p, size_t i, size_t n) {
  const unsigned char c = p[i];
  size_t len;
  if (c >= 0xC2 && c <= 0xDF) {
    len = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    len = 3;
  } else if (c >= 0xF0 && c <= 0xF4) {
    len = 4;
  } else {
    return 0;
  }
  if (n - i < len) return 0;
  const unsigned char c1 = p[i + 1];
  if ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 > 0x9F) ||
      (c == 0xF0 && c1 < 0x90) || (c == 0xF4 && c1 > 0x8F)) {
    return 0;
  }
  for (size_t k = 1; k < len; ++k) {
    if ((p[i + k] & 0xC0) != 0x80) return 0;
  }
  return len;
}

bool IsValidUtf8(absl::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  for (size_t i = 0; i < s.size();) {
    if (p[i] < 0x80) {
      ++i;
      continue;
    }
    const size_t len = Utf8SequenceLength(p, i, s.size());
    if (len == 0) return false;
    i += len;
  }
  return true;
}

// Where the host starts and the authority ends in a URI reference, found
// by RFC 3986's generic syntax (Appendix B) before the real parse.
struct AuthoritySpan {
  size_t host_begin;  // == end when there is no authority
  size_t end;         // where the path starts
};

AuthoritySpan FindAuthority(absl::string_view s) {
  size_t rest = 0;
  if (!s.empty() && IsAsciiAlpha(s[0])) {
    size_t i = 1;
    while (i < s.size() && (IsAsciiAlpha(s[i]) || IsAsciiDigit(s[i]) ||
                            s[i] == '+' || s[i] == '-' || s[i] == '.')) {
      ++i;
    }
    if (i < s.size() && s[i] == ':') rest = i + 1;
  }
  if (s.substr(rest, 2) != "//") return AuthoritySpan{rest, rest};
  size_t end = s.find_first_of("/?", rest + 2);
  if (end == absl::string_view::npos) end = s.size();
  const size_t at = s.substr(0, end).rfind('@');
  const size_t host_begin =
      at != absl::string_view::npos && at >= rest + 2 ? at + 1 : rest + 2;
  return AuthoritySpan{host_begin, end};
}

absl::Status ControlCharError(absl::string_view what, unsigned char c,
                              size_t offset) {
  if (c == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " contains a NUL byte (byte offset ", offset, ")"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(what, " contains control character 0x",
                   absl::string_view(&kUpperHex[c >> 4], 1),
                   absl::string_view(&kUpperHex[c & 0xF], 1), " (byte offset ",
                   offset, ")"));
}

// Screen applies steps 1 and 2 to `in`: rejects empty, oversized, invalid
// UTF-8 and control characters; trims C0-control-or-space at both ends;
// removes embedded TAB/CR/LF; cuts the fragment (reported through
// `had_fragment`); percent-encodes bytes that cannot appear in a URI. `*out`
// views `in` or one of the two scratch strings. `what` names the input in
// error messages. `fired` may be null (the base's cleanup is not reported:
// it does not change the output).
absl::Status Screen(absl::string_view in, absl::string_view what,
                    std::string* untabbed, std::string* encoded,
                    absl::string_view* out, bool* had_fragment,
                    FiredRules* fired) {
  if (in.empty())
    return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  if (in.size() > UrlNormalizer::kMaxUrlBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " is ", in.size(), " bytes, over the limit of ",
                     UrlNormalizer::kMaxUrlBytes, " bytes"));
  }
  // WHATWG URL: strip leading and trailing C0 control or space -- except
  // NUL, which is an error anywhere: a NUL in a link is a sign of corrupt
  // extraction, not of stray whitespace.
  auto trimmable = [](char c) {
    return c != '\0' && static_cast<unsigned char>(c) <= 0x20;
  };
  size_t b = 0;
  size_t e = in.size();
  while (b < e && trimmable(in[b])) ++b;
  while (e > b && trimmable(in[e - 1])) --e;

  // One pass over the bytes: validate, and find out whether the fast case
  // (nothing to remove or encode) applies.
  const auto* p = reinterpret_cast<const unsigned char*>(in.data());
  bool has_tabs = false;
  bool must_encode = false;
  bool has_brackets = false;
  size_t hash = absl::string_view::npos;
  const uint8_t* const table = kTables.screen.data();
  for (size_t i = b; i < e; ++i) {
    // Most bytes need nothing: skip them eight at a time.
    while (e - i >= 8 && (table[p[i]] | table[p[i + 1]] | table[p[i + 2]] |
                          table[p[i + 3]] | table[p[i + 4]] | table[p[i + 5]] |
                          table[p[i + 6]] | table[p[i + 7]]) == 0) {
      i += 8;
    }
    if (i == e) break;
    const uint8_t cls = table[p[i]];
    if (cls == 0) continue;
    if (cls & kScreenHigh) {
      const size_t len = Utf8SequenceLength(p, i, e);
      if (len == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat(what, " is not valid UTF-8 (byte offset ", i, ")"));
      }
      must_encode = true;
      i += len - 1;
    } else if (cls & kScreenControl) {
      if (p[i] != '\t' && p[i] != '\n' && p[i] != '\r') {
        return ControlCharError(what, p[i], i);
      }
      has_tabs = true;
    } else if (cls & kScreenPercent) {
      // A '%' that does not start an escape is a literal percent sign.
      if (e - i < 3 || !IsHexDigit(p[i + 1]) || !IsHexDigit(p[i + 2])) {
        must_encode = true;
      }
    } else if (cls & kScreenHash) {
      if (hash == absl::string_view::npos) hash = i;
    } else if (cls & kScreenBracket) {
      has_brackets = true;
    } else {
      must_encode = true;
    }
  }
  if (b == e) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " is empty after trimming whitespace"));
  }
  if ((b > 0 || e < in.size() || has_tabs) && fired != nullptr) {
    fired->Add(url_rules::kWhitespaceTrimmed);
  }
  if (!has_tabs && !must_encode && !has_brackets) {
    // The common case: a view of the input, fragment cut.
    *had_fragment = hash != absl::string_view::npos;
    *out = in.substr(b, (*had_fragment ? hash : e) - b);
    return absl::OkStatus();
  }

  absl::string_view s = in.substr(b, e - b);
  if (has_tabs) {
    // WHATWG URL: remove all ASCII tab or newline from the input.
    untabbed->clear();
    for (char c : s) {
      if (c != '\t' && c != '\n' && c != '\r') untabbed->push_back(c);
    }
    s = *untabbed;
  }
  // The fragment never reaches the output; cutting it here also accepts
  // fragments that RFC 3986 would reject ("#!/a#b", "#a b").
  *had_fragment = false;
  if (const size_t h = s.find('#'); h != absl::string_view::npos) {
    s = s.substr(0, h);
    *had_fragment = true;
  }
  // '[' and ']' are IP-literal delimiters in the host and data elsewhere.
  const size_t authority_end = FindAuthority(s).end;
  auto needs_encoding = [&](size_t i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (MustEncode(c)) return true;
    if ((c == '[' || c == ']') && i >= authority_end) return true;
    if (c == '%') {
      return i + 2 >= s.size() || !IsHexDigit(s[i + 1]) ||
             !IsHexDigit(s[i + 2]);
    }
    return false;
  };
  size_t first = 0;
  while (first < s.size() && !needs_encoding(first)) ++first;
  if (first == s.size()) {
    *out = s;
    return absl::OkStatus();
  }
  encoded->assign(s.data(), first);
  for (size_t i = first; i < s.size(); ++i) {
    if (needs_encoding(i)) {
      const unsigned char c = static_cast<unsigned char>(s[i]);
      encoded->push_back('%');
      encoded->push_back(kUpperHex[c >> 4]);
      encoded->push_back(kUpperHex[c & 0xF]);
    } else {
      encoded->push_back(s[i]);
    }
  }
  *out = *encoded;
  if (fired != nullptr) fired->Add(url_rules::kCharactersPercentEncoded);
  return absl::OkStatus();
}

// ---------------------------------------------------------------------------
// Parsing: the components the later steps work on.

enum class HostKind { kName, kIpv6, kIpvFuture };

// The parts of a parsed URI reference, as views of the parsed text.
struct UriParts {
  absl::string_view scheme;
  bool has_authority = false;
  bool has_userinfo = false;
  HostKind host_kind = HostKind::kName;
  absl::string_view host;  // encoded; IP literals with their brackets
  urls::ipv6_address ipv6;
  bool has_port = false;
  absl::string_view port;
  absl::string_view path;
  bool has_query = false;
  absl::string_view query;
};

// ScanEscaped advances *i over characters of RFC class `bit` and over "%XX"
// escapes; stops at the first other byte. Returns false on a malformed
// escape.
inline bool ScanEscaped(absl::string_view s, size_t* i, uint8_t bit) {
  size_t k = *i;
  const uint8_t* const table = kTables.rfc.data();
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  while (k < s.size()) {
    while (s.size() - k >= 4 &&
           (table[p[k]] & table[p[k + 1]] & table[p[k + 2]] & table[p[k + 3]] &
            bit) != 0) {
      k += 4;
    }
    if (k == s.size()) break;
    if (table[p[k]] & bit) {
      ++k;
    } else if (s[k] == '%') {
      if (s.size() - k < 3 || !IsHexDigit(s[k + 1]) || !IsHexDigit(s[k + 2])) {
        return false;
      }
      k += 3;
    } else {
      break;
    }
  }
  *i = k;
  return true;
}

// ParseAbsoluteFast splits `s` when it is `scheme "://" [userinfo "@"]
// reg-name [":" *DIGIT] path-abempty ["?" query]` per RFC 3986 and returns
// true; returns false (leaving the decision to Boost.URL) for anything else,
// including IP literals and every malformed input. For what it accepts, its
// parts equal Boost.URL's, except that dotted-decimal IPv4 is a reg-name
// here (the host step treats both alike).
bool ParseAbsoluteFast(absl::string_view s, UriParts* parts) {
  const size_t n = s.size();
  if (n == 0 || !IsAsciiAlpha(s[0])) return false;
  size_t i = 1;
  while (i < n && (IsAsciiAlpha(s[i]) || IsAsciiDigit(s[i]) || s[i] == '+' ||
                   s[i] == '-' || s[i] == '.')) {
    ++i;
  }
  if (n - i < 3 || s[i] != ':' || s[i + 1] != '/' || s[i + 2] != '/')
    return false;
  parts->scheme = s.substr(0, i);
  parts->has_authority = true;
  const size_t authority = i + 3;

  // Authority: reg-name characters, escapes, ':' and at most one '@'.
  size_t end = authority;
  size_t at = absl::string_view::npos;
  size_t colon = absl::string_view::npos;  // the first ':' after any '@'
  while (true) {
    if (!ScanEscaped(s, &end, kRfcRegName)) return false;
    if (end == n || s[end] == '/' || s[end] == '?') break;
    if (s[end] == '@') {
      if (at != absl::string_view::npos) return false;
      at = end;
      colon = absl::string_view::npos;
    } else if (s[end] == ':') {
      if (colon == absl::string_view::npos) colon = end;
    } else {
      return false;  // '[' and everything else: Boost.URL decides
    }
    ++end;
  }
  const size_t host_begin = at == absl::string_view::npos ? authority : at + 1;
  const size_t host_end = colon == absl::string_view::npos ? end : colon;
  parts->has_userinfo = at != absl::string_view::npos;
  parts->host_kind = HostKind::kName;
  parts->host = s.substr(host_begin, host_end - host_begin);
  parts->has_port = colon != absl::string_view::npos;
  parts->port = parts->has_port ? s.substr(colon + 1, end - colon - 1)
                                : absl::string_view();
  for (char c : parts->port) {
    if (!IsAsciiDigit(c)) return false;
  }

  // path-abempty: pchar and '/'.
  size_t q = end;
  if (!ScanEscaped(s, &q, kRfcPathQuery)) return false;
  const size_t query_mark = s.find('?', end);
  if (q != n) return false;
  const size_t path_end =
      query_mark == absl::string_view::npos ? n : query_mark;
  parts->path = s.substr(end, path_end - end);
  parts->has_query = query_mark != absl::string_view::npos;
  parts->query =
      parts->has_query ? s.substr(query_mark + 1) : absl::string_view();
  return true;
}

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
absl::Status CheckAuthorityEnd(const urls::url_view_base& u,
                               absl::string_view what) {
  const absl::string_view path = Sv(u.encoded_path());
  if (u.has_authority() && !path.empty() && path[0] != '/') {
    return Invalid(what,
                   u.has_port() ? "port is not a number" : "invalid authority");
  }
  return absl::OkStatus();
}

bool IsHttpScheme(absl::string_view scheme) {
  return absl::EqualsIgnoreCase(scheme, "http") ||
         absl::EqualsIgnoreCase(scheme, "https");
}

absl::Status CheckScheme(absl::string_view scheme, absl::string_view what) {
  if (IsHttpScheme(scheme)) return absl::OkStatus();
  return Invalid(what,
                 absl::StrCat("scheme ", Quote(absl::AsciiStrToLower(scheme)),
                              " is not http or https"));
}

// ---------------------------------------------------------------------------
// Step 4: host.

// ParseIpv4Number parses one part of a WHATWG IPv4 address: 0x/0X hex, a
// leading 0 octal, else decimal. Values above 2^32 saturate (they are out of
// range for every position). Returns false on a digit outside the radix.
bool ParseIpv4Number(absl::string_view part, uint64_t* value) {
  int radix = 10;
  if (part.size() >= 2 && part[0] == '0' &&
      (part[1] == 'x' || part[1] == 'X')) {
    radix = 16;
    part.remove_prefix(2);
  } else if (part.size() >= 2 && part[0] == '0') {
    radix = 8;
    part.remove_prefix(1);
  }
  uint64_t v = 0;
  for (char ch : part) {
    const unsigned char c = static_cast<unsigned char>(ch);
    int d;
    if (radix == 16) {
      if (!IsHexDigit(c)) return false;
      d = HexValue(c);
    } else {
      if (!IsAsciiDigit(c) || c - '0' >= radix) return false;
      d = c - '0';
    }
    v = v * radix + d;
    if (v > (uint64_t{1} << 32)) v = (uint64_t{1} << 32) + 1;
  }
  *value = v;
  return true;
}

// EndsInNumber is the WHATWG "ends in a number checker": the last label is
// all digits or a 0x hex number, which makes the whole host an IPv4 address.
bool EndsInNumber(absl::string_view host) {
  const size_t dot = host.rfind('.');
  const absl::string_view last =
      dot == absl::string_view::npos ? host : host.substr(dot + 1);
  if (last.empty()) return false;
  if (std::all_of(last.begin(), last.end(),
                  [](char c) { return IsAsciiDigit(c); })) {
    return true;
  }
  if (last.size() >= 2 && last[0] == '0' &&
      (last[1] == 'x' || last[1] == 'X')) {
    return std::all_of(last.begin() + 2, last.end(),
                       [](char c) { return IsHexDigit(c); });
  }
  return false;
}

// ParseWhatwgIpv4 parses 1-4 dot-separated numbers (WHATWG URL "IPv4
// parser") into an address, e.g. "0x7f.1" and "2130706433" -> 127.0.0.1.
absl::Status ParseWhatwgIpv4(absl::string_view host, uint32_t* address) {
  std::array<uint64_t, 4> numbers{};
  size_t count = 0;
  size_t start = 0;
  while (true) {
    size_t dot = host.find('.', start);
    if (dot == absl::string_view::npos) dot = host.size();
    const absl::string_view part = host.substr(start, dot - start);
    if (part.empty()) return Invalid("host", "empty part in IPv4 address");
    if (count == numbers.size()) {
      return Invalid("host", "IPv4 address has more than 4 parts");
    }
    if (!ParseIpv4Number(part, &numbers[count])) {
      return Invalid(
          "host", absl::StrCat("IPv4 part ", Quote(part), " is not a number"));
    }
    ++count;
    if (dot == host.size()) break;
    start = dot + 1;
  }
  for (size_t i = 0; i + 1 < count; ++i) {
    if (numbers[i] > 255) {
      return Invalid("host", "IPv4 address part out of range (max 255)");
    }
  }
  const uint64_t limit = uint64_t{1} << (8 * (5 - count));
  if (numbers[count - 1] >= limit) {
    return Invalid("host", "IPv4 address out of range");
  }
  uint64_t v = numbers[count - 1];
  for (size_t i = 0; i + 1 < count; ++i) v += numbers[i] << (8 * (3 - i));
  *address = static_cast<uint32_t>(v);
  return absl::OkStatus();
}

void AppendIpv4(uint32_t a, std::string* out) {
  for (int shift = 24; shift >= 0; shift -= 8) {
    absl::StrAppend(out, (a >> shift) & 0xFF);
    if (shift != 0) out->push_back('.');
  }
}

// AppendIpv6 appends the RFC 5952 text of `addr` in brackets: lowercase hex
// without leading zeros, the longest run (first on a tie) of two or more zero
// fields as "::". IPv4-mapped addresses keep Boost.URL's "::ffff:a.b.c.d".
void AppendIpv6(const urls::ipv6_address& addr, std::string* out) {
  out->push_back('[');
  if (addr.is_v4_mapped()) {
    char buf[urls::ipv6_address::max_str_len];
    const urls::string_view text = addr.to_buffer(buf, sizeof(buf));
    out->append(text.data(), text.size());
    out->push_back(']');
    return;
  }
  const auto bytes = addr.to_bytes();
  std::array<unsigned, 8> field{};
  for (size_t i = 0; i < 8; ++i)
    field[i] = bytes[2 * i] * 256u + bytes[2 * i + 1];
  size_t best = 8, best_len = 0;
  for (size_t i = 0; i < 8;) {
    if (field[i] != 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < 8 && field[j] == 0) ++j;
    if (j - i > best_len) {
      best = i;
      best_len = j - i;
    }
    i = j;
  }
  if (best_len < 2) best = 8;
  for (size_t i = 0; i < 8;) {
    if (i == best) {
      out->append("::");
      i += best_len;
      continue;
    }
    if (i != 0 && i != best + best_len) out->push_back(':');
    char hex[4];
    int n = 0;
    unsigned v = field[i];
    do {
      hex[n++] = "0123456789abcdef"[v & 0xF];
      v >>= 4;
    } while (v != 0);
    while (n > 0) out->push_back(hex[--n]);
    ++i;
  }
  out->push_back(']');
}

// ValidateAsciiHost checks the final reg-name: host characters only, no
// empty label, labels of at most 63 bytes (RFC 1035), at most kMaxHostBytes.
absl::Status ValidateAsciiHost(absl::string_view host) {
  if (host.empty()) return Invalid("host", "empty host");
  if (host.size() > UrlNormalizer::kMaxHostBytes) {
    return Invalid("host", absl::StrCat("host is ", host.size(),
                                        " bytes, over the limit of ",
                                        UrlNormalizer::kMaxHostBytes));
  }
  size_t label_start = 0;
  for (size_t i = 0; i <= host.size(); ++i) {
    if (i == host.size() || host[i] == '.') {
      if (i == label_start) {
        return Invalid("host", absl::StrCat("empty label in ", Quote(host)));
      }
      if (i - label_start > 63) {
        return Invalid("host", absl::StrCat("label of ", i - label_start,
                                            " bytes, over the limit of 63"));
      }
      label_start = i + 1;
      continue;
    }
    if (!IsHostByte(host[i])) {
      return Invalid(
          "host", absl::StrCat("invalid character ", Quote(host.substr(i, 1)),
                               " in ", Quote(host)));
    }
  }
  return absl::OkStatus();
}

bool HasXnLabel(absl::string_view host) {
  size_t start = 0;
  while (start < host.size()) {
    if (host.size() - start >= 4 && host.compare(start, 4, "xn--") == 0) {
      return true;
    }
    const size_t dot = host.find('.', start);
    if (dot == absl::string_view::npos) break;
    start = dot + 1;
  }
  return false;
}

// NormalizeRegName turns a reg-name into the canonical ASCII host in
// `host`: percent-decoded, lowercased, IDNA2008/UTS #46 to punycode, one
// trailing dot dropped, WHATWG IPv4 forms to dotted decimal, validated.
absl::Status NormalizeRegName(absl::string_view encoded, std::string* host,
                              FiredRules* fired) {
  bool had_escape = false;
  if (encoded.find('%') == absl::string_view::npos) {
    host->assign(encoded.data(), encoded.size());
  } else {
    host->clear();
    for (size_t i = 0; i < encoded.size(); ++i) {
      if (encoded[i] == '%' && encoded.size() - i >= 3 &&
          IsHexDigit(encoded[i + 1]) && IsHexDigit(encoded[i + 2])) {
        const char c = static_cast<char>(HexValue(encoded[i + 1]) * 16 +
                                         HexValue(encoded[i + 2]));
        // A leading digit may have been escaped by PrepareForBoost.
        had_escape |= !(i == 0 && IsAsciiDigit(c));
        host->push_back(c);
        i += 2;
      } else {
        host->push_back(encoded[i]);
      }
    }
  }
  if (host->empty()) return Invalid("URL", "missing host");
  bool non_ascii = false;
  bool lowered = false;
  for (char& ch : *host) {
    if (IsHostByte(ch)) continue;
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c >= 0x80) {
      non_ascii = true;
    } else if (c >= 'A' && c <= 'Z') {
      ch = static_cast<char>(c - 'A' + 'a');
      lowered = true;
    } else {
      // Checked before IDNA so that NUL never reaches libidn2 and the
      // message names the character.
      return Invalid(
          "host", absl::StrCat("invalid character ",
                               Quote(absl::string_view(&ch, 1)), " in host"));
    }
  }
  if (non_ascii && !IsValidUtf8(*host)) {
    return Invalid("host", "percent-decoded host is not valid UTF-8");
  }
  if (had_escape && !non_ascii)
    fired->Add(url_rules::kPercentEncodingNormalized);
  if (lowered) fired->Add(url_rules::kHostLowercased);

  if (non_ascii || HasXnLabel(*host)) {
    // UTS #46 non-transitional processing (IDNA2008 as browsers do): maps
    // case and compatibility forms, checks the contextual rules (CONTEXTJ
    // for ZWJ/ZWNJ, bidi) and validates existing A-labels.
    char* ascii = nullptr;
    const int rc =
        idn2_lookup_u8(reinterpret_cast<const uint8_t*>(host->c_str()),
                       reinterpret_cast<uint8_t**>(&ascii),
                       IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT);
    if (rc != IDN2_OK) {
      return Invalid("host", absl::StrCat("IDNA: ", idn2_strerror(rc)));
    }
    if (*host != ascii) {
      host->assign(ascii);
      fired->Add(url_rules::kHostIdnaToAscii);
    }
    idn2_free(ascii);
  }
  if (host->size() > 1 && host->back() == '.') {
    host->pop_back();
    fired->Add(url_rules::kHostTrailingDotDropped);
  }
  if (EndsInNumber(*host)) {
    uint32_t address = 0;
    DEDUPD_RETURN_IF_ERROR(ParseWhatwgIpv4(*host, &address));
    std::string dotted;
    AppendIpv4(address, &dotted);
    if (dotted != *host) fired->Add(url_rules::kIpv4Canonicalized);
    host->swap(dotted);
    return absl::OkStatus();
  }
  return ValidateAsciiHost(*host);
}

// ---------------------------------------------------------------------------
// Steps 6 and 7: percent-encoding, path, query.

// AppendNormalizedEscapes appends `in` with %XX hex uppercased and escapes
// of unreserved characters decoded. Returns whether that changed anything.
bool AppendNormalizedEscapes(absl::string_view in, std::string* out) {
  bool changed = false;
  size_t i = 0;
  while (true) {
    const size_t pct = in.find('%', i);
    if (pct == absl::string_view::npos) {
      out->append(in.data() + i, in.size() - i);
      return changed;
    }
    out->append(in.data() + i, pct - i);
    if (in.size() - pct < 3 || !IsHexDigit(in[pct + 1]) ||
        !IsHexDigit(in[pct + 2])) {
      out->push_back('%');  // unreachable after Screen; kept literal
      i = pct + 1;
      continue;
    }
    const unsigned char hi = static_cast<unsigned char>(in[pct + 1]);
    const unsigned char lo = static_cast<unsigned char>(in[pct + 2]);
    const unsigned char c =
        static_cast<unsigned char>(HexValue(hi) * 16 + HexValue(lo));
    if (IsUnreserved(c)) {
      out->push_back(static_cast<char>(c));
      changed = true;
    } else {
      const char escape[3] = {'%', kUpperHex[c >> 4], kUpperHex[c & 0xF]};
      out->append(escape, 3);
      changed |= hi != static_cast<unsigned char>(escape[1]) ||
                 lo != static_cast<unsigned char>(escape[2]);
    }
    i = pct + 3;
  }
}

// DropPathSessionIds removes ";jsessionid=..." (any case) up to the next ';'
// or '/' from every segment.
bool DropPathSessionIds(std::string* path) {
  constexpr absl::string_view kParam = "jsessionid=";
  bool changed = false;
  size_t i = 0;
  while ((i = path->find(';', i)) != std::string::npos) {
    const absl::string_view rest = absl::string_view(*path).substr(i + 1);
    if (absl::StartsWithIgnoreCase(rest, kParam)) {
      size_t end = path->find_first_of(";/", i + 1);
      if (end == std::string::npos) end = path->size();
      path->erase(i, end - i);
      changed = true;
    } else {
      ++i;
    }
  }
  return changed;
}

bool IsDotSegment(absl::string_view seg) { return seg == "." || seg == ".."; }

// RemoveDotSegments applies RFC 3986 §5.2.4 to an absolute path (starting
// with '/'), writing the result to `out`. Returns false (and leaves `out`
// alone) when there is no dot segment.
bool RemoveDotSegments(absl::string_view path, std::string* out) {
  // Fast check: a dot segment starts with "/." .
  bool any = false;
  for (size_t i = path.find("/."); i != absl::string_view::npos;
       i = path.find("/.", i + 1)) {
    size_t end = path.find('/', i + 1);
    if (end == absl::string_view::npos) end = path.size();
    if (IsDotSegment(path.substr(i + 1, end - i - 1))) {
      any = true;
      break;
    }
  }
  if (!any) return false;
  // Segments kept so far, as views of `path`; a trailing "." or ".." leaves
  // an empty last segment so that "/a/b/.." becomes "/a/".
  absl::InlinedVector<absl::string_view, 16> kept;
  for (size_t i = 0; i < path.size();) {
    size_t end = path.find('/', i + 1);
    if (end == absl::string_view::npos) end = path.size();
    const absl::string_view seg = path.substr(i + 1, end - i - 1);
    const bool last = end == path.size();
    if (seg == ".." && !kept.empty()) kept.pop_back();
    if (IsDotSegment(seg)) {
      if (last) kept.push_back(absl::string_view());
    } else {
      kept.push_back(seg);
    }
    i = end;
  }
  out->clear();
  for (const absl::string_view seg : kept) {
    out->push_back('/');
    out->append(seg.data(), seg.size());
  }
  if (out->empty()) out->push_back('/');
  return true;
}

// EqualsLower compares `s` case-insensitively with `lower`, which is
// ASCII lowercase.
inline bool EqualsLower(absl::string_view s, absl::string_view lower) {
  if (s.size() != lower.size()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (absl::ascii_tolower(static_cast<unsigned char>(s[i])) != lower[i]) {
      return false;
    }
  }
  return true;
}
inline bool StartsWithLower(absl::string_view s, absl::string_view lower) {
  return s.size() >= lower.size() &&
         EqualsLower(s.substr(0, lower.size()), lower);
}

enum class ParamVerdict { kKeep, kTracking, kSession, kPolicy, kNotAllowed };

// The built-in tracking and session-id lists. kBuiltinNames is ordered by
// length so that a lookup compares only names of the key's length.
struct BuiltinName {
  absl::string_view name;
  ParamVerdict verdict;
};
constexpr BuiltinName kBuiltinPrefixes[] = {
    {"utm_", ParamVerdict::kTracking},        {"pk_", ParamVerdict::kTracking},
    {"hsa_", ParamVerdict::kTracking},        {"mtm_", ParamVerdict::kTracking},
    {"aspsessionid", ParamVerdict::kSession},
};
constexpr BuiltinName kBuiltinNames[] = {
    {"_ga", ParamVerdict::kTracking},
    {"_gl", ParamVerdict::kTracking},
    {"sid", ParamVerdict::kSession},
    {"cfid", ParamVerdict::kSession},
    {"gclid", ParamVerdict::kTracking},
    {"dclid", ParamVerdict::kTracking},
    {"yclid", ParamVerdict::kTracking},
    {"_hsmi", ParamVerdict::kTracking},
    {"s_cid", ParamVerdict::kTracking},
    {"gclsrc", ParamVerdict::kTracking},
    {"gbraid", ParamVerdict::kTracking},
    {"wbraid", ParamVerdict::kTracking},
    {"fbclid", ParamVerdict::kTracking},
    {"mc_cid", ParamVerdict::kTracking},
    {"mc_eid", ParamVerdict::kTracking},
    {"igshid", ParamVerdict::kTracking},
    {"twclid", ParamVerdict::kTracking},
    {"ttclid", ParamVerdict::kTracking},
    {"_hsenc", ParamVerdict::kTracking},
    {"msclkid", ParamVerdict::kTracking},
    {"mkt_tok", ParamVerdict::kTracking},
    {"vero_id", ParamVerdict::kTracking},
    {"srsltid", ParamVerdict::kTracking},
    {"cftoken", ParamVerdict::kSession},
    {"wickedid", ParamVerdict::kTracking},
    {"li_fat_id", ParamVerdict::kTracking},
    {"phpsessid", ParamVerdict::kSession},
    {"sessionid", ParamVerdict::kSession},
    {"oly_enc_id", ParamVerdict::kTracking},
    {"rb_clickid", ParamVerdict::kTracking},
    {"jsessionid", ParamVerdict::kSession},
    {"session_id", ParamVerdict::kSession},
    {"oly_anon_id", ParamVerdict::kTracking},
};
constexpr size_t kNumBuiltinNames =
    sizeof(kBuiltinNames) / sizeof(kBuiltinNames[0]);
constexpr size_t kMaxBuiltinNameBytes = 11;

constexpr bool BuiltinNamesSortedByLength() {
  for (size_t i = 1; i < kNumBuiltinNames; ++i) {
    if (kBuiltinNames[i - 1].name.size() > kBuiltinNames[i].name.size())
      return false;
    if (kBuiltinNames[i].name.size() > kMaxBuiltinNameBytes) return false;
  }
  return true;
}
static_assert(BuiltinNamesSortedByLength(),
              "keep kBuiltinNames ordered by length");

// kBuiltinNameStart[n]: index of the first name of length >= n.
constexpr std::array<size_t, kMaxBuiltinNameBytes + 2> MakeBuiltinNameStart() {
  std::array<size_t, kMaxBuiltinNameBytes + 2> start{};
  for (size_t n = 0; n < start.size(); ++n) {
    size_t i = 0;
    while (i < kNumBuiltinNames && kBuiltinNames[i].name.size() < n) ++i;
    start[n] = i;
  }
  return start;
}
constexpr auto kBuiltinNameStart = MakeBuiltinNameStart();

// BuiltinVerdict classifies a decoded key against the built-in lists
// (case-insensitive).
ParamVerdict BuiltinVerdict(absl::string_view key) {
  for (const BuiltinName& n : kBuiltinPrefixes) {
    if (StartsWithLower(key, n.name)) return n.verdict;
  }
  if (key.size() > kMaxBuiltinNameBytes) return ParamVerdict::kKeep;
  for (size_t i = kBuiltinNameStart[key.size()];
       i < kBuiltinNameStart[key.size() + 1]; ++i) {
    if (EqualsLower(key, kBuiltinNames[i].name))
      return kBuiltinNames[i].verdict;
  }
  return ParamVerdict::kKeep;
}

// FullyDecode appends `in` with every %XX escape decoded.
void FullyDecode(absl::string_view in, std::string* out) {
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] == '%' && in.size() - i >= 3 && IsHexDigit(in[i + 1]) &&
        IsHexDigit(in[i + 2])) {
      out->push_back(
          static_cast<char>(HexValue(in[i + 1]) * 16 + HexValue(in[i + 2])));
      i += 2;
    } else {
      out->push_back(in[i]);
    }
  }
}

// ClassifyParam decides on a normalized key. Decisions use the fully
// decoded key, which normalization does not change, so a second pass keeps
// exactly what the first kept.
ParamVerdict ClassifyParam(absl::string_view normalized_key,
                           const UrlPolicy& policy, const HostRule* rule,
                           std::string* buf) {
  absl::string_view key = normalized_key;
  if (key.find('%') != absl::string_view::npos) {
    buf->clear();
    FullyDecode(normalized_key, buf);
    key = *buf;
  }
  const ParamVerdict builtin = BuiltinVerdict(key);
  if (builtin != ParamVerdict::kKeep) return builtin;
  for (const std::string& drop : policy.drop_params()) {
    if (EqualsLower(key, drop)) return ParamVerdict::kPolicy;
  }
  if (rule != nullptr) {
    for (const std::string& drop : rule->drop_params) {
      if (EqualsLower(key, drop)) return ParamVerdict::kPolicy;
    }
    if (!rule->allow_params.empty() &&
        std::find(rule->allow_params.begin(), rule->allow_params.end(), key) ==
            rule->allow_params.end()) {
      return ParamVerdict::kNotAllowed;
    }
  }
  return ParamVerdict::kKeep;
}

// ---------------------------------------------------------------------------

absl::StatusOr<std::string> NormalizeImpl(absl::string_view url_in,
                                          absl::string_view base_in,
                                          const UrlPolicy& policy,
                                          bool fast_parse, FiredRules& fired) {
  Scratch& scratch = GetScratch();

  // Steps 1-2: screening, then RFC 3986 parsing.
  absl::string_view text;
  bool had_fragment = false;
  DEDUPD_RETURN_IF_ERROR(Screen(url_in, "URL", &scratch.untabbed,
                                &scratch.encoded, &text, &had_fragment,
                                &fired));
  UriParts parts;
  bool absolute = fast_parse && ParseAbsoluteFast(text, &parts);
  urls::url_view ref;
  if (!absolute) {
    const urls::result<urls::url_view> parsed = urls::parse_uri_reference(
        Bv(PrepareForBoost(text, &scratch.for_boost)));
    if (!parsed) {
      return Invalid("URL", absl::StrCat("not a valid URI reference (",
                                         parsed.error().message(), ")"));
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
  // Points at scratch.cached_base. Not a url_view: Boost.URL 1.81's
  // url_view::operator=(url) leaves the view's own copy of the parts stale,
  // and url_base::copy (used by resolve) reads that copy.
  const urls::url_view_base* base = nullptr;
  if (!base_in.empty() && !absolute && base_in == scratch.cached_base_input) {
    base = &scratch.cached_base;  // screened and checked when cached
  } else if (!base_in.empty()) {
    absl::string_view base_text;
    bool base_fragment = false;
    DEDUPD_RETURN_IF_ERROR(Screen(base_in, "base URL", &scratch.base_untabbed,
                                  &scratch.base_encoded, &base_text,
                                  &base_fragment, nullptr));
    UriParts base_parts;
    if (absolute && fast_parse && ParseAbsoluteFast(base_text, &base_parts)) {
      DEDUPD_RETURN_IF_ERROR(CheckScheme(base_parts.scheme, "base URL"));
    } else {
      const urls::result<urls::url_view> parsed = urls::parse_uri(
          Bv(PrepareForBoost(base_text, &scratch.base_for_boost)));
      if (!parsed) {
        return Invalid("base URL", absl::StrCat("not an absolute URI (",
                                                parsed.error().message(), ")"));
      }
      DEDUPD_RETURN_IF_ERROR(CheckScheme(Sv(parsed->scheme()), "base URL"));
      DEDUPD_RETURN_IF_ERROR(CheckAuthorityEnd(*parsed, "base URL"));
      scratch.cached_base_input.clear();  // in case the copy throws
      scratch.cached_base = *parsed;
      scratch.cached_base_input.assign(base_in.data(), base_in.size());
      base = &scratch.cached_base;
    }
  }
  if (!absolute) {
    if (base_in.empty()) return Invalid("URL", "relative URL and no base URL");
    // RFC 3986 §5.2; may throw on allocation (caught in Normalize).
    const urls::result<void> r = urls::resolve(*base, ref, scratch.resolved);
    if (!r) {
      return Invalid("URL", absl::StrCat("cannot resolve against base URL (",
                                         r.error().message(), ")"));
    }
    parts = PartsOf(scratch.resolved);
    fired.Add(url_rules::kResolvedAgainstBase);
  }

  // Step 3: scheme.
  DEDUPD_RETURN_IF_ERROR(CheckScheme(parts.scheme, "URL"));
  const bool https = parts.scheme.size() == 5;
  if (parts.scheme != (https ? "https" : "http")) {
    fired.Add(url_rules::kSchemeLowercased);
  }

  // Step 4: userinfo and host.
  if (!parts.has_authority) return Invalid("URL", "missing host");
  if (parts.has_userinfo) fired.Add(url_rules::kUserinfoDropped);
  std::string& host = scratch.host;
  switch (parts.host_kind) {
    case HostKind::kIpv6:
      host.clear();
      AppendIpv6(parts.ipv6, &host);
      if (host != parts.host) fired.Add(url_rules::kIpv6Canonicalized);
      break;
    case HostKind::kIpvFuture:
      return Invalid("host",
                     absl::StrCat("IPvFuture address ", Quote(parts.host),
                                  " is not supported"));
    case HostKind::kName:
      DEDUPD_RETURN_IF_ERROR(NormalizeRegName(parts.host, &host, &fired));
      break;
  }

  // Step 5: port.
  absl::string_view port;
  if (parts.has_port) {
    if (parts.port.empty()) {
      fired.Add(url_rules::kEmptyPortDropped);
    } else {
      // port = *DIGIT (RFC 3986): only the range needs checking.
      const size_t digits = parts.port.find_first_not_of('0');
      const absl::string_view number =
          digits == absl::string_view::npos
              ? parts.port.substr(parts.port.size() - 1)
              : parts.port.substr(digits);
      uint32_t value = 0;
      for (size_t i = 0; i < number.size() && value <= 65535; ++i) {
        if (!IsAsciiDigit(number[i])) {
          return Invalid("URL", absl::StrCat("port ", Quote(parts.port),
                                             " is not a number"));
        }
        value = value * 10 + (number[i] - '0');
      }
      if (value > 65535) {
        return Invalid("URL", absl::StrCat("port ", Quote(parts.port),
                                           " is out of range (max 65535)"));
      }
      if (value == (https ? 443u : 80u)) {
        fired.Add(url_rules::kDefaultPortDropped);
      } else {
        if (number.size() != parts.port.size()) {
          fired.Add(url_rules::kPortLeadingZerosDropped);
        }
        port = number;
      }
    }
  }

  const HostRule* rule = policy.Find(host);

  // Step 6: path. Escapes first, so that ";%6Asessionid=" and "%2E%2E" are
  // seen as what they are; session ids before dot segments, so that
  // "/a/..;jsessionid=1/b" does not leave a ".." for a second pass.
  std::string& path = scratch.path;
  path.clear();
  if (AppendNormalizedEscapes(parts.path, &path)) {
    fired.Add(url_rules::kPercentEncodingNormalized);
  }
  if (path.find(';') != std::string::npos && DropPathSessionIds(&path)) {
    fired.Add(url_rules::kPathSessionIdDropped);
  }
  if (RemoveDotSegments(path, &scratch.path_tmp)) {
    path.swap(scratch.path_tmp);
    fired.Add(url_rules::kDotSegmentsRemoved);
  }
  if (path.empty()) {
    path.push_back('/');
    fired.Add(url_rules::kEmptyPathSetToSlash);
  }
  if (rule != nullptr && rule->case_insensitive_path) {
    bool lowered = false;
    for (size_t i = 0; i < path.size(); ++i) {
      if (path[i] == '%') {
        i += 2;  // keep the escape's hex uppercase
      } else if (path[i] >= 'A' && path[i] <= 'Z') {
        path[i] = static_cast<char>(path[i] - 'A' + 'a');
        lowered = true;
      }
    }
    if (lowered) fired.Add(url_rules::kPathLowercased);
  }
  const TrailingSlash slash =
      rule != nullptr ? rule->trailing_slash : TrailingSlash::kStrip;
  if (slash == TrailingSlash::kStrip) {
    size_t keep = path.size();
    while (keep > 1 && path[keep - 1] == '/') --keep;
    if (keep != path.size()) {
      path.resize(keep);
      fired.Add(url_rules::kTrailingSlashStripped);
    }
  } else if (slash == TrailingSlash::kAdd && path.back() != '/') {
    const size_t last = path.rfind('/');
    if (path.find('.', last) == std::string::npos) {
      path.push_back('/');
      fired.Add(url_rules::kTrailingSlashAdded);
    }
  }

  // Step 7: query.
  std::string& query = scratch.query;
  query.clear();
  std::vector<Param>& params = scratch.params;
  params.clear();
  bool tracking = false, session = false, by_policy = false,
       not_allowed = false, empty_param = false, escapes = false;
  const absl::string_view q = parts.query;
  if (!q.empty()) {  // a bare '?' has no parameters, not one empty one
    size_t start = 0;
    while (start <= q.size()) {
      size_t amp = q.find('&', start);
      if (amp == absl::string_view::npos) amp = q.size();
      const absl::string_view piece = q.substr(start, amp - start);
      start = amp + 1;
      if (piece.empty()) {
        empty_param = true;
        continue;
      }
      const size_t offset = query.size();
      const bool piece_escapes = AppendNormalizedEscapes(piece, &query);
      const absl::string_view normalized =
          absl::string_view(query).substr(offset);
      const size_t eq = normalized.find('=');
      const size_t key_size =
          eq == absl::string_view::npos ? normalized.size() : eq;
      switch (ClassifyParam(normalized.substr(0, key_size), policy, rule,
                            &scratch.key)) {
        case ParamVerdict::kKeep:
          escapes |= piece_escapes;
          params.push_back(Param{static_cast<uint32_t>(offset),
                                 static_cast<uint32_t>(normalized.size()),
                                 static_cast<uint32_t>(key_size)});
          continue;
        case ParamVerdict::kTracking:
          tracking = true;
          break;
        case ParamVerdict::kSession:
          session = true;
          break;
        case ParamVerdict::kPolicy:
          by_policy = true;
          break;
        case ParamVerdict::kNotAllowed:
          not_allowed = true;
          break;
      }
      query.resize(offset);  // dropped
    }
  }
  if (escapes) fired.Add(url_rules::kPercentEncodingNormalized);
  if (tracking) fired.Add(url_rules::kTrackingParamsDropped);
  if (session) fired.Add(url_rules::kSessionParamsDropped);
  if (by_policy) fired.Add(url_rules::kPolicyParamsDropped);
  if (not_allowed) fired.Add(url_rules::kParamsNotAllowlistedDropped);
  if (empty_param) fired.Add(url_rules::kEmptyParamsDropped);

  // Stable sort by the normalized key, bytewise.
  auto key_of = [&](uint32_t i) {
    return absl::string_view(query).substr(params[i].offset,
                                           params[i].key_size);
  };
  auto by_key = [&](uint32_t a, uint32_t b) { return key_of(a) < key_of(b); };
  std::vector<uint32_t>& order = scratch.order;
  order.clear();
  for (uint32_t i = 0; i < params.size(); ++i) order.push_back(i);
  if (!std::is_sorted(order.begin(), order.end(), by_key)) {
    std::stable_sort(order.begin(), order.end(), by_key);
    fired.Add(url_rules::kParamsSorted);
  }
  if (parts.has_query && params.empty())
    fired.Add(url_rules::kEmptyQueryDropped);
  if (had_fragment) fired.Add(url_rules::kFragmentDropped);

  // Output: scheme://host[:port]path[?query]
  size_t size = (https ? 8 : 7) + host.size() + path.size();
  if (!port.empty()) size += 1 + port.size();
  for (const Param& p : params) size += 1 + p.size;
  std::string out;
  out.reserve(size);
  out.append(https ? "https://" : "http://");
  out.append(host);
  if (!port.empty()) {
    out.push_back(':');
    out.append(port.data(), port.size());
  }
  out.append(path);
  for (size_t i = 0; i < order.size(); ++i) {
    const Param& p = params[order[i]];
    out.push_back(i == 0 ? '?' : '&');
    out.append(query, p.offset, p.size);
  }
  return out;
}

}  // namespace

UrlNormalizer::UrlNormalizer(UrlPolicy policy) : policy_(std::move(policy)) {}

absl::StatusOr<std::string> UrlNormalizer::Normalize(
    absl::string_view url, absl::string_view base,
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
