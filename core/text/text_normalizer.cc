// text_normalizer.cc: the canonical form of a page's text; see
// text_normalizer.h and docs/content_fingerprint.md for the rules.
//
// Design notes
// - Most page text is ASCII. Blocks of 16 ASCII bytes are lowercased and
//   their spaces mapped with SSE2 compares, a space run ending a block early
//   (CopyAsciiBlock); other ASCII bytes are classified by one table lookup
//   (letter/digit/punctuation, space, NUL) and written without a branch on
//   the class. A ' ' is written as soon as a space follows a non-space and a
//   trailing one is dropped at the end, so that no space is pending between
//   blocks. Only runs of non-ASCII bytes go to ICU. Such a run starts one character early when
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
// - UTF-8 is validated here, with ICU's U8_NEXT (core/text/utf8.h: Unicode
//   §3.9 Table 3-7, shortest form only, no surrogates, nothing above
//   U+10FFFF), so that errors name the offset of the first bad byte; the
//   normalizer and case map only ever see valid UTF-8.
#include "core/text/text_normalizer.h"

#include <unicode/bytestream.h>
#include <unicode/casemap.h>
#include <unicode/edits.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>
#include <unicode/utf8.h>
#include <unicode/utypes.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "core/text/utf8.h"

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

// CopyAsciiBlock normalizes the 16 bytes at `in` when they are ASCII
// without NUL: writes them to `out` lowercased, with every space byte
// mapped to ' ', and returns how many of them are done: 16, or the index
// of the first space byte that must be dropped (one that follows a space,
// or comes first while `*at_space`, i.e. while the output is empty or ends
// with ' '); out[0..returned-1] is then the output for in[0..returned-1].
// Updates `*at_space`. Returns kNotPlainAscii, writing nothing, when the
// block has a non-ASCII or NUL byte. SSE2 (every x86-64 CPU has it): about
// 20 instructions per 16 bytes.
constexpr int kNotPlainAscii = -1;
inline int CopyAsciiBlock(const unsigned char* in, char* out, bool* at_space) {
#if defined(__SSE2__)
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in));
  const __m128i nul = _mm_cmpeq_epi8(v, _mm_setzero_si128());
  // High bit: a non-ASCII byte or a NUL.
  if (_mm_movemask_epi8(_mm_or_si128(v, nul)) != 0) return kNotPlainAscii;
  // All bytes are 0x01..0x7F from here on, so signed compares are exact.
  const __m128i space = _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8(' ')),
                                     _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('\t' - 1)),
                                                   _mm_cmplt_epi8(v, _mm_set1_epi8('\r' + 1))));
  const __m128i upper = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('A' - 1)),
                                      _mm_cmplt_epi8(v, _mm_set1_epi8('Z' + 1)));
  __m128i r = _mm_add_epi8(v, _mm_and_si128(upper, _mm_set1_epi8('a' - 'A')));
  r = _mm_or_si128(_mm_andnot_si128(space, r), _mm_and_si128(space, _mm_set1_epi8(' ')));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(out), r);
  const uint32_t spaces = static_cast<uint32_t>(_mm_movemask_epi8(space));
  const uint32_t drop = spaces & ((spaces << 1) | uint32_t{*at_space});
  if (drop != 0) {
    *at_space = true;  // the byte before the dropped one is a space
    return __builtin_ctz(drop);
  }
  *at_space = (spaces >> 15) != 0;
  return 16;
#else
  // Without SSE2 every byte takes the byte-wise path.
  static_cast<void>(in);
  static_cast<void>(out);
  static_cast<void>(at_space);
  return kNotPlainAscii;
#endif
}

// Output buffer with a write index. A ' ' is written as soon as a space
// follows a non-space character; the caller drops a trailing one at the
// end. Invariant between steps: at least (input bytes left) bytes of room,
// which is all the ASCII path can write (one byte per byte).
struct Output {
  std::string& buf;
  size_t size = 0;

