#!/bin/sh
# Writes the seed corpus of engine_fuzzer (tests/fuzz/corpus/engine): each
# seed is one RPC byte (0 CheckUrl, 1 CheckContent, 2 CheckChunks,
# 3 DedupResults) followed by a request serialized by
# `protoc --encode` from the protobuf text format below.
# Run from the repository root:  sh tests/fuzz/make_engine_seeds.sh
set -eu
out=tests/fuzz/corpus/engine
mkdir -p "$out"

# seed <file> <rpc byte> <message type> <text format>
seed() {
  printf "\\$(printf '%03o' "$2")" > "$out/$1"
  printf '%s\n' "$4" |
    protoc --encode="dedupd.v1.$3" -I proto proto/dedupd/v1/dedupd.proto >> "$out/$1"
}

seed url_claim 0 CheckUrlRequest '
items { url: "https://Example.COM:443/a/../b?utm_source=x&id=2#frag" }
items { url: "HTTP://example.com/b?id=2" }
items { url: "../c" base_url: "http://example.org/x/y" }
items { url: "javascript:alert(1)" }
items { url: "http://[::1]:8080/%7Efoo" }'
seed url_peek 0 CheckUrlRequest '
mode: CLAIM_MODE_PEEK
items { url: "http://xn--bcher-kva.de/" }
items { url: "http://b\303\274cher.de/" }
items { url: "" }'
seed url_empty 0 CheckUrlRequest ''
seed content_claim 1 CheckContentRequest '
items { url: "http://example.com/1" text: "The quick brown fox jumps over the lazy dog near the river bank." }
items { url: "http://example.com/2" canonical_url: "/1" text: "The quick brown fox jumps over the lazy dog near the river bank!" }
items { url: "http://example.com/3" text: "the QUICK brown fox jumps over the lazy dog near the river bend." max_hamming_distance: 3 }
items { url: "http://example.com/4" text: "   " }
items { url: "http://example.com/5" text: "x" max_hamming_distance: 9 }'
seed content_peek 1 CheckContentRequest '
mode: CLAIM_MODE_PEEK
items { url: "http://example.com/p" text: "caf\303\251 \342\200\224 na\303\257ve text" }
items { url: "" text: "no url" }
items { url: "http://example.com/bad" text: "bad \377 byte" }'
seed chunks_claim 2 CheckChunksRequest '
document_url: "http://example.com/doc"
chunks { text: "First paragraph of the document, long enough to be a chunk of its own." }
chunks { text: "Second paragraph with different words entirely about gardening." chunk_id: "p2" }
chunks { text: "First paragraph of the document, long enough to be a chunk of its own." }
chunks { text: "dup id" chunk_id: "p2" }
chunks { text: "" chunk_id: "" }'
seed chunks_peek_distance 2 CheckChunksRequest '
mode: CLAIM_MODE_PEEK
document_url: "http://example.com/other"
max_hamming_distance: 2
chunks { text: "short" }
chunks { text: "Second paragraph with different words entirely about gardening!" }'
seed chunks_bad_url 2 CheckChunksRequest '
document_url: "not a url"
chunks { text: "x" }'
seed results_simhash 3 DedupResultsRequest '
top_k: 2
hits { id: "a" text: "the cat sat on the mat" score: 0.9 source_url: "http://s/1" }
hits { id: "b" text: "The cat sat on the mat." score: 0.8 source_url: "http://s/1" }
hits { id: "c" text: "dogs bark at night" score: 0.7 source_url: "http://s/2" }
hits { id: "d" text: "birds sing in the morning" score: 0.6 }'
seed results_jaccard_embeddings 3 DedupResultsRequest '
top_k: 3
near_text_measure: NEAR_TEXT_MEASURE_JACCARD
min_jaccard: 0.5
min_cosine: 0.9
per_source_cap: 1
hits { id: "a" text: "one two three four five" score: 1 embedding: [1, 0, 0] source_url: "x" }
hits { id: "b" text: "one two three four six" score: 1 embedding: [0.99, 0.1, 0] source_url: "x" }
hits { id: "c" text: "seven eight nine" score: 0.5 embedding: [0, 1, 0] source_url: "y" }'
seed results_bad 3 DedupResultsRequest '
top_k: 0
hits { id: "" text: "" score: nan }'
seed results_rejected_hits 3 DedupResultsRequest '
hits { id: "a" text: "the cat sat on the mat" score: 0.9 embedding: [1, 0] }
hits { id: "b" text: "" score: 0.8 embedding: [1, 0] }
hits { id: "c" text: "dogs bark at night" score: nan embedding: [0, 1] }
hits { id: "d" text: "birds sing in the morning" score: 0.6 embedding: [0, 1, 0] }
hits { id: "e" text: "the cat sat on the mat" score: 0.5 }'
