// text_normalizer.cc: the canonical form of a page's text; see
// text_normalizer.h and docs/content_fingerprint.md for the rules.
//
// Design notes
// - Most page text is ASCII. ASCII bytes are classified by one table lookup
//   (letter/digit/punctuation, space, NUL) and lowercased inline; only runs
//   of non-ASCII bytes go to ICU. Such a run starts one character early when
//   that character is a non-space ASCII character, because a combining mark
//   composes with the character before it ("e" + U+0301 -> "é"). Splitting
//   the text there is exact: an ASCII character is an NFC boundary (a
//   starter that composes with nothing before it), and full case folding
//   without the Turkic option is context-free, so NFC and folding of the
//   whole text equal the concatenation over the pieces.
// - Order inside a run: NFC, then fold + NFC until folding changes nothing.
//   Folding can un-normalize (U+0345 folds to U+03B9, a starter) and NFC can
//   produce a foldable character, so one pass of each is not a fixed point;
//   the loop makes NormalizeText idempotent. In practice it stops after the
//   second fold.
// - Spaces are mapped after NFC and folding: no NFC mapping or case folding
//   turns a non-space into a space or back, and collapsing/trimming spaces
//   never puts a combining mark next to a new base character (a single ' '
//   always stays between two non-spaces).
// - UTF-8 is validated here (Unicode 15 §3.9, Table 3-7: shortest form only,
//   no surrogates, nothing above U+10FFFF) so that errors name the offset of
//   the first bad byte; ICU only ever sees valid UTF-8.
#include "core/text_normalizer.h"

#include <unicode/bytestream.h>
#include <unicode/casemap.h>
#include <unicode/edits.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>
#include <unicode/utypes.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace dedupd {

