// url_screen.cc: steps 1 and 2 of the URL normalizer; see url_screen.h.
#include "core/url/url_screen.h"

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/text/utf8.h"
#include "core/url/url_chars.h"
#include "core/url/url_normalizer.h"

namespace dedupd {
namespace url_internal {

AuthoritySpan FindAuthority(absl::string_view s) {
  size_t rest = 0;
  if (!s.empty() && IsAsciiAlpha(s[0])) {
    size_t i = 1;
    while (i < s.size() && (IsAsciiAlpha(s[i]) || IsAsciiDigit(s[i]) || s[i] == '+' ||
                            s[i] == '-' || s[i] == '.')) {
      ++i;
    }
    if (i < s.size() && s[i] == ':') rest = i + 1;
  }
  if (s.substr(rest, 2) != "//") return AuthoritySpan{rest, rest};
  size_t end = s.find_first_of("/?", rest + 2);
  if (end == absl::string_view::npos) end = s.size();
  const size_t at = s.substr(0, end).rfind('@');
  const size_t host_begin = at != absl::string_view::npos && at >= rest + 2 ? at + 1 : rest + 2;
  return AuthoritySpan{host_begin, end};
}

namespace {

absl::Status ControlCharError(absl::string_view what, unsigned char c, size_t offset) {
  if (c == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " contains a NUL byte (byte offset ", offset, ")"));
  }
  return absl::InvalidArgumentError(
      absl::StrCat(what, " contains control character 0x", absl::string_view(&kUpperHex[c >> 4], 1),
                   absl::string_view(&kUpperHex[c & 0xF], 1), " (byte offset ", offset, ")"));
}

// CleanUp is Screen's slow path for the trimmed input `s`: removes TAB/CR/LF
// (when `has_tabs`), cuts the fragment and percent-encodes what must be.
absl::Status CleanUp(absl::string_view s, bool has_tabs, std::string* untabbed,
                     std::string* encoded, absl::string_view* out, bool* had_fragment,
                     FiredRules* fired) {
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
      return i + 2 >= s.size() || !IsHexDigit(s[i + 1]) || !IsHexDigit(s[i + 2]);
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

}  // namespace

absl::Status Screen(absl::string_view in, absl::string_view what, std::string* untabbed,
                    std::string* encoded, absl::string_view* out, bool* had_fragment,
                    FiredRules* fired) {
  if (in.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " is empty"));
  if (in.size() > UrlNormalizer::kMaxUrlBytes) {
    return absl::InvalidArgumentError(absl::StrCat(what, " is ", in.size(),
                                                   " bytes, over the limit of ",
                                                   UrlNormalizer::kMaxUrlBytes, " bytes"));
  }
  // WHATWG URL: strip leading and trailing C0 control or space -- except
  // NUL, which is an error anywhere: a NUL in a link is a sign of corrupt
  // extraction, not of stray whitespace.
  auto trimmable = [](char c) { return c != '\0' && static_cast<unsigned char>(c) <= 0x20; };
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
    while (e - i >= 8 &&
           (table[p[i]] | table[p[i + 1]] | table[p[i + 2]] | table[p[i + 3]] | table[p[i + 4]] |
            table[p[i + 5]] | table[p[i + 6]] | table[p[i + 7]]) == 0) {
      i += 8;
    }
    if (i == e) break;
    const uint8_t cls = table[p[i]];
    if (cls == 0) continue;
    if (cls & kScreenHigh) {
      const size_t len = Utf8SequenceLength(p + i, e - i);
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
    return absl::InvalidArgumentError(absl::StrCat(what, " is empty after trimming whitespace"));
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

  return CleanUp(in.substr(b, e - b), has_tabs, untabbed, encoded, out, had_fragment, fired);
}

}  // namespace url_internal
}  // namespace dedupd
