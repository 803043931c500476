#include "client/json.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "core/text/utf8.h"

namespace dedupd {
namespace {

constexpr char kHex[] = "0123456789abcdef";

void AppendU00(unsigned char c, std::string* out) {
  out->append("\\u00");
  out->push_back(kHex[c >> 4]);
  out->push_back(kHex[c & 0xF]);
}

// Length of the well-formed UTF-8 sequence starting at s[i], or 0 when the
// byte at i does not start one (core/text/utf8.h: Unicode Table 3-7).
size_t SequenceAt(absl::string_view s, size_t i) {
  return Utf8SequenceLength(reinterpret_cast<const unsigned char*>(s.data()) + i, s.size() - i);
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
    const size_t n = SequenceAt(s, i);
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
      out->append(static_cast<unsigned char>(s[i + 2]) == 0xA8 ? "\\u2028" : "\\u2029");
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

JsonObjectWriter& JsonObjectWriter::String(absl::string_view key, absl::string_view value) {
  Key(key);
  AppendJsonString(value, &json_);
  return *this;
}

JsonObjectWriter& JsonObjectWriter::StringArray(absl::string_view key,
                                                absl::Span<const absl::string_view> values) {
  Key(key);
  json_.push_back('[');
  for (size_t i = 0; i < values.size(); ++i) {
    if (i > 0) json_.push_back(',');
    AppendJsonString(values[i], &json_);
  }
  json_.push_back(']');
  return *this;
}

JsonObjectWriter& JsonObjectWriter::Int(absl::string_view key, int64_t value) {
  Key(key);
  absl::StrAppend(&json_, value);
  return *this;
}

JsonObjectWriter& JsonObjectWriter::Uint(absl::string_view key, uint64_t value) {
  Key(key);
  absl::StrAppend(&json_, value);
  return *this;
}

JsonObjectWriter& JsonObjectWriter::Bool(absl::string_view key, bool value) {
  Key(key);
  json_.append(value ? "true" : "false");
  return *this;
}

JsonObjectWriter& JsonObjectWriter::Null(absl::string_view key) {
  Key(key);
  json_.append("null");
  return *this;
}

JsonObjectWriter& JsonObjectWriter::RawArray(absl::string_view key,
                                             absl::Span<const std::string> json_values) {
  Key(key);
  json_.push_back('[');
  for (size_t i = 0; i < json_values.size(); ++i) {
    if (i > 0) json_.push_back(',');
    json_.append(json_values[i]);
  }
  json_.push_back(']');
  return *this;
}

std::string JsonObjectWriter::Finish() && {
  json_.push_back('}');
  return std::move(json_);
}

// ---------------------------------------------------------------- reader

namespace {

// JsonParser: a hand-written recursive-descent parser (RFC 8259 grammar)
// for the flat objects of ParseJsonFlatObject and the trees of
// ParseJsonValue. One instance per call; every error names the byte offset
// where it was found (error_offset()).
class JsonParser {
 public:
  explicit JsonParser(absl::string_view in) : in_(in) {}

  size_t error_offset() const { return error_offset_; }

  absl::StatusOr<JsonFlatObject> Parse() {
    JsonFlatObject object;
    SkipSpace();
    if (!Consume('{')) return Error("expected '{'");
    SkipSpace();
    if (!Consume('}')) {
      while (true) {
        SkipSpace();
        const size_t key_at = pos_;
        std::string key;
        if (Peek() != '"') return Error("expected a member name string");
        if (absl::Status s = ParseString(&key); !s.ok()) return s;
        SkipSpace();
        if (!Consume(':')) return Error("expected ':'");
        SkipSpace();
        JsonScalar value;
        if (absl::Status s = ParseValue(&value); !s.ok()) return s;
        if (!object.emplace(std::move(key), std::move(value)).second) {
          return ErrorAt(key_at, "duplicate member name");
        }
        SkipSpace();
        if (Consume(',')) continue;
        if (Consume('}')) break;
        return Error("expected ',' or '}'");
      }
    }
    SkipSpace();
    if (pos_ != in_.size()) return Error("unexpected data after the object");
    return object;
  }

 private:
  // -1 at the end of the input.
  int Peek() const { return pos_ < in_.size() ? static_cast<unsigned char>(in_[pos_]) : -1; }
  bool Consume(char c) {
    if (Peek() != static_cast<unsigned char>(c)) return false;
    ++pos_;
    return true;
  }
  void SkipSpace() {
    while (pos_ < in_.size() &&
           (in_[pos_] == ' ' || in_[pos_] == '\t' || in_[pos_] == '\n' || in_[pos_] == '\r')) {
      ++pos_;
    }
  }
  absl::Status ErrorAt(size_t at, absl::string_view what) {
    error_offset_ = at;
    return absl::InvalidArgumentError(absl::StrCat("at byte ", at, ": ", what));
  }
  absl::Status Error(absl::string_view what) {
    if (pos_ < in_.size()) return ErrorAt(pos_, what);
    return ErrorAt(pos_, absl::StrCat(what, " (end of input)"));
  }

  absl::Status ParseValue(JsonScalar* value) {
    const int c = Peek();
    if (c == '"') {
      value->type = JsonScalar::Type::kString;
      return ParseString(&value->string);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      // The grammar first (one set of errors for both kinds); then a
      // number without fraction or exponent is read again as an integer,
      // which keeps all 64 bits a double would round.
      const size_t start = pos_;
      value->type = JsonScalar::Type::kNumber;
      if (absl::Status s = ParseNumber(&value->number); !s.ok()) return s;
      if (in_.substr(start, pos_ - start).find_first_of(".eE") != absl::string_view::npos) {
        return absl::OkStatus();
      }
      pos_ = start;
      value->type = JsonScalar::Type::kInteger;
      value->number = 0;
      return ParseInteger(&value->integer);
    }
    if (in_.substr(pos_, 4) == "null") {
      pos_ += 4;
      value->type = JsonScalar::Type::kNull;
      return absl::OkStatus();
    }
    if (c == '{' || c == '[' || c == 't' || c == 'f') {
      return Error("only string, number and null values are supported");
    }
    return Error("expected a value");
  }

  // -?(0|[1-9][0-9]*), within int64.
  // REQUIRES: no fraction or exponent follows (ParseValue checked).
  absl::Status ParseInteger(int64_t* out) {
    const size_t start = pos_;
    const bool negative = Consume('-');
    if (Peek() < '0' || Peek() > '9') return Error("expected a digit");
    // Accumulate the magnitude as unsigned: -2^63 fits, 2^63 does not.
    const uint64_t limit =
        negative ? uint64_t{1} << 63 : static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
    uint64_t magnitude = 0;
    if (Consume('0')) {
      if (Peek() >= '0' && Peek() <= '9') {
        return Error("leading zeros are not allowed");
      }
    } else {
      while (Peek() >= '0' && Peek() <= '9') {
        const uint64_t digit = static_cast<uint64_t>(Peek() - '0');
        if (magnitude > (limit - digit) / 10) {
          return ErrorAt(start, "integer out of the 64-bit range");
        }
        magnitude = magnitude * 10 + digit;
        ++pos_;
      }
    }
    *out = negative ? static_cast<int64_t>(0 - magnitude) : static_cast<int64_t>(magnitude);
    return absl::OkStatus();
  }

  // Four hex digits after "\u"; -1 when they are not.
  int Hex4() {
    if (in_.size() - pos_ < 4) return -1;
    int v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = in_[pos_ + i];
      int d;
      if (c >= '0' && c <= '9') {
        d = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        d = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        d = c - 'A' + 10;
      } else {
        return -1;
      }
      v = v * 16 + d;
    }
    pos_ += 4;
    return v;
  }

  // REQUIRES: cp is a scalar value (not a surrogate, at most U+10FFFF).
  static void AppendUtf8(uint32_t cp, std::string* out) {
    uint8_t bytes[U8_MAX_LENGTH];
    size_t n = 0;
    U8_APPEND_UNSAFE(bytes, n, static_cast<UChar32>(cp));
    out->append(reinterpret_cast<const char*>(bytes), n);
  }

  // REQUIRES: Peek() is the opening quote: '"', or '\'' (only ParseTree
  // lets strings be single-quoted).
  absl::Status ParseString(std::string* out) {
    const size_t open = pos_;
    const char quote = in_[pos_];
    ++pos_;
    out->clear();
    while (true) {
      if (pos_ >= in_.size()) return ErrorAt(open, "unterminated string");
      const unsigned char c = static_cast<unsigned char>(in_[pos_]);
      if (c == static_cast<unsigned char>(quote)) {
        ++pos_;
        return absl::OkStatus();
      }
      if (c < 0x20) return Error("control character in a string");
      if (c >= 0x80) {
        const size_t n = SequenceAt(in_, pos_);
        if (n == 0) return Error("invalid UTF-8 in a string");
        out->append(in_.data() + pos_, n);
        pos_ += n;
        continue;
      }
      if (c != '\\') {
        out->push_back(static_cast<char>(c));
        ++pos_;
        continue;
      }
      const size_t escape_at = pos_;
      ++pos_;
      const int e = Peek();
      ++pos_;
      switch (e) {
        case '"':
          out->push_back('"');
          break;
        case '\'':
          if (quote != '\'') return ErrorAt(escape_at, "bad escape");
          out->push_back('\'');
          break;
        case '\\':
          out->push_back('\\');
          break;
        case '/':
          out->push_back('/');
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          const int unit = Hex4();
          if (unit < 0) return ErrorAt(escape_at, "bad \\u escape");
          uint32_t cp = static_cast<uint32_t>(unit);
          if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return ErrorAt(escape_at, "lone low surrogate escape");
          }
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            // RFC 8259 section 7: a pair of escapes for one code point.
            if (in_.substr(pos_, 2) != "\\u") {
              return ErrorAt(escape_at, "high surrogate escape without a low one");
            }
            pos_ += 2;
            const int low = Hex4();
            if (low < 0xDC00 || low > 0xDFFF) {
              return ErrorAt(escape_at, "high surrogate escape without a low one");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (static_cast<uint32_t>(low) - 0xDC00);
          }
          AppendUtf8(cp, out);
          break;
        }
        default:
          return ErrorAt(escape_at, "bad escape");
      }
    }
  }