namespace {

// Classes of ASCII bytes for the fast path.
enum AsciiClass : uint8_t { kPlain = 0, kSpace = 1, kNul = 2 };

constexpr std::array<uint8_t, 128> MakeAsciiClasses() {
  std::array<uint8_t, 128> t{};
  t[0] = kNul;
  for (unsigned char c : {'\t', '\n', '\v', '\f', '\r', ' '}) t[c] = kSpace;
  return t;
}
constexpr std::array<uint8_t, 128> kAsciiClass = MakeAsciiClasses();

constexpr std::array<char, 128> MakeAsciiLower() {
  std::array<char, 128> t{};
  for (int c = 0; c < 128; ++c) {
    t[c] = static_cast<char>(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
  }
  return t;
}
constexpr std::array<char, 128> kAsciiLower = MakeAsciiLower();

// Utf8SequenceLength returns the length (2..4) of the well-formed UTF-8
// sequence of a non-ASCII lead byte at p[0] (n bytes available), or 0 when
// the sequence is ill-formed or truncated. Table 3-7 of the Unicode
// standard, which excludes overlongs, surrogates and values > U+10FFFF.
size_t Utf8SequenceLength(const unsigned char* p, size_t n) {
  const unsigned char c = p[0];
  auto cont = [&](size_t k, unsigned char lo, unsigned char hi) {
    return k < n && p[k] >= lo && p[k] <= hi;
  };
  if (c >= 0xC2 && c <= 0xDF) return cont(1, 0x80, 0xBF) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    const unsigned char lo = c == 0xE0 ? 0xA0 : 0x80;
    const unsigned char hi = c == 0xED ? 0x9F : 0xBF;
    return cont(1, lo, hi) && cont(2, 0x80, 0xBF) ? 3 : 0;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    const unsigned char lo = c == 0xF0 ? 0x90 : 0x80;
    const unsigned char hi = c == 0xF4 ? 0x8F : 0xBF;
    return cont(1, lo, hi) && cont(2, 0x80, 0xBF) && cont(3, 0x80, 0xBF) ? 4
                                                                        : 0;
  }
  return 0;  // 0x80..0xC1 (continuation or overlong lead), 0xF5..0xFF
}

// Decodes the well-formed sequence at p (length `len`).
char32_t DecodeUtf8(const unsigned char* p, size_t len) {
  switch (len) {
    case 1:
      return p[0];
    case 2:
      return (char32_t{p[0] & 0x1Fu} << 6) | (p[1] & 0x3Fu);
    case 3:
      return (char32_t{p[0] & 0x0Fu} << 12) | (char32_t{p[1] & 0x3Fu} << 6) |
             (p[2] & 0x3Fu);
    default:
      return (char32_t{p[0] & 0x07u} << 18) | (char32_t{p[1] & 0x3Fu} << 12) |
             (char32_t{p[2] & 0x3Fu} << 6) | (p[3] & 0x3Fu);
  }
}

size_t Utf8LengthOfValid(unsigned char lead) {
  return lead < 0x80 ? 1 : lead < 0xE0 ? 2 : lead < 0xF0 ? 3 : 4;
}

constexpr uint64_t kEachByte(uint8_t b) { return 0x0101010101010101ULL * b; }

// CopyAsciiChunk writes the 8 bytes at `in`, lowercased, to `out` and
// returns 8 when they are all printable ASCII (0x21..0x7F) or ' ', with no
// two adjacent spaces and no space last (a space may only start a run, which
// the caller allows by having no space pending and a non-empty output);
// otherwise writes nothing and returns 0. SWAR: every test is exact per
// byte because all bytes are < 0x80 once the first test passes.
inline size_t CopyAsciiChunk(const unsigned char* in, char* out) {
  uint64_t x;
  std::memcpy(&x, in, sizeof(x));
  const uint64_t high = kEachByte(0x80);
  if (x & high) return 0;                                        // non-ASCII
  const uint64_t y = x ^ kEachByte(' ');                         // ' ' -> 0
  const uint64_t nonzero = ((y & kEachByte(0x7F)) + kEachByte(0x7F)) | y;
  const uint64_t space = ~nonzero & high;                        // ' ' bytes
  const uint64_t control = ~(x + kEachByte(0x80 - 0x20)) & high;  // < 0x20
  if (control != 0) return 0;  // TAB, LF, ..., NUL: the byte-wise path
  if ((space & (space << 8)) != 0 || (space >> 63) != 0) return 0;
  const uint64_t ge_a = x + kEachByte(0x80 - 'A');
  const uint64_t gt_z = x + kEachByte(0x80 - 'Z' - 1);
  const uint64_t upper = ge_a & ~gt_z & high;
  x |= upper >> 2;  // 0x80 >> 2 == 0x20: 'A' -> 'a'
  std::memcpy(out, &x, sizeof(x));
  return 8;
}

// Output buffer with a write index. Invariant between steps: at least
// (input bytes left) bytes of room, which is all the ASCII path can write
// (a pending ' ' is always paid for by a space byte already consumed).
struct Output {
  std::string buf;
  size_t size = 0;
  bool pending_space = false;  // a space was seen after the last character

