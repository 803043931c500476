#!/usr/bin/env python3
"""Regenerates core/text/testdata/simhash_golden.tsv from the algorithm as
docs/content_fingerprint.md states it, written independently of the C++
code (Python integers, no shared source), so that the golden file checks
the C++ implementation against the text of the spec rather than against
itself.

    python3 core/text/testdata/simhash_golden.py > /tmp/golden.tsv
    mv /tmp/golden.tsv core/text/testdata/simhash_golden.tsv
    python3 core/text/testdata/simhash_golden.py --word_vectors   # for stable_hash_test.cc

It reads the inputs (first two columns) of the current simhash_golden.tsv
and prints the file with the SimHash and SHA-256 columns recomputed and the
version lines set to the versions below. The text normalization here
(Python's unicodedata: NFC, str.casefold, NFC, until stable; the spaces of
docs/content_fingerprint.md) agrees with NormalizeText on the golden
inputs; the SHA-256 column, which simhash_test also compares, shows it.
"""

import codecs
import hashlib
import os
import sys
import unicodedata

SIMHASH_VERSION = 2
TEXT_NORMALIZER_VERSION = 1

M64 = (1 << 64) - 1
SEED = 0x6465647570645348  # SimHasher::kSeed, ASCII "dedupdSH"
WORD_A = 0x9E3779B97F4A7C00
WORD_B = 0xC2B2AE3D27D4EB00
WORD_C = 0xBF58476D1CE4E5B9
SHINGLE_MULTIPLIER = 0x9FB21C651E98DF25

SPACES = {0x20, 0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0xA0, 0x1680, 0x202F, 0x205F,
          0x3000, 0x2028, 0x2029} | set(range(0x2000, 0x200B))


def rotl(x, r):
    return ((x << r) | (x >> (64 - r))) & M64


def xxh64(data, seed):
    """XXH64 (xxHash specification, "XXH64 Algorithm Description")."""
    p1, p2, p3 = 0x9E3779B185EBCA87, 0xC2B2AE3D27D4EB4F, 0x165667B19E3779F9
    p4, p5 = 0x85EBCA77C2B2AE63, 0x27D4EB2F165667C5

    def round_(acc, lane):
        return (rotl((acc + lane * p2) & M64, 31) * p1) & M64

    def lane(i, n):
        return int.from_bytes(data[i:i + n], 'little')

    n, i = len(data), 0
    if n >= 32:
        v = [(seed + p1 + p2) & M64, (seed + p2) & M64, seed,
             (seed - p1) & M64]
        while n - i >= 32:
            v = [round_(v[j], lane(i + 8 * j, 8)) for j in range(4)]
            i += 32
        h = (rotl(v[0], 1) + rotl(v[1], 7) + rotl(v[2], 12) +
             rotl(v[3], 18)) & M64
        for x in v:
            h = ((h ^ round_(0, x)) * p1 + p4) & M64
    else:
        h = (seed + p5) & M64
    h = (h + n) & M64
    while n - i >= 8:
        h = (rotl(h ^ round_(0, lane(i, 8)), 27) * p1 + p4) & M64
        i += 8
    if n - i >= 4:
        h = (rotl(h ^ (lane(i, 4) * p1 & M64), 23) * p2 + p3) & M64
        i += 4
    while i < n:
        h = (rotl(h ^ (data[i] * p5 & M64), 11) * p1) & M64
        i += 1
    h ^= h >> 33
    h = h * p2 & M64
    h ^= h >> 29
    h = h * p3 & M64
    return h ^ (h >> 32)


def word_hash(word, seed=SEED):
    """StableWordHash64: 1..16 bytes: two 128-bit products; else XXH64."""
    if not 1 <= len(word) <= 16:
        return xxh64(word, seed)
    lo = int.from_bytes(word[:8], 'little')  # zero beyond the word
    hi = int.from_bytes(word[8:16], 'little')
    p = (lo ^ WORD_A) * (hi ^ WORD_B)
    q = ((p & M64) ^ WORD_C ^ len(word)) * ((p >> 64) ^ seed)
    return (q & M64) ^ (q >> 64)


def fmix64(h):
    h ^= h >> 33
    h = h * 0xFF51AFD7ED558CCD & M64
    h ^= h >> 33
    h = h * 0xC4CEB9FE1A85EC53 & M64
    return h ^ (h >> 33)


def simhash(normalized, k):
    w = [word_hash(x) for x in normalized.split(b' ') if x]
    if not w:
        return 0
    k = min(k, len(w))
    distinct = set()
    for j in range(len(w) - k + 1):
        h = SEED
        for i in range(k):
            h = ((rotl(h, 27) ^ w[j + i]) * SHINGLE_MULTIPLIER) & M64
        distinct.add(fmix64(h))
    fingerprint = 0
    for b in range(64):
        v = sum(1 if h >> b & 1 else -1 for h in distinct)
        if v > 0:
            fingerprint |= 1 << b
    return fingerprint


def normalize(raw):
    text = unicodedata.normalize('NFC', raw.decode('utf-8'))
    while True:
        folded = unicodedata.normalize('NFC', text.casefold())
        if folded == text:
            break
        text = folded
    text = ''.join(' ' if ord(c) in SPACES else c for c in text)
    return ' '.join(x for x in text.split(' ') if x).encode('utf-8')


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    if sys.argv[1:] == ['--word_vectors']:
        for word in [b'a', b'abc', b'dedupd', b'12345678', b'123456789',
                     b'0123456789abcdef', b'0123456789abcdefg',
                     b'stra\xc3\x9fe', b'']:
            print('{%r, 0x%016xULL},' % (word.decode('utf-8'),
                                         word_hash(word)))
        return
    with open(os.path.join(here, 'simhash_golden.tsv'), 'rb') as f:
        lines = f.read().decode('utf-8').split('\n')
    out = []
    for line in lines:
        if line.startswith('# SimHasher::kVersion='):
            line = '# SimHasher::kVersion=%d' % SIMHASH_VERSION
        elif line.startswith('# kTextNormalizerVersion='):
            line = '# kTextNormalizerVersion=%d' % TEXT_NORMALIZER_VERSION
        elif line and not line.startswith('#'):
            k, text = line.split('\t')[:2]
            if text.startswith('@'):
                with open(os.path.join(here, text[1:]), 'rb') as f:
                    raw = f.read()
            else:
                raw = codecs.escape_decode(text.encode('utf-8'))[0]
            normalized = normalize(raw)
            line = '\t'.join([k, text, '%016x' % simhash(normalized, int(k)),
                              hashlib.sha256(normalized).hexdigest()])
        out.append(line)
    sys.stdout.write('\n'.join(out))


if __name__ == '__main__':
    main()