  // ParseTree parses one value of any shape at nesting `depth` (a tree's
  // strings may be single-quoted; arrays and objects may end with a comma).
  absl::Status ParseTree(JsonValue* value, int depth) {
    const int c = Peek();
    if (c == '"' || c == '\'') {
      value->type = JsonValue::Type::kString;
      return ParseString(&value->string);
    }
    if (c == '-' || (c >= '0' && c <= '9')) {
      value->type = JsonValue::Type::kNumber;
      return ParseNumber(&value->number);
    }
    if (c == '[' || c == '{') {
      if (depth >= kMaxJsonDepth) {
        return Error(absl::StrCat("nesting deeper than ", kMaxJsonDepth));
      }
      return c == '[' ? ParseArray(value, depth + 1) : ParseObject(value, depth + 1);
    }
    for (const auto& [word, type, boolean] : {std::tuple<absl::string_view, JsonValue::Type, bool>{
                                                  "null", JsonValue::Type::kNull, false},
                                              {"true", JsonValue::Type::kBool, true},
                                              {"false", JsonValue::Type::kBool, false}}) {
      if (in_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        value->type = type;
        value->boolean = boolean;
        return absl::OkStatus();
      }
    }
    return Error("unexpected token");
  }

  // REQUIRES: Peek() == '['.
  absl::Status ParseArray(JsonValue* value, int depth) {
    value->type = JsonValue::Type::kArray;
    ++pos_;
    SkipSpace();
    while (!Consume(']')) {
      JsonValue& element = value->array.emplace_back();
      if (absl::Status s = ParseTree(&element, depth); !s.ok()) return s;
      SkipSpace();
      if (Consume(']')) break;
      if (!Consume(',')) return Error("expected ',' or ']'");
      SkipSpace();  // a trailing comma: ']' next
    }
    return absl::OkStatus();
  }

