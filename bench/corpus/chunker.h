// chunker.h: a small deterministic text chunker of the kind RAG ingestion
// pipelines run before embedding (a "recursive" splitter: paragraphs first,
// then words), so that benchmarks and tests of CheckChunks see the
// chunks real clients send: ~max_bytes chunks of packed paragraphs, plus the
// short ones such chunkers also emit (a heading followed by a long
// paragraph, the tail of a long paragraph, the end of a page).
//
// Rules, in order:
//   1. Paragraphs are separated by a blank line: '\n', then any run of
//      ' ', '\t', '\r', then '\n'. Leading and trailing whitespace of a
//      paragraph is not part of it; empty paragraphs are dropped.
//   2. A paragraph longer than max_bytes is cut into pieces on word
//      boundaries (whitespace: ' ', '\t', '\n', '\r', '\f', '\v'), each piece
//      as many whole words as fit in max_bytes; a single word longer than
//      max_bytes is cut at max_bytes, moved back to a UTF-8 character
//      boundary (never inside a character).
//   3. Pieces are packed greedily in order: a chunk takes the next piece
//      while the chunk, from its first byte to the end of that piece
//      (separators included), stays within max_bytes.
// Every chunk is a view into the input, begins and ends with a non-space
// byte and is at most max_bytes long; together the chunks hold every
// non-space byte of the input once, in order. Deterministic: the output
// depends only on the input bytes and max_bytes. Works on raw or
// NormalizeText output alike (normalized text has no paragraphs, so it is
// packed by words only).
//
// Example:
//   std::string page = "Title\n\nFirst paragraph ...\n\nSecond ...";
//   std::vector<absl::string_view> chunks =
//       dedupd::bench::ChunkText(page, /*max_bytes=*/500);
//   // chunks[i] points into `page`: keep `page` alive while using them.
#ifndef DEDUPD_BENCH_CORPUS_CHUNKER_H_
#define DEDUPD_BENCH_CORPUS_CHUNKER_H_

#include <cstddef>
#include <vector>

#include "absl/strings/string_view.h"

namespace dedupd::bench {

// The chunk size of a typical RAG pipeline (~80 English words), in bytes.
inline constexpr size_t kDefaultChunkBytes = 500;

namespace chunker_internal {

inline bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

struct Span {
  size_t begin, end;  // [begin, end) in the input
};

// Paragraphs (rule 1), trimmed, non-empty.
inline std::vector<Span> Paragraphs(absl::string_view text) {
  std::vector<Span> out;
  size_t start = 0;
  auto add = [&](size_t b, size_t e) {
    while (b < e && IsSpace(text[b])) ++b;
    while (e > b && IsSpace(text[e - 1])) --e;
    if (b < e) out.push_back({b, e});
  };
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\n') continue;
    size_t j = i + 1;
    while (j < text.size() && (text[j] == ' ' || text[j] == '\t' || text[j] == '\r')) ++j;
    if (j < text.size() && text[j] == '\n') {
      add(start, i);
      start = j + 1;
      i = j;
    }
  }
  add(start, text.size());
  return out;
}

// Appends to `out` the pieces of paragraph `p` (rule 2).
inline void Pieces(absl::string_view text, Span p, size_t max_bytes, std::vector<Span>* out) {
  if (p.end - p.begin <= max_bytes) {
    out->push_back(p);
    return;
  }
  size_t b = p.begin;
  while (b < p.end) {
    // The longest run of whole words from b within max_bytes.
    size_t limit = b + max_bytes;
    size_t end = b;  // end of the last whole word that fits
    size_t i = b;
    while (i < p.end) {
      size_t w = i;
      while (w < p.end && !IsSpace(text[w])) ++w;  // word [i, w)
      if (w > limit) break;
      end = w;
      while (w < p.end && IsSpace(text[w])) ++w;
      i = w;
    }
    if (end == b) {
      // One word longer than max_bytes: cut it on a character boundary.
      end = limit;
      while (end > b + 1 && (static_cast<unsigned char>(text[end]) & 0xC0) == 0x80) --end;
    }
    out->push_back({b, end});
    b = end;
    while (b < p.end && IsSpace(text[b])) ++b;
  }
}

}  // namespace chunker_internal

// ChunkText splits `text` into chunks of at most `max_bytes` bytes by the
// rules above. The views point into `text` and live as long as it does.
// Returns no chunk for a text of only whitespace.
// REQUIRES: max_bytes >= 4 (room for one UTF-8 character).
// Cost: O(text.size()).
inline std::vector<absl::string_view> ChunkText(absl::string_view text,
                                                size_t max_bytes = kDefaultChunkBytes) {
  using chunker_internal::Span;
  std::vector<Span> pieces;
  for (Span p : chunker_internal::Paragraphs(text)) {
    chunker_internal::Pieces(text, p, max_bytes, &pieces);
  }
  std::vector<absl::string_view> chunks;
  size_t i = 0;
  while (i < pieces.size()) {
    size_t j = i + 1;
    while (j < pieces.size() && pieces[j].end - pieces[i].begin <= max_bytes) ++j;
    chunks.push_back(text.substr(pieces[i].begin, pieces[j - 1].end - pieces[i].begin));
    i = j;
  }
  return chunks;
}

}  // namespace dedupd::bench

#endif  // DEDUPD_BENCH_CORPUS_CHUNKER_H_
