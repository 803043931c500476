#include "client/json.h"

#include <cstddef>
#include <utility>

namespace dedupd {
namespace {

constexpr char kHex[] = "0123456789abcdef";

void AppendU00(unsigned char c, std::string* out) {
  out->append("\\u00");
  out->push_back(kHex[c >> 4]);
  out->push_back(kHex[c & 0xF]);
}

// Length of the well-formed UTF-8 sequence starting at s[i], or 0 when the
// byte at i does not start one. Follows the table of well-formed byte
// sequences in Unicode 15, section 3.9 (Table 3-7): it rejects overlong
// forms, surrogates (U+D800..U+DFFF) and code points above U+10FFFF.
size_t Utf8SequenceLength(absl::string_view s, size_t i) {
  const auto byte = [&](size_t k) -> unsigned {
    return static_cast<unsigned char>(s[k]);
  };
  const auto in = [&](size_t k, unsigned lo, unsigned hi) {
    return k < s.size() && byte(k) >= lo && byte(k) <= hi;
  };
  const unsigned b0 = byte(i);
  if (b0 < 0x80) return 1;
  if (b0 >= 0xC2 && b0 <= 0xDF) return in(i + 1, 0x80, 0xBF) ? 2 : 0;
  if (b0 >= 0xE0 && b0 <= 0xEF) {
    const unsigned lo = b0 == 0xE0 ? 0xA0 : 0x80;  // no overlongs
    const unsigned hi = b0 == 0xED ? 0x9F : 0xBF;  // no surrogates
    return in(i + 1, lo, hi) && in(i + 2, 0x80, 0xBF) ? 3 : 0;
  }
  if (b0 >= 0xF0 && b0 <= 0xF4) {
    const unsigned lo = b0 == 0xF0 ? 0x90 : 0x80;  // no overlongs
    const unsigned hi = b0 == 0xF4 ? 0x8F : 0xBF;  // <= U+10FFFF
    return in(i + 1, lo, hi) && in(i + 2, 0x80, 0xBF) && in(i + 3, 0x80, 0xBF)
               ? 4
               : 0;
  }
  return 0;  // 0x80..0xC1 (continuation or overlong lead), 0xF5..0xFF
}

}  // namespace

void AppendJsonString(absl::string_view s, std::string* out) {
  out->reserve(out->size() + s.size() + 2);
  out->push_back('"');
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      switch (c) {
        case '"':
          out->append("\\\"");
          break;
        case '\\':
          out->append("\\\\");
          break;
        case '\b':
          out->append("\\b");
          break;
        case '\f':
          out->append("\\f");
          break;
        case '\n':
          out->append("\\n");
          break;
        case '\r':
          out->append("\\r");
          break;
        case '\t':
          out->append("\\t");
          break;
        default:
          if (c < 0x20 || c == 0x7F) {
            AppendU00(c, out);
          } else {
            out->push_back(static_cast<char>(c));
          }
      }
      ++i;
      continue;
    }
    const size_t n = Utf8SequenceLength(s, i);
    if (n == 0) {
      // One replacement per bad byte: simple to state, and the count of
      // bad bytes stays visible.
      out->append("\\ufffd");
      ++i;
      continue;
    }
    // U+2028 LINE SEPARATOR and U+2029 PARAGRAPH SEPARATOR are E2 80 A8/A9.
    if (n == 3 && c == 0xE2 && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
        (static_cast<unsigned char>(s[i + 2]) & 0xFE) == 0xA8) {
      out->append(static_cast<unsigned char>(s[i + 2]) == 0xA8 ? "\\u2028"
                                                               : "\\u2029");
    } else {
      out->append(s.data() + i, n);
    }
    i += n;
  }
  out->push_back('"');
}

std::string JsonString(absl::string_view s) {
  std::string out;
  AppendJsonString(s, &out);
  return out;
}

void JsonObjectWriter::Key(absl::string_view key) {
  if (!empty_) json_.push_back(',');
  empty_ = false;
  AppendJsonString(key, &json_);
  json_.push_back(':');
}

JsonObjectWriter& JsonObjectWriter::String(absl::string_view key,
                                           absl::string_view value) {
  Key(key);
  AppendJsonString(value, &json_);
  return *this;
}

JsonObjectWriter& JsonObjectWriter::StringArray(
    absl::string_view key, absl::Span<const absl::string_view> values) {
  Key(key);
  json_.push_back('[');
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) json_.push_back(',');
    AppendJsonString(values[i], &json_);
  }
  json_.push_back(']');
  return *this;
}

std::string JsonObjectWriter::Finish() && {
  json_.push_back('}');
  return std::move(json_);
}

}  // namespace dedupd
