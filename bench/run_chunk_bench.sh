#!/usr/bin/env bash
# run_chunk_bench.sh: CheckChunks throughput against the real server binary
# on 127.0.0.1 with a fresh data dir, on a store that already holds
# --store_chunks chunks (>= 50,000 chunks/s, ~500-byte chunks, 20
# per request, on a store of 1,000,000 chunks). With --store=redis_cluster,
# first through one dedupd --store=redis_cluster on a loopback Redis
# Cluster of 3 masters with --redis_replicas replicas each
# (bench/redis_cluster_lib.sh), then on the embedded store, in the same run.
#
# Phases (documents of dedupd_chunk_load, seed 1; F = store_chunks / 20):
#   fill     claim documents [0, F): the store then holds --store_chunks
#   measure  claim --measure new documents [F, F+M) on the filled store,
#            bounded by --measure_secs
#   resend   claim --resend documents [0, R) again: each replaces its own
#            20 stored chunks (0: skipped)
# Prints each phase's checkchunks line (docs/benchmarks.md) followed by
#   server  phase=<p> cpu_secs=<c> cpu_us_per_chunk=<u> rss_mb=<r>
# (the server process's user+system CPU from the phase's first call to its
# last answer, per answered chunk), then
#   store  chunks=<n> bytes=<b> bytes_per_chunk=<y> peak_rss_mb=<z>
#   restart  chunks=<n> secs_to_serving=<s>
# (bytes: du of the data dir after the fill; the restart reopens the store).
# With --store=redis_cluster the phases are named redis_cluster/<p> and
# rocksdb/<p>; each Redis phase adds
#   cluster phase=<p> cpu_secs=<c> cpu_us_per_chunk=<u>
#           masters_cpu_us_per_chunk=<m> commands_per_chunk=<n>
#   (all redis-servers; the masters alone; commands the masters ran)
# and the Redis store prints, instead of its store line,
#   redis_memory chunks=<n> used_memory_delta=<b> bytes_per_chunk=<y>
#                keys_delta=<k> keys_per_chunk=<z>
# (INFO memory used_memory and DBSIZE summed over the masters, over the
# fill, per chunk the fill sent).
# Exits non-zero when a tool fails, a call fails, or a count is wrong.
#
# Usage: bench/run_chunk_bench.sh [--build_dir=DIR] [--pages_dir=DIR]
#          [--store_chunks=N] [--measure=N] [--measure_secs=S] [--resend=N]
#          [--threads=N] [--tiny] [--keep_data]
#          [--store=rocksdb|redis_cluster] [--redis_replicas=N] [--redis_key_kinds]
#          [-- extra dedupd flags]
#   --build_dir     where dedupd was built (default: build)
#   --pages_dir     page corpus (default bench/corpus/pages, from
#                   make_text_corpus.py; falls back to bench/corpus/sample_pages)
#   --store_chunks  chunks stored by the fill (default 1000000)
#   --measure       new documents in the measure phase (default 20000)
#   --measure_secs  its time bound (default 120); every phase is also
#                   bounded by --phase_secs (default 3600)
#   --resend        documents re-sent (default 5000; 0: no resend phase)
#   --threads       client threads, one call in flight each (default 4)
#   --chunk_bytes   ChunkText's max_bytes (default 640: chunks average ~500
#                   bytes on the page corpus, the target size; 500 gives ~390)
#   --tiny          CI size: --store_chunks=2000 --measure=100 --resend=50
#                   --phase_secs=60
#   --store         redis_cluster: the Redis Cluster front end, then the
#                   embedded store (default rocksdb: the embedded store only)
#   --redis_replicas  replicas per master (default 1; needs redis-server)
#   --redis_key_kinds after the fill, where Redis's memory goes: a
#                   redis_keys line per key kind (bench/redis_cluster_lib.sh,
#                   print_redis_key_kinds; a full SCAN, up to a minute more)
# Example:
#   bench/run_chunk_bench.sh --build_dir=build --store_chunks=1000000
#   bench/run_chunk_bench.sh --build_dir=build-rel --store=redis_cluster --store_chunks=200000
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build_dir="$here/../build"
pages_dir="$here/corpus/pages"
store_chunks=1000000
measure=20000
measure_secs=120
resend=5000
threads=4
chunk_bytes=640
phase_secs=3600
keep_data=0
store=rocksdb
redis_replicas=1
redis_key_kinds=0
extra_flags=()
while (($#)); do
  case "$1" in
    --build_dir=*) build_dir=${1#*=} ;;
    --pages_dir=*) pages_dir=${1#*=} ;;
    --store_chunks=*) store_chunks=${1#*=} ;;
    --measure=*) measure=${1#*=} ;;
    --measure_secs=*) measure_secs=${1#*=} ;;
    --resend=*) resend=${1#*=} ;;
    --threads=*) threads=${1#*=} ;;
    --chunk_bytes=*) chunk_bytes=${1#*=} ;;
    --phase_secs=*) phase_secs=${1#*=} ;;
    --tiny) store_chunks=2000; measure=100; resend=50; phase_secs=60 ;;
    --keep_data) keep_data=1 ;;
    --store=*) store=${1#*=} ;;
    --redis_replicas=*) redis_replicas=${1#*=} ;;
    --redis_key_kinds) redis_key_kinds=1 ;;
    --) shift; extra_flags=("$@"); break ;;
    -h|--help) sed -n '2,61p' "$0"; exit 0 ;;
    *) echo "run_chunk_bench: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