  // REQUIRES: Peek() == '{'.
  absl::Status ParseObject(JsonValue* value, int depth) {
    value->type = JsonValue::Type::kObject;
    ++pos_;
    SkipSpace();
    std::vector<size_t> key_offsets;
    while (!Consume('}')) {
      if (Peek() != '"' && Peek() != '\'') {
        return Error("expected a member name string");
      }
      key_offsets.push_back(pos_);
      auto& [key, member] = value->object.emplace_back();
      if (absl::Status s = ParseString(&key); !s.ok()) return s;
      SkipSpace();
      if (!Consume(':')) return Error("expected ':'");
      SkipSpace();
      if (absl::Status s = ParseTree(&member, depth); !s.ok()) return s;
      SkipSpace();
      if (Consume('}')) break;
      if (!Consume(',')) return Error("expected ',' or '}'");
      SkipSpace();  // a trailing comma: '}' next
    }
    // Sort by name for Find; a name twice is an error at its later place.
    std::vector<size_t> order(value->object.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return value->object[a].first < value->object[b].first;
    });
    for (size_t i = 1; i < order.size(); ++i) {
      if (value->object[order[i]].first == value->object[order[i - 1]].first) {
        return ErrorAt(
            key_offsets[std::max(order[i], order[i - 1])],
            absl::StrCat("duplicate member name \"", value->object[order[i]].first, "\""));
      }
    }
    std::vector<std::pair<std::string, JsonValue>> sorted;
    sorted.reserve(order.size());
    for (size_t i : order) sorted.push_back(std::move(value->object[i]));
    value->object = std::move(sorted);
    return absl::OkStatus();
  }