  void EnsureRoom(size_t n) {
    if (buf.size() - size < n) buf.resize(size + n);
  }
  void Space() { pending_space = size != 0; }
  void FlushSpace() {
    if (pending_space) {
      buf[size++] = ' ';
      pending_space = false;
    }
  }
};

// NFC instance, or nullptr when ICU's data cannot be loaded.
const icu::Normalizer2* Nfc() {
  static const icu::Normalizer2* const nfc = [] {
    UErrorCode status = U_ZERO_ERROR;
    const icu::Normalizer2* n = icu::Normalizer2::getNFCInstance(status);
    return U_SUCCESS(status) ? n : nullptr;
  }();
  return nfc;
}

// Appends NFC(fold(...)) of `run` (valid UTF-8), iterated to a fixed point,
// with spaces mapped, to `out`. `left` is the number of input bytes after
// the run (room the caller's invariant needs).
absl::Status AppendUnicodeRun(const icu::Normalizer2& nfc,
                              absl::string_view run, size_t left,
                              Output* out) {
  // Scratch buffers: steady-state calls do not allocate.
  thread_local std::string a;
  thread_local std::string b;
  UErrorCode status = U_ZERO_ERROR;
  const icu::StringPiece piece(run.data(), static_cast<int32_t>(run.size()));
  a.clear();
  if (nfc.isNormalizedUTF8(piece, status) && U_SUCCESS(status)) {
    a.assign(run.data(), run.size());
  } else {
    status = U_ZERO_ERROR;
    icu::StringByteSink<std::string> sink(&a);
    nfc.normalizeUTF8(0, piece, sink, nullptr, status);
  }
  // Bounded: real text converges after one fold; the bound only guards
  // against a pathological Unicode version.
  for (int round = 0; round < 8 && U_SUCCESS(status); ++round) {
    b.clear();
    icu::Edits edits;
    {
      icu::StringByteSink<std::string> sink(&b);
      icu::CaseMap::utf8Fold(U_FOLD_CASE_DEFAULT, a, sink, &edits, status);
    }
    if (U_FAILURE(status) || !edits.hasChanges()) break;
    if (nfc.isNormalizedUTF8(b, status) && U_SUCCESS(status)) {
      a.swap(b);
    } else {
      status = U_ZERO_ERROR;
      a.clear();
      icu::StringByteSink<std::string> sink(&a);
      nfc.normalizeUTF8(0, b, sink, nullptr, status);
    }
  }
  if (U_FAILURE(status)) {
    return absl::InternalError(
        absl::StrCat("ICU normalization failed: ", u_errorName(status)));
  }
  // `a` can be longer than the run (folding "ß" gives "ss"); +1 for a
  // pending space.
  out->EnsureRoom(a.size() + 1 + left);
  const auto* p = reinterpret_cast<const unsigned char*>(a.data());
  for (size_t i = 0; i < a.size();) {
    const size_t len = Utf8LengthOfValid(p[i]);
    if (IsTextSpace(DecodeUtf8(p + i, len))) {
      out->Space();
    } else {
      out->FlushSpace();
      std::memcpy(&out->buf[out->size], p + i, len);
      out->size += len;
    }
    i += len;
  }
  return absl::OkStatus();
}

}  // namespace

bool IsTextSpace(char32_t c) {
  if (c < 0x80) return c < 128 && kAsciiClass[c] == kSpace;
  switch (c) {
    case 0x00A0:
    case 0x1680:
    case 0x202F:
    case 0x205F:
    case 0x3000:
    case 0x2028:
    case 0x2029:
      return true;
    default:
      return c >= 0x2000 && c <= 0x200A;
  }
}

absl::StatusOr<std::string> NormalizeText(absl::string_view utf8) {
  const auto* p = reinterpret_cast<const unsigned char*>(utf8.data());
  const size_t n = utf8.size();
  Output out;
  out.buf.resize(n);
  size_t i = 0;
  while (i < n) {
    // Eight bytes at a time while they are plain ASCII with at most single
    // spaces between them: lowercased and stored as they are.
    if (!out.pending_space && out.size != 0 && n - i >= 8) {
      const size_t taken = CopyAsciiChunk(p + i, &out.buf[out.size]);
      if (taken != 0) {
        i += taken;
        out.size += taken;
        continue;
      }
    }
    const unsigned char c = p[i];
    if (c < 0x80) {
      switch (kAsciiClass[c]) {
        case kPlain:
          out.FlushSpace();
          out.buf[out.size++] = kAsciiLower[c];
          break;
        case kSpace:
          out.Space();
          break;
        default:
          return absl::InvalidArgumentError(
              absl::StrCat("text contains a NUL byte at byte ", i));
      }
      ++i;
      continue;
    }
    // A non-ASCII run, validated first so that ICU sees only valid UTF-8.
    size_t start = i;
    if (i > 0 && p[i - 1] < 0x80 && kAsciiClass[p[i - 1]] == kPlain) {
      // The previous character (already written, lowercased, with no space
      // pending after it) may compose with what follows: redo it in ICU.
      --out.size;
      --start;
    }
    size_t end = i;
    while (end < n && p[end] >= 0x80) {
      const size_t len = Utf8SequenceLength(p + end, n - end);
      if (len == 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("invalid UTF-8 at byte ", end));
      }
      end += len;
    }
    const icu::Normalizer2* nfc = Nfc();
    if (nfc == nullptr) {
      return absl::InternalError("ICU NFC data is not available");
    }
    const absl::Status s = AppendUnicodeRun(
        *nfc, utf8.substr(start, end - start), n - end, &out);
    if (!s.ok()) return s;
    i = end;
  }
  if (out.size == 0) {
    return absl::InvalidArgumentError("text is empty or only whitespace");
  }
  out.buf.resize(out.size);
  return std::move(out.buf);
}

}  // namespace dedupd
