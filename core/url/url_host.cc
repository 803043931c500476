// url_host.cc: step 4 of the URL normalizer; see url_host.h.
#include "core/url/url_host.h"

#include <idn2.h>

#include <algorithm>
#include <array>
#include <boost/url/ipv6_address.hpp>
#include <cstdint>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "core/text/utf8.h"
#include "core/url/url_chars.h"
#include "core/url/url_normalizer.h"

namespace dedupd {
namespace url_internal {

namespace {

namespace urls = boost::urls;

// ParseIpv4Number parses one part of a WHATWG IPv4 address: 0x/0X hex, a
// leading 0 octal, else decimal. Values above 2^32 saturate (they are out of
// range for every position). Returns false on a digit outside the radix.
bool ParseIpv4Number(absl::string_view part, uint64_t* value) {
  int radix = 10;
  if (part.size() >= 2 && part[0] == '0' && (part[1] == 'x' || part[1] == 'X')) {
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
  const absl::string_view last = dot == absl::string_view::npos ? host : host.substr(dot + 1);
  if (last.empty()) return false;
  if (std::all_of(last.begin(), last.end(), [](char c) { return IsAsciiDigit(c); })) {
    return true;
  }
  if (last.size() >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X')) {
    return std::all_of(last.begin() + 2, last.end(), [](char c) { return IsHexDigit(c); });
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
      return Invalid("host", absl::StrCat("IPv4 part ", Quote(part), " is not a number"));
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
  for (size_t i = 0; i < 8; ++i) field[i] = bytes[2 * i] * 256u + bytes[2 * i + 1];
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
    return Invalid("host", absl::StrCat("host is ", host.size(), " bytes, over the limit of ",
                                        UrlNormalizer::kMaxHostBytes));
  }
  size_t label_start = 0;
  for (size_t i = 0; i <= host.size(); ++i) {
    if (i == host.size() || host[i] == '.') {
      if (i == label_start) {
        return Invalid("host", absl::StrCat("empty label in ", Quote(host)));
      }
      if (i - label_start > 63) {
        return Invalid("host",
                       absl::StrCat("label of ", i - label_start, " bytes, over the limit of 63"));
      }
      label_start = i + 1;
      continue;
    }
    if (!IsHostByte(host[i])) {
      return Invalid("host", absl::StrCat("invalid character ", Quote(host.substr(i, 1)), " in ",
                                          Quote(host)));
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
absl::Status NormalizeRegName(absl::string_view encoded, std::string* host, FiredRules* fired) {
  bool had_escape = false;
  if (encoded.find('%') == absl::string_view::npos) {
    host->assign(encoded.data(), encoded.size());
  } else {
    host->clear();
    for (size_t i = 0; i < encoded.size(); ++i) {
      if (encoded[i] == '%' && encoded.size() - i >= 3 && IsHexDigit(encoded[i + 1]) &&
          IsHexDigit(encoded[i + 2])) {
        const char c = static_cast<char>(HexValue(encoded[i + 1]) * 16 + HexValue(encoded[i + 2]));
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
          "host", absl::StrCat("invalid character ", Quote(absl::string_view(&ch, 1)), " in host"));
    }
  }
  if (non_ascii && !IsValidUtf8(*host)) {
    return Invalid("host", "percent-decoded host is not valid UTF-8");
  }
  if (had_escape && !non_ascii) fired->Add(url_rules::kPercentEncodingNormalized);
  if (lowered) fired->Add(url_rules::kHostLowercased);

  if (non_ascii || HasXnLabel(*host)) {
    // UTS #46 non-transitional processing (IDNA2008 as browsers do): maps
    // case and compatibility forms, checks the contextual rules (CONTEXTJ
    // for ZWJ/ZWNJ, bidi) and validates existing A-labels.
    char* ascii = nullptr;
    const int rc =
        idn2_lookup_u8(reinterpret_cast<const uint8_t*>(host->c_str()),
                       reinterpret_cast<uint8_t**>(&ascii), IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT);
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

}  // namespace

absl::Status NormalizeHost(const UriParts& parts, std::string* host_out, FiredRules* fired) {
  std::string& host = *host_out;
  switch (parts.host_kind) {
    case HostKind::kIpv6:
      host.clear();
      AppendIpv6(parts.ipv6, &host);
      if (host != parts.host) fired->Add(url_rules::kIpv6Canonicalized);
      break;
    case HostKind::kIpvFuture:
      return Invalid("host",
                     absl::StrCat("IPvFuture address ", Quote(parts.host), " is not supported"));
    case HostKind::kName:
      DEDUPD_RETURN_IF_ERROR(NormalizeRegName(parts.host, &host, fired));
      break;
  }

  return absl::OkStatus();
}

}  // namespace url_internal
}  // namespace dedupd