for n in "$store_chunks" "$measure" "$measure_secs" "$resend" "$threads" "$chunk_bytes" \
  "$phase_secs" "$redis_replicas"; do
  [[ "$n" =~ ^[0-9]+$ ]] || { echo "run_chunk_bench: not a count: $n" >&2; exit 2; }
done
((store_chunks >= 20 && measure > 0 && measure_secs > 0 && threads > 0 && phase_secs > 0)) ||
  { echo "run_chunk_bench: --store_chunks >= 20, other counts > 0" >&2; exit 2; }
case "$store" in
  rocksdb) stores=(rocksdb) ;;
  redis_cluster) stores=(redis_cluster rocksdb) ;;
  *) echo "run_chunk_bench: --store=$store: rocksdb or redis_cluster" >&2; exit 2 ;;
esac
fill_docs=$(((store_chunks + 19) / 20))
((resend <= fill_docs)) || resend=$fill_docs
if ! compgen -G "$pages_dir/*.txt" >/dev/null; then pages_dir="$here/corpus/sample_pages"; fi

server_bin="$build_dir/server/dedupd"
load_bin="$build_dir/bench/dedupd_chunk_load"
needed=("$server_bin" "$load_bin")
[[ "$store" == redis_cluster ]] && needed+=(/usr/bin/redis-server /usr/bin/redis-cli)
for b in "${needed[@]}"; do
  [[ -x "$b" ]] || { echo "run_chunk_bench: $b missing (build it / apt-get install redis-server)" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/dedupd-chunk-bench.XXXXXX")
tool=run_chunk_bench
server_flags=()
# shellcheck source=bench/server_lib.sh
source "$here/server_lib.sh"
# shellcheck source=bench/redis_cluster_lib.sh
source "$here/redis_cluster_lib.sh"
trap 'stop_server; stop_redis; cleanup' EXIT
[[ "$store" == redis_cluster ]] && start_redis_cluster 3 "$redis_replicas"

echo "# dedupd chunk bench: threads=$threads chunk_bytes=$chunk_bytes store_chunks=$store_chunks measure=$measure" \
  "measure_secs=$measure_secs resend=$resend pages_dir=$pages_dir nproc=$(nproc)" \
  "loadavg=$(cut -d' ' -f1-3 /proc/loadavg) stores=${stores[*]}" \
  "redis_nodes=${redis_nodes[*]:-none} server_flags=${extra_flags[*]:-none}"

last_line=""
label_prefix=""

# run_phase NAME CHECK ARGS...: one dedupd_chunk_load phase and the
# server's CPU during it (and the cluster's, on Redis). CHECK is a list of
# "FIELD=EXPECTED" (may be empty) that the phase's line must contain.
# Phases are labelled $label_prefix$NAME.
run_phase() {
  local name=$1 check=$2 line rc chunks
  shift 2
  [[ "$current_store" == redis_cluster ]] && redis_phase_begin
  line=$(timeout --signal=TERM --kill-after=10 $((phase_secs + 120)) "$load_bin" \
    --target="127.0.0.1:$port" --pages_dir="$pages_dir" --seed=1 --phase="$name" \
    --store_chunks="$store_chunks" --threads="$threads" --chunk_bytes="$chunk_bytes" \
    --seconds="$phase_secs" --server_pid="$server_pid" "$@")
  rc=$?
  echo "$line"
  last_line=$line
  if ((rc != 0)) || [[ -z "$line" ]]; then
    echo "run_chunk_bench: $label_prefix$name: dedupd_chunk_load failed (status $rc)" >&2
    status=1
    return 1
  fi
  chunks=$(field chunks "$line")
  print_server_cpu "$label_prefix$name" "$line" "${chunks:-0}" chunk
  if [[ "$current_store" == redis_cluster ]]; then
    redis_phase_end "$label_prefix$name" "${chunks:-0}" chunk
  fi
  local want
  for want in $check invalid=0 errors=0; do
    if [[ " $line " != *" $want "* ]]; then
      echo "run_chunk_bench: $label_prefix$name: expected $want" >&2
      status=1
    fi
  done
}

# run_store STORE: the phases on a fresh store of kind STORE (rocksdb: a
# fresh data dir; redis_cluster: the running cluster, empty), its store or
# redis_memory line and the restart.
run_store() {
  local mem0 keys0 mem1 keys1 disk_bytes stored measured
  select_store "$1"
  start_server
  # The fill's chunks: whole documents of 20, so store_chunks rounded up.
  stored=$((fill_docs * 20))
  run_phase fill "chunks=$stored"
  if [[ "$current_store" == redis_cluster ]]; then
    mem1=$(redis_used_memory)
    keys1=$(redis_keys)
    ((redis_key_kinds)) && print_redis_key_kinds chunk "$stored"
  else
    disk_bytes=$(du -sb "$data_dir" | cut -f1)
  fi
  run_phase measure "" --docs="$measure" --seconds="$measure_secs"
  measured=$(field chunks "$last_line")
  if ((resend > 0)); then
    run_phase resend "chunks=$((resend * 20)) replaced=$((resend * 20))" --docs="$resend"
  fi

  if [[ "$current_store" == redis_cluster ]]; then
    print_redis_memory chunk "$stored" "$mem0" "$mem1" "$keys0" "$keys1"
  else
    print_store chunk "$stored" "$disk_bytes"
  fi
  stop_server
  print_restart chunk "$((stored + ${measured:-0}))"
  [[ "$current_store" == redis_cluster ]] && stop_redis
}

for s in "${stores[@]}"; do run_store "$s"; done
exit "$status"
