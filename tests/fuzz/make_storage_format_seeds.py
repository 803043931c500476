#!/usr/bin/env python3
"""Writes the seed corpus of storage_format_fuzzer (tests/fuzz/corpus/storage_format).

Each seed is one case byte (the index into storage_format_fuzzer.cc's
kDecoders, then kEncoders) followed by the case's bytes: for a decoder, a
valid record in the layout of docs/storage_format.md, plus a few damaged
ones; for an encoder, bytes for FuzzedDataProvider. Run from the repository
root:  python3 tests/fuzz/make_storage_format_seeds.py
"""
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "storage_format")

DECODERS = [
    "meta_version", "meta", "url_key", "any_url_key", "url_value", "content_meta",
    "content_value",
    "alias_key", "alias_value", "fingerprint_key", "fingerprint_value", "fetch_value",
    "manifest", "chunk_text", "holder_key", "holder_value", "chunk_fp_key",
    "text_by_id_key", "text_by_id_value",
]
ENCODERS = [
    "meta", "url", "content_meta", "content", "alias", "fingerprint", "fetch",
    "manifest", "chunk_text", "holder", "chunk_fp", "text_by_id",
]

SHA = bytes(range(32))
SHA2 = bytes(range(100, 132))
MICROS = 1_700_000_000_123_456


def u32(v):
    return struct.pack(">I", v)


def u64(v):
    return struct.pack(">Q", v)


def i64(v):
    return struct.pack(">q", v)


def manifest(entries, claim=None):
    """claim: (claim id hash, claim micros, replaced, [removed ids]) for version 2."""
    if claim is None:
        out = b"\x01"
    else:
        hash_, micros, replaced, removed = claim
        out = b"\x02" + u64(hash_) + i64(micros) + u32(replaced) + u32(len(removed))
        for cid in removed:
            out += u32(len(cid)) + cid
    out += u32(len(entries))
    for cid, sha, simhash, micros in entries:
        out += u32(len(cid)) + cid + sha + u64(simhash) + i64(micros)
    return out


def holder_key(micros, url, cid):
    return b"\x05\x03" + SHA + u64((micros & (2**64 - 1)) ^ (1 << 63)) + url + b"\x00" + cid


SEEDS = {
    "meta_version": b"DEDUPDST" + u32(7),
    "meta": b"DEDUPDST" + u32(2) + u32(1) + i64(MICROS),
    "meta_v1": b"DEDUPDST" + u32(1) + u32(1) + i64(MICROS),
    "url_key": b"\x01http://example.com/a?b=c",
    "any_url_key": b"\x08\x07crawl-7\x01http://a/",
    "url_value": b"\x01" + i64(MICROS),
    "url_value_before_epoch": b"\x01" + i64(-5),
    "content_meta": b"\x01" + u32(1) + u32(2) + u32(3) + u64(0x6465647570645348),
    "content_meta_minhash": b"\x02" + u32(1) + u32(2) + u32(3) + u64(0x6465647570645348)
    + u32(1) + u64(0x6465647570644D48),
    "content_value": b"\x01" + u32(9) + u64(0xDEADBEEF) + i64(MICROS) + u64(2)
    + b"http://example.com/owner",
    "content_value_claimed": b"\x02" + u32(9) + u64(0xDEADBEEF) + i64(MICROS) + u64(2)
    + u64(0x0102030405060708) + b"http://example.com/owner",
    "alias_key": b"\x03" + SHA + b"http://example.com/alias",
    "alias_value": b"\x01" + i64(MICROS),
    "fingerprint_key": b"\x04" + u32(42),
    "fingerprint_value": b"\x01" + u64(0x0123456789ABCDEF) + SHA,
    "fingerprint_value_minhash": b"\x02" + u64(0x0123456789ABCDEF) + SHA + bytes(range(128)),
    "fetch_value": b"\x01" + SHA + i64(MICROS) + i64(MICROS + 1),
    "manifest": manifest([(b"0", SHA, 1, MICROS), (b"intro", SHA2, 2, -1)]),
    "manifest_truncated": manifest([(b"0", SHA, 1, MICROS)])[:-3],
    "manifest_claimed": manifest([(b"0", SHA, 1, MICROS), (b"intro", SHA2, 2, -1)],
                                 (0x0102030405060708, MICROS + 1, 3, [b"old", b"7"])),
    "manifest_claimed_truncated": manifest([(b"0", SHA, 1, MICROS)],
                                           (5, MICROS, 1, [b"gone"]))[:-60],
    "manifest_huge_count": b"\x01" + u32(0xFFFFFFFF) + u32(1) + b"x" + SHA,
    "chunk_text": b"\x01" + u32(7) + u64(99) + u64(1),
    "chunk_text_no_holders": b"\x01" + u32(7) + u64(99) + u64(0),
    "holder_key": holder_key(MICROS, b"http://example.com/doc", b"chunk\x00id"),
    "holder_key_before_epoch": holder_key(-1, b"http://a/", b"1"),
    "holder_value": b"\x01",
    "chunk_fp_key": b"\x05\x04" + u32(3),
    "chunk_text_owned": b"\x02" + u32(7) + u64(99) + u64(2) + i64(MICROS) + u32(9)
    + b"http://a/" + b"c",
    "text_by_id_key": b"\x05\x05" + u32(3),
    "text_by_id_value": b"\x03" + SHA + u64(99) + u64(2) + i64(MICROS) + u32(9)
    + b"http://a/" + b"c\x00",
    "text_by_id_value_minhash": b"\x04" + SHA + u64(99) + bytes(range(128)) + u64(2)
    + i64(MICROS) + u32(9) + b"http://a/" + b"c",
    "text_by_id_value_no_holders": b"\x03" + SHA + u64(99) + u64(0) + i64(MICROS) + u32(1)
    + b"u" + b"c",
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, payload in SEEDS.items():
        case = name
        for d in sorted(DECODERS, key=len, reverse=True):
            if name.startswith(d):
                case = d
                break
        index = DECODERS.index(case)
        with open(os.path.join(OUT, "decode_" + name), "wb") as f:
            f.write(bytes([index]) + payload)
    # Encoder cases: FuzzedDataProvider reads integers from the end and
    # strings from the front, so any varied bytes make values.
    filler = bytes((i * 37 + 11) % 256 for i in range(96))
    for i, name in enumerate(ENCODERS):
        with open(os.path.join(OUT, "encode_" + name), "wb") as f:
            f.write(bytes([len(DECODERS) + i]) + filler)


if __name__ == "__main__":
    main()