  // -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, as a finite double.
  absl::Status ParseNumber(double* out) {
    const size_t start = pos_;
    const auto digits = [&] {
      const size_t from = pos_;
      while (Peek() >= '0' && Peek() <= '9') ++pos_;
      return pos_ > from;
    };
    Consume('-');
    if (Consume('0')) {
      if (Peek() >= '0' && Peek() <= '9') {
        return Error("leading zeros are not allowed");
      }
    } else if (!digits()) {
      return Error("expected a digit");
    }
    if (Consume('.') && !digits()) return Error("expected a digit");
    if (Peek() == 'e' || Peek() == 'E') {
      ++pos_;
      if (!Consume('+')) Consume('-');
      if (!digits()) return Error("expected a digit");
    }
    if (!absl::SimpleAtod(in_.substr(start, pos_ - start), out) || !std::isfinite(*out)) {
      return ErrorAt(start, "number out of the double range");
    }
    return absl::OkStatus();
  }

 public:
  absl::StatusOr<JsonValue> ParseTreeDocument() {
    JsonValue value;
    SkipSpace();
    if (absl::Status s = ParseTree(&value, 0); !s.ok()) return s;
    SkipSpace();
    if (pos_ != in_.size()) return Error("unexpected data after the value");
    return value;
  }

 private:
  const absl::string_view in_;
  size_t pos_ = 0;
  size_t error_offset_ = 0;
};

}  // namespace

absl::StatusOr<JsonFlatObject> ParseJsonFlatObject(absl::string_view json) {
  return JsonParser(json).Parse();
}

const JsonValue* JsonValue::Find(absl::string_view name) const {
  auto it = std::lower_bound(object.begin(), object.end(), name,
                             [](const std::pair<std::string, JsonValue>& member,
                                absl::string_view n) { return member.first < n; });
  if (it == object.end() || it->first != name) return nullptr;
  return &it->second;
}

absl::StatusOr<JsonValue> ParseJsonValue(absl::string_view json, size_t* error_offset) {
  JsonParser parser(json);
  absl::StatusOr<JsonValue> value = parser.ParseTreeDocument();
  if (!value.ok() && error_offset != nullptr) {
    *error_offset = parser.error_offset();
  }
  return value;
}

}  // namespace dedupd
