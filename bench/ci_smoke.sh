#!/usr/bin/env bash
# ci_smoke.sh: runs every benchmark tool at tiny size, so that none of them
# can rot unnoticed (ctest: bench_smoke, label bench). Numbers from this run
# mean nothing; only that each tool runs and prints its line does.
#
# Usage: bench/ci_smoke.sh BUILD_DIR
# Exits non-zero when any step fails; each step's output is shown.
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build_dir=${1:?usage: ci_smoke.sh BUILD_DIR}
build_dir=$(cd "$build_dir" && pwd)
sample="$here/corpus/sample_urls.txt"
tmp=$(mktemp -d "${TMPDIR:-/tmp}/dedupd-bench-smoke.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

failed=()
# step NAME PATTERN CMD...: runs CMD; fails when it exits non-zero or its
# stdout has no line matching PATTERN (the tool's fixed-format line).
step() {
  local name=$1 pattern=$2
  shift 2
  echo "== $name: $*"
  local out rc
  out=$("$@")
  rc=$?
  printf '%s\n' "$out"
  if ((rc != 0)); then
    echo "== $name: FAILED (exit status $rc)"
    failed+=("$name")
  elif ! grep -Eq "$pattern" <<<"$out"; then
    echo "== $name: FAILED (no line matching /$pattern/)"
    failed+=("$name")
  fi
}

step corpus_builder '^' \
  /usr/bin/python3 "$here/corpus/make_url_corpus.py" --size 1000 --out "$tmp/urls.txt"
if [[ -s "$tmp/urls.txt" && $(wc -l <"$tmp/urls.txt") -ne 1000 ]]; then
  echo "== corpus_builder: FAILED (expected 1000 lines)"
  failed+=(corpus_lines)
fi

step normalize_bench '^normalize  urls=2000 rounds=3 urls_per_sec=[0-9]+ ' \
  "$build_dir/bench/dedupd_normalize_bench" --rounds=3 --rule_counts "$sample"

step compare_normalizers '^ratio dedupd/w3lib=[0-9.]+$' \
  "$here/compare_normalizers.sh" --build_dir="$build_dir" --rounds=3 \
  --w3lib_rounds=1 "$sample"

step url_normalizer_benchmark 'BM_Normalize/Canonical' \
  "$build_dir/bench/dedupd_url_normalizer_benchmark" --benchmark_min_time=0.01

step run_url_bench '^store  urls=50000 ' \
  "$here/run_url_bench.sh" --build_dir="$build_dir" --tiny

# Needs redis-server and redis-cli (Debian's redis-server package).
if [[ -x /usr/bin/redis-server && -x /usr/bin/redis-cli ]]; then
  step run_redis_url_bench '^redis_memory urls=20000 ' \
    "$here/run_redis_url_bench.sh" --build_dir="$build_dir" --tiny
else
  echo "== run_redis_url_bench: skipped (no /usr/bin/redis-server or redis-cli)"
fi

step ab_url_servers '^ab_median  variant=B runs=1 ' \
  "$here/ab_url_servers.sh" --a="$build_dir/server/dedupd" --b="$build_dir/server/dedupd" \
  --b_flags=--worker_threads=2 --b_load_flags=--pregenerate=false \
  --load="$build_dir/bench/dedupd_url_load" --pairs=1 --urls=2000

step text_corpus_builder '^' \
  /usr/bin/python3 "$here/corpus/make_text_corpus.py" --max_pages 5 --out "$tmp/pages"
if [[ $(find "$tmp/pages" -name '*.txt' 2>/dev/null | wc -l) -ne 5 ]]; then
  echo "== text_corpus_builder: FAILED (expected 5 pages)"
  failed+=(text_corpus_pages)
fi

step simhash_quality \
  '^quality k=3 pairs=[0-9]+ near=[0-9]+ far=[0-9]+ between=[0-9]+ tp=[0-9]+ fp=[0-9]+ fn=[0-9]+ tn=[0-9]+ precision=([0-9.]+|nan) recall=([0-9.]+|nan)$' \
  "$build_dir/bench/dedupd_simhash_quality" --tiny \
  --pages_dir="$here/corpus/quality_sample_pages"

step simhash_quality_minhash \
  '^threshold measure=minhash min_jaccard=0.80 pairs=[0-9]+ near=[0-9]+ far=[0-9]+ tp=[0-9]+ fp=[0-9]+ fn=[0-9]+ precision=([0-9.]+|nan) recall=([0-9.]+|nan) .* negatives=[0-9]+ merged=[0-9]+$' \
  "$build_dir/bench/dedupd_simhash_quality" --tiny \
  --pages_dir="$here/corpus/quality_sample_pages"

step content_fingerprint_bench \
  '^fingerprint docs=5 bytes=[0-9]+ rounds=1 mb_per_sec=[0-9.]+ textbook_mb_per_sec=[0-9.]+ ratio=[0-9.]+ ' \
  "$build_dir/bench/dedupd_content_fingerprint_bench" --tiny \
  --pages_dir="$here/corpus/sample_pages"

step content_fingerprint_bench_minhash \
  '^minhash docs=5 rounds=1 with_minhash_mb_per_sec=[0-9.]+ .* minhash_ratio=[0-9.]+$' \
  "$build_dir/bench/dedupd_content_fingerprint_bench" --tiny \
  --pages_dir="$here/corpus/sample_pages"

step lsh_index_bench \
  '^lsh_index n=20000 bands=18 rows=7 bucket_bits=[0-9]+ queries=2000 bulk_insert_s=[0-9.]+ query_us=[0-9.]+ query_verify_us=[0-9.]+ .* index_bytes_per_text=[0-9.]+ signature_bytes_per_text=128$' \
  "$build_dir/bench/dedupd_lsh_index_bench" --sizes=20000 --queries=2000

step simhash_index_bench \
  '^simhash_index n=20000 k=3 queries=2000 query_us=[0-9.]+ .* exact=yes$' \
  "$build_dir/bench/dedupd_simhash_index_bench" --sizes=20000 --queries=2000 \
  --brute_queries=50 --inserts=1000 --mixed_insert_rate=20000

# With redis-server, the text benches run their Redis Cluster front end
# first (about 10 s more each: a 3 + 3 cluster's start), then the
# embedded store, and check the Redis part's line; the embedded store's
# failures still fail the step (exit status).
if [[ -x /usr/bin/redis-server && -x /usr/bin/redis-cli ]]; then
  step run_content_bench '^redis_memory docs=1000 ' \
    "$here/run_content_bench.sh" --build_dir="$build_dir" --tiny \
    --pages_dir="$here/corpus/sample_pages" --store=redis_cluster
  step run_chunk_bench '^redis_memory chunks=2000 ' \
    "$here/run_chunk_bench.sh" --build_dir="$build_dir" --tiny \
    --pages_dir="$here/corpus/sample_pages" --store=redis_cluster
else
  step run_content_bench '^restart  docs=[0-9]+ secs_to_serving=' \
    "$here/run_content_bench.sh" --build_dir="$build_dir" --tiny \
    --pages_dir="$here/corpus/sample_pages"
  step run_chunk_bench '^restart  chunks=[0-9]+ secs_to_serving=' \
    "$here/run_chunk_bench.sh" --build_dir="$build_dir" --tiny \
    --pages_dir="$here/corpus/sample_pages"
fi

step content_store_bench \
  '^content_store docs=3000 .* index_fps=3000 .*near_probe_us=[0-9.]+ forgets=[0-9]+ forget_ms=[0-9.]+$' \
  "$build_dir/bench/dedupd_content_store_bench" --dir="$tmp/content_store" \
  --docs=3000

step chunk_store_bench \
  '^chunk_store disk_bytes_per_chunk=[0-9.]+ texts=[0-9]+ index_bytes_per_text=[0-9.]+ text_id_map_bytes_per_text=[0-9.]+$' \
  "$build_dir/bench/dedupd_chunk_store_bench" --dir="$tmp/chunk_store" \
  --store_chunks=2000 --measure_docs=50 --resend_docs=60

step url_store_bench \
  '^url_store filter=on workload=mostly_seen stored=20000 claims=5000 claims_per_sec=[0-9]+ ' \
  "$build_dir/bench/dedupd_url_store_bench" --dir="$tmp/url_store" \
  --preload=20000 --measure=5000 --threads=2

step results_dedup_bench \
  '^results_dedup hits=1000 dims=1024 base_cosine=[0-9.]+ top_k=100 measure=simhash calls=20 mean_us=[0-9.]+ p50_us=[0-9.]+ p99_us=[0-9.]+ cpu_mean_us=[0-9.]+ kept=[0-9]+ ' \
  "$build_dir/bench/dedupd_results_dedup_bench" --tiny \
  --pages_dir="$here/corpus/sample_pages,$here/corpus/quality_sample_pages"

step chunk_quality \
  '^quality words=all k=3 pairs=[0-9]+ near=[0-9]+ between=[0-9]+ far=[0-9]+ precision=([0-9.]+|nan) unrelated=[0-9]+ unrelated_per_pair=[0-9.e+-]+ edits=[0-9]+ edits_near=[0-9]+ recall=([0-9.]+|nan) edits_found=([0-9.]+|nan)$' \
  "$build_dir/bench/dedupd_chunk_quality" --tiny --pages_dir="$here/corpus/sample_pages"

step chunk_quality_minhash \
  '^minhash words=all min_jaccard=0.80 pairs=[0-9]+ near=[0-9]+ between=[0-9]+ far=[0-9]+ precision=([0-9.]+|nan) edits=[0-9]+ edits_near=[0-9]+ recall=([0-9.]+|nan) .* edits_found=([0-9.]+|nan)$' \
  "$build_dir/bench/dedupd_chunk_quality" --tiny --pages_dir="$here/corpus/sample_pages"

step chunk_quality_exact \
  '^minhash words=all min_jaccard=0.80 verify=exact pairs=[0-9]+ near=[0-9]+ between=[0-9]+ far=[0-9]+ precision=([0-9.]+|nan) edits=[0-9]+ .* edits_found=([0-9.]+|nan)$' \
  "$build_dir/bench/dedupd_chunk_quality" --tiny --verify=exact --pages_dir="$here/corpus/sample_pages"

step chunk_quality_preamble_minhash \
  '^preamble pages=30 measure=minhash min_jaccard=0.80 chunks=[0-9]+ .* content_near_wrong=[0-9]+ ' \
  "$build_dir/bench/dedupd_chunk_quality" \
  --preamble_dir="$here/../tests/testdata/preamble"

step chunk_quality_preamble \
  '^preamble pages=30 k=3 rule=on chunks=[0-9]+ .* content_near_wrong=[0-9]+ ' \
  "$build_dir/bench/dedupd_chunk_quality" \
  --preamble_dir="$here/../tests/testdata/preamble"

step bloom_filter_bench \
  '^bloom keys=100000 bits_per_key=10.0 probes_k=7 memory_bytes=[0-9]+ insert_per_s=[0-9]+ probe_absent_per_s=[0-9]+ probe_present_per_s=[0-9]+ fp_rate_measured=[0-9.]+ fp_rate_blocked_theory=[0-9.]+ fp_rate_standard_theory=[0-9.]+ false_negatives=0$' \
  "$build_dir/bench/dedupd_bloom_filter_bench" --keys=100000 --bits_per_key=10 \
  --probes=100000

# With claim ids (the default) and 2 s leases, so both stay exercised.
step soak \
  '^soak_total secs=8 clients=2 kills=[1-9][0-9]* ops=[1-9][0-9]* .* lost=0 double_new=0 .* bad_reclaims=0 confirmed_twice=0 not_reoffered=0$' \
  "$build_dir/bench/dedupd_soak" --dedupd="$build_dir/server/dedupd" \
  --duration=8s --kill_every=3s --clients=2 --client_threads=1 --calls_per_sec=50 \
  --url_lease_seconds=2

if ((${#failed[@]})); then
  echo "ci_smoke: FAILED: ${failed[*]}"
  exit 1
fi
echo "ci_smoke: all benchmark tools ran"
