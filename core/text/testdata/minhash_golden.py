#!/usr/bin/env python3
"""Regenerates core/text/testdata/minhash_golden.tsv from the algorithm as
docs/minhash.md states it, written independently of the C++ code (Python
integers, no shared source; normalization, word hashes and shingle hashes
come from simhash_golden.py, itself independent of the C++), so that the
golden file checks the C++ implementation against the text of the spec.

    python3 core/text/testdata/minhash_golden.py > /tmp/golden.tsv
    mv /tmp/golden.tsv core/text/testdata/minhash_golden.tsv

It reads the inputs (first two columns) of the current minhash_golden.tsv
and prints the file with the signature column recomputed and the version
line set to the version below.
"""

import codecs
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import simhash_golden as sg  # noqa: E402

MINHASH_VERSION = 1
SEED = 0x6465647570644D48  # MinHasher::kSeed, ASCII "dedupdMH"
SLOTS = 128
RANK_BITS = 57
MAX_PROBES = 512
M64 = sg.M64


def splitmix64(x):
    x = (x + 0x9E3779B97F4A7C15) & M64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & M64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def shingles(normalized, k):
    w = [sg.word_hash(x) for x in normalized.split(b' ') if x]
    if not w:
        return set()
    k = min(k, len(w))
    out = set()
    for j in range(len(w) - k + 1):
        h = sg.SEED
        for i in range(k):
            h = ((sg.rotl(h, 27) ^ w[j + i]) * sg.SHINGLE_MULTIPLIER) & M64
        out.add(sg.fmix64(h))
    return out


def signature(normalized, k):
    s = shingles(normalized, k)
    if not s:
        return bytes(SLOTS)
    bins = [None] * SLOTS
    for h in s:
        b, rank = h >> RANK_BITS, h & ((1 << RANK_BITS) - 1)
        if bins[b] is None or rank < bins[b]:
            bins[b] = rank
    out = []
    for i in range(SLOTS):
        src = i if bins[i] is not None else None
        attempt = 1
        while src is None and attempt <= MAX_PROBES:
            j = splitmix64(SEED ^ (i << 32 | attempt)) >> RANK_BITS
            if bins[j] is not None:
                src = j
            attempt += 1
        if src is None:  # the next non-empty bin to the right, cyclically
            src = (i + 1) % SLOTS
            while bins[src] is None:
                src = (src + 1) % SLOTS
        out.append(bins[src] & 0xFF)
    return bytes(out)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, 'minhash_golden.tsv'), 'rb') as f:
        lines = f.read().decode('utf-8').split('\n')
    out = []
    for line in lines:
        if line.startswith('# MinHasher::kVersion='):
            line = '# MinHasher::kVersion=%d' % MINHASH_VERSION
        elif line and not line.startswith('#'):
            k, text = line.split('\t')[:2]
            if text.startswith('@'):
                with open(os.path.join(here, text[1:]), 'rb') as f:
                    raw = f.read()
            else:
                raw = codecs.escape_decode(text.encode('utf-8'))[0]
            line = '\t'.join([k, text, signature(sg.normalize(raw), int(k)).hex()])
        out.append(line)
    sys.stdout.write('\n'.join(out))


if __name__ == '__main__':
    main()