  // True when a space must not be written: the output is empty or ends
  // with ' '.
  bool AtSpace() const { return size == 0 || buf[size - 1] == ' '; }
  void EnsureRoom(size_t n) {
    if (buf.size() - size < n) buf.resize(size + n);
  }
  void Space() {
    if (!AtSpace()) buf[size++] = ' ';
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
absl::Status AppendUnicodeRun(const icu::Normalizer2& nfc, absl::string_view run, size_t left,
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
    return absl::InternalError(absl::StrCat("ICU normalization failed: ", u_errorName(status)));
  }
  // `a` can be longer than the run (folding "ß" gives "ss").
  out->EnsureRoom(a.size() + left);
  const auto* p = reinterpret_cast<const unsigned char*>(a.data());
  for (size_t i = 0; i < a.size();) {
    const size_t start = i;
    UChar32 c;
    U8_NEXT_UNSAFE(p, i, c);  // ICU's output is well-formed
    if (IsTextSpace(static_cast<char32_t>(c))) {
      out->Space();
    } else {
      std::memcpy(&out->buf[out->size], p + start, i - start);
      out->size += i - start;
    }
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

absl::Status NormalizeTextInto(absl::string_view utf8, std::string* result) {
  const auto* p = reinterpret_cast<const unsigned char*>(utf8.data());
  const size_t n = utf8.size();
  Output out{*result};
  out.buf.resize(n);
  bool at_space = true;  // == out.AtSpace(), kept in a register
  size_t i = 0;
  while (i < n) {
    // 16 bytes at a time while they are ASCII without NUL; a run of spaces
    // ends a block early, and the rest of the run is skipped here.
    if (n - i >= 16) {
      const int done = CopyAsciiBlock(p + i, &out.buf[out.size], &at_space);
      if (done != kNotPlainAscii) {
        i += done;
        out.size += done;
        if (done != 16) {
          while (i < n && p[i] < 0x80 && kAsciiClass[p[i]] == kSpace) ++i;
        }
        continue;
      }
    }
    // Otherwise byte by byte up to the next block (a NUL, a non-ASCII run,
    // or the text's last bytes).
    const size_t stop = n - i >= 16 ? i + 16 : n;
    while (i < stop) {
      const unsigned char c = p[i];
      if (c >= 0x80) break;
      const uint8_t cls = kAsciiClass[c];
      if (cls == kNul) {
        return absl::InvalidArgumentError(absl::StrCat("text contains a NUL byte at byte ", i));
      }
      // Without a branch on the class: a space writes ' ' and keeps it
      // unless the output is empty or already ends with ' '.
      const bool space = cls == kSpace;
      out.buf[out.size] = space ? ' ' : kAsciiLower[c];
      out.size += !(space && at_space);
      at_space = space;
      ++i;
    }
    if (i == stop) continue;
    // A non-ASCII run, validated first so that ICU sees only valid UTF-8.
    size_t start = i;
    if (i > 0 && p[i - 1] < 0x80 && kAsciiClass[p[i - 1]] == kPlain) {
      // The previous character (the last one written, lowercased) may
      // compose with what follows: redo it in ICU.
      --out.size;
      --start;
    }
    size_t end = i;
    while (end < n && p[end] >= 0x80) {
      const size_t len = Utf8SequenceLength(p + end, n - end);
      if (len == 0) {
        return absl::InvalidArgumentError(absl::StrCat("invalid UTF-8 at byte ", end));
      }
      end += len;
    }
    const icu::Normalizer2* nfc = Nfc();
    if (nfc == nullptr) {
      return absl::InternalError("ICU NFC data is not available");
    }
    const absl::Status s = AppendUnicodeRun(*nfc, utf8.substr(start, end - start), n - end, &out);
    if (!s.ok()) return s;
    at_space = out.AtSpace();
    i = end;
  }
  if (out.size != 0 && at_space) --out.size;  // a trailing ' '
  if (out.size == 0) {
    return absl::InvalidArgumentError("text is empty or only whitespace");
  }
  out.buf.resize(out.size);
  return absl::OkStatus();
}

absl::StatusOr<std::string> NormalizeText(absl::string_view utf8) {
  std::string out;
  DEDUPD_RETURN_IF_ERROR(NormalizeTextInto(utf8, &out));
  return out;
}

}  // namespace dedupd
