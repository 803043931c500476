// chunk_near_rule.h: how far apart (Hamming distance of 64-bit SimHash) two
// RAG chunks may be and still be reported as near duplicates, by the length
// of the chunk (the CheckChunks RPC). Short chunks have few shingles, so
// their SimHash is noisy; this is the one rule that says how short is too
// short.
//
// The rule, for a chunk of `words` words of normalized text and a requested
// maximum distance k (the store's setting, default 3):
//
//   words      effective distance      precision at k = 3 / 4 / 5 / 6 (measured)
//   1-7        none: exact only        1.000 / 0.797 / 0.667 / 0.462
//   8-15       min(k, 4)               0.997 / 0.996 / 0.979 / 0.954
//   16-63      min(k, 5)               0.997 / 0.999 / 0.998 / 0.978 (16-31)
//                                      1.000 / 1.000 / 0.994 / 0.981 (32-63)
//   64+        k                       1.000 / 1.000 / 1.000 / 1.000
//
// i.e. every length keeps the distances at which its measured precision is
// >= 0.99 (precision = near / (near + far), near: Jaccard J >= 0.8 of 3-word
// shingle sets, far: J < 0.5; the page-level evaluation's definitions). At
// the default k = 3 the rule only turns off near matching below 8 words.
// That is not for precision at k = 3 (no far pair was found there) but
// because near matching gives such chunks nothing and costs risk: (1) one
// substituted, inserted or deleted word changes most of their shingles, and
// 0.1% of such edits stayed within 3 bits (0.4% of those still J >= 0.8);
// (2) their fingerprints are not uniform (4 words = 2 shingles: a tied bit
// sum gives 0, so ~16 one bits, not 32), so unrelated short chunks (J = 0)
// collide far more often than the ~2e-15 per pair at k = 3 of uniform
// 64-bit values: 2.8e-10 per pair at k = 4 and 6.7e-9 at k = 6 measured,
// a rate that times the store's size is the false matches per query.
//
// Measured by bench/quality/chunk_quality.cc on 1,652 real documentation pages (Python
// 3.11 and PostgreSQL 15 docs, bench/corpus/make_text_corpus.py), chunked at 500,
// 200, 100 and 50 bytes (bench/corpus/chunker.h): 665,877 distinct chunks, 240,599
// of them 1-7 words; every pair within 6 bits, plus 14,945 controlled
// one-word edits. Figures and commands: docs/chunk_dedup.md ("Short chunks").
// Distances above 6 were not measured: for 64+ words they are the caller's.
//
// Example:
//   // words: NormalizeText output has single spaces, so spaces + 1.
//   int d = ChunkNearDistance(/*words=*/80, /*requested_max_distance=*/3);  // 3
//   ChunkNearDistance(5, 3);    // kExactMatchOnly (-1): skip the near lookup
//   ChunkNearDistance(12, 6);   // 4
//   MinHashNearThreshold(5, 0.8);   // 0: exact and SimHash only
#ifndef DEDUPD_CORE_TEXT_CHUNK_NEAR_RULE_H_
#define DEDUPD_CORE_TEXT_CHUNK_NEAR_RULE_H_

#include <cstddef>

namespace dedupd {

// Returned by ChunkNearDistance when a chunk may match only exactly (by
// SHA-256), never near. A SimHashIndex query at a negative distance matches
// nothing, so it can be passed on as is.
inline constexpr int kExactMatchOnly = -1;

// Chunks of fewer words are matched exactly only.
inline constexpr size_t kMinWordsForNearMatch = 8;
// Chunks of kMinWordsForNearMatch up to kMinWordsForMediumChunk - 1 words are
// near-matched at distances up to kShortChunkMaxDistance.
inline constexpr size_t kMinWordsForMediumChunk = 16;
inline constexpr int kShortChunkMaxDistance = 4;
// Chunks of kMinWordsForMediumChunk up to kMinWordsForUncappedDistance - 1
// words: up to kMediumChunkMaxDistance.
inline constexpr size_t kMinWordsForUncappedDistance = 64;
inline constexpr int kMediumChunkMaxDistance = 5;

// ChunkNearDistance returns the largest Hamming distance at which a chunk of
// `words` words (of its normalized text: the number of ' ' in NormalizeText's
// output plus one) may be reported as a near duplicate, when the caller's
// setting is `requested_max_distance`: never more than it, less for short
// chunks (table above), kExactMatchOnly (-1) for chunks under
// kMinWordsForNearMatch words, for words == 0, and for a negative request.
// Pure, total, thread-safe; O(1).
int ChunkNearDistance(size_t words, int requested_max_distance);

// MinHashNearThreshold returns the min_jaccard at which a text (a page or a
// chunk) of `words` words may be reported near by MinHash: 0 (MinHash
// matching off, exact and SimHash only) under kMinWordsForNearMatch words,
// else `requested_min_jaccard`. Why: a text of 1-3 words is one shingle,
// which one-permutation hashing densifies into all 128 slots, so two such
// texts have identical signatures with probability 1/256 and every band
// matches; measured on the chunk corpus above, every far pair found at any
// min_jaccard (7,009,158 of 7,028,511 pairs at 0.8) is a 1-7-word chunk,
// none from 8 words on (docs/benchmarks.md, "What is missed, and why").
// Pure, total, thread-safe.
double MinHashNearThreshold(size_t words, double requested_min_jaccard);

// KeepsMinHashSignature returns whether a text of `words` words is stored
// with its MinHash signature (and, for chunks, its shingle set): the texts
// MinHashNearThreshold lets be found by MinHash, whatever the threshold of
// the request that stores them. Pure, total, thread-safe.
inline bool KeepsMinHashSignature(size_t words) { return words >= kMinWordsForNearMatch; }

}  // namespace dedupd

#endif  // DEDUPD_CORE_TEXT_CHUNK_NEAR_RULE_H_
