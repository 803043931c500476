// url_chars.h: INTERNAL to core/url (not part of the public API; include
// url_normalizer.h instead). The byte classes of RFC 3986 that every stage of
// the URL normalizer tests, per character: all inline and constexpr, so that
// no per-character loop calls across translation units.
//
// Example:
//   using url_internal::HexValue;
//   if (url_internal::IsHexDigit(hi) && url_internal::IsHexDigit(lo))
//     c = HexValue(hi) * 16 + HexValue(lo);
#ifndef DEDUPD_CORE_URL_URL_CHARS_H_
#define DEDUPD_CORE_URL_URL_CHARS_H_

#include <array>
#include <cstdint>

namespace dedupd {
namespace url_internal {

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
inline constexpr char kUpperHex[] = "0123456789ABCDEF";

// RFC 3986 §2.3 unreserved: decoded wherever they appear percent-encoded.
constexpr bool IsUnreserved(unsigned char c) {
  return IsAsciiAlpha(c) || IsAsciiDigit(c) || c == '-' || c == '.' || c == '_' || c == '~';
}
constexpr bool IsSubDelim(unsigned char c) {
  return c == '!' || c == '$' || c == '&' || c == '\'' || c == '(' || c == ')' || c == '*' ||
         c == '+' || c == ',' || c == ';' || c == '=';
}

// Bytes that cannot appear in an RFC 3986 URI but that real links contain;
// they are percent-encoded before parsing (as browsers do when they send
// such a link).
constexpr bool MustEncode(unsigned char c) {
  return c >= 0x80 || c == ' ' || c == '"' || c == '<' || c == '>' || c == '\\' || c == '^' ||
         c == '`' || c == '{' || c == '|' || c == '}';
}

// Characters of an ASCII host: letters, digits, '-', '_' (seen in real host
// names although RFC 952 forbids it) and the label separator.
constexpr bool IsHostChar(unsigned char c) {
  return (c >= 'a' && c <= 'z') || IsAsciiDigit(c) || c == '-' || c == '_' || c == '.';
}

// Byte classes for the single screening pass (steps 1-2).
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
    if (IsUnreserved(c) || IsSubDelim(c) || c == ':' || c == '@' || c == '/' || c == '?') {
      r |= kRfcPathQuery;
    }
    if (IsHostChar(c)) r |= kRfcHost;
    t.rfc[i] = r;
  }
  return t;
}
inline constexpr ByteTables kTables = MakeByteTables();

inline uint8_t RfcClass(char c) { return kTables.rfc[static_cast<unsigned char>(c)]; }
inline bool IsHostByte(char c) { return (RfcClass(c) & kRfcHost) != 0; }

}  // namespace url_internal
}  // namespace dedupd

#endif  // DEDUPD_CORE_URL_URL_CHARS_H_
