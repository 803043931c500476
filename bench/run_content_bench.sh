#!/usr/bin/env bash
# run_content_bench.sh: CheckContent throughput against the real server
# binary on 127.0.0.1 with a fresh data dir, on a store that already holds
# --preload documents. With --store=redis_cluster, first through one
# dedupd --store=redis_cluster on a loopback Redis Cluster of 3 masters with
# --redis_replicas replicas each (bench/redis_cluster_lib.sh), then on the
# embedded store as above, in the same run.
#
# Phases (documents from dedupd_content_load, seed 1, disjoint ranges):
#   preload claim --preload new documents                         [0, P)
#   new     claim --measure new documents on the loaded store     [P, P+M)
#   mixed   claim --measure documents, every 2nd an exact repeat  [P+M, P+2M)
#   peek    peek --measure stored documents (all EXACT_DUPLICATE) [0, M)
# Prints each phase's checkcontent line (docs/benchmarks.md) followed by
#   server  phase=<p> cpu_secs=<c> cpu_us_per_doc=<u> rss_mb=<r>
# (the server's user+system CPU from the phase's first call to its last
# answer, per document), then
#   store  docs=<n> bytes=<b> bytes_per_doc=<y> peak_rss_mb=<z>
#   restart  docs=<n> secs_to_serving=<s>
# (the restart rebuilds the near-duplicate index from the store). With
# --store=redis_cluster the phases are named redis_cluster/<p> and
# rocksdb/<p>; each Redis phase adds
#   cluster phase=<p> cpu_secs=<c> cpu_us_per_doc=<u>
#           masters_cpu_us_per_doc=<m> commands_per_doc=<n>
#   (all redis-servers; the masters alone; commands the masters ran)
# and the Redis store prints, instead of its store line,
#   redis_memory docs=<n> used_memory_delta=<b> bytes_per_doc=<y>
#                keys_delta=<k> keys_per_doc=<z>
# (INFO memory used_memory and DBSIZE summed over the masters, over the
# preload, per preloaded document).
# Exits non-zero when a tool fails, a call fails, or a verdict count is wrong.
#
# Usage: bench/run_content_bench.sh [--build_dir=DIR] [--pages_dir=DIR]
#          [--measure=N] [--preload=N] [--batch=N] [--threads=N] [--tiny]
#          [--keep_data] [--store=rocksdb|redis_cluster]
#          [--redis_replicas=N] [--redis_key_kinds] [-- extra dedupd flags]
#   --build_dir  where dedupd was built (default: build)
#   --pages_dir  word source (default bench/corpus/pages, from
#                make_text_corpus.py; falls back to bench/corpus/sample_pages)
#   --measure    documents per measured phase (default 100000)
#   --preload    documents stored before them (default 1000000)
#   --batch      documents per call (default 100); --threads (default 4)
#   --tiny       CI size: --measure=500 --preload=1000
#   --store      redis_cluster: the Redis Cluster front end, then the
#                embedded store (default rocksdb: the embedded store only)
#   --redis_replicas  replicas per master (default 1; needs redis-server)
#   --redis_key_kinds after the fill, where Redis's memory goes: a
#                   redis_keys line per key kind (bench/redis_cluster_lib.sh,
#                   print_redis_key_kinds; a full SCAN, up to a minute more)
# Example:
#   bench/run_content_bench.sh --build_dir=build --preload=1000000
#   bench/run_content_bench.sh --build_dir=build-rel --store=redis_cluster --preload=100000
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build_dir="$here/../build"
pages_dir="$here/corpus/pages"
measure=100000
preload=1000000
batch=100
threads=4
keep_data=0
store=rocksdb
redis_replicas=1
redis_key_kinds=0
extra_flags=()
while (($#)); do
  case "$1" in
    --build_dir=*) build_dir=${1#*=} ;;
    --pages_dir=*) pages_dir=${1#*=} ;;
    --measure=*) measure=${1#*=} ;;
    --preload=*) preload=${1#*=} ;;
    --batch=*) batch=${1#*=} ;;
    --threads=*) threads=${1#*=} ;;
    --tiny) measure=500; preload=1000 ;;
    --keep_data) keep_data=1 ;;
    --store=*) store=${1#*=} ;;
    --redis_replicas=*) redis_replicas=${1#*=} ;;
    --redis_key_kinds) redis_key_kinds=1 ;;
    --) shift; extra_flags=("$@"); break ;;
    -h|--help) sed -n '2,52p' "$0"; exit 0 ;;
    *) echo "run_content_bench: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
for n in "$measure" "$preload" "$batch" "$threads"; do
  [[ "$n" =~ ^[0-9]+$ ]] && ((n > 0)) ||
    { echo "run_content_bench: not a positive count: $n" >&2; exit 2; }
done
[[ "$redis_replicas" =~ ^[0-9]+$ ]] ||
  { echo "run_content_bench: not a count: --redis_replicas=$redis_replicas" >&2; exit 2; }
case "$store" in
  rocksdb) stores=(rocksdb) ;;
  redis_cluster) stores=(redis_cluster rocksdb) ;;
  *) echo "run_content_bench: --store=$store: rocksdb or redis_cluster" >&2; exit 2 ;;
esac
((preload >= measure)) || preload=$measure
if ! compgen -G "$pages_dir/*.txt" >/dev/null; then pages_dir="$here/corpus/sample_pages"; fi

server_bin="$build_dir/server/dedupd"
load_bin="$build_dir/bench/dedupd_content_load"
needed=("$server_bin" "$load_bin")
[[ "$store" == redis_cluster ]] && needed+=(/usr/bin/redis-server /usr/bin/redis-cli)
for b in "${needed[@]}"; do
  [[ -x "$b" ]] || { echo "run_content_bench: $b missing (build it / apt-get install redis-server)" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/dedupd-content-bench.XXXXXX")
tool=run_content_bench
server_flags=()
# shellcheck source=bench/server_lib.sh
source "$here/server_lib.sh"
# shellcheck source=bench/redis_cluster_lib.sh
source "$here/redis_cluster_lib.sh"
trap 'stop_server; stop_redis; cleanup' EXIT
[[ "$store" == redis_cluster ]] && start_redis_cluster 3 "$redis_replicas"

echo "# dedupd content bench: batch=$batch threads=$threads measure=$measure" \
  "preload=$preload pages_dir=$pages_dir nproc=$(nproc)" \
  "loadavg=$(cut -d' ' -f1-3 /proc/loadavg) stores=${stores[*]}" \
  "redis_nodes=${redis_nodes[*]:-none} server_flags=${extra_flags[*]:-none}"

# run_phase NAME OFFSET DOCS MODE REPEAT_EVERY CHECK: one load phase and
# the server's CPU during it (and the cluster's, on Redis); CHECK is
# "FIELD=EXPECTED" on its line (e.g. new=1000), or empty. Phases are
# labelled $label_prefix$NAME.
last_line=""
label_prefix=""
run_phase() {
  local name=$1 offset=$2 docs=$3 mode=$4 repeat=$5 check=$6 line rc
  echo "# $label_prefix$name: $mode $docs documents from offset $offset (repeat_every=$repeat)"
  [[ "$current_store" == redis_cluster ]] && redis_phase_begin
  line=$(timeout --signal=TERM --kill-after=10 7200 "$load_bin" \
    --target="127.0.0.1:$port" --pages_dir="$pages_dir" --seed=1 \
    --offset="$offset" --docs="$docs" --batch="$batch" --threads="$threads" \
    --mode="$mode" --repeat_every="$repeat" --server_pid="$server_pid")
  rc=$?
  echo "$line"
  last_line=$line
  if ((rc != 0)) || [[ -z "$line" ]]; then
    echo "run_content_bench: $label_prefix$name: dedupd_content_load failed (status $rc)" >&2
    status=1
    return 1
  fi
  print_server_cpu "$label_prefix$name" "$line" "$docs" doc
  if [[ "$current_store" == redis_cluster ]]; then
    redis_phase_end "$label_prefix$name" "$docs" doc
  fi
  if [[ -n "$check" && " $line " != *" $check "* ]]; then
    echo "run_content_bench: $label_prefix$name: expected $check" >&2
    status=1
  fi
}

# run_store STORE: the four phases on a fresh store of kind STORE
# (rocksdb: a fresh data dir; redis_cluster: the running cluster, empty),
# its store or redis_memory line and the restart.
run_store() {
  local mem0 keys0 mem1 keys1 disk_bytes stored
  select_store "$1"
  start_server
  run_phase preload 0 "$preload" claim 0 "new=$preload"
  if [[ "$current_store" == redis_cluster ]]; then
    mem1=$(redis_used_memory)
    keys1=$(redis_keys)
    ((redis_key_kinds)) && print_redis_key_kinds doc "$preload"
  else
    disk_bytes=$(du -sb "$data_dir" | cut -f1)
  fi
  run_phase new "$preload" "$measure" claim 0 "new=$measure"
  run_phase mixed $((preload + measure)) "$measure" claim 2 "exact=$((measure / 2))"
  run_phase peek 0 "$measure" peek 0 "exact=$measure"
  stored=$((preload + measure + measure - measure / 2))

  if [[ "$current_store" == redis_cluster ]]; then
    print_redis_memory doc "$preload" "$mem0" "$mem1" "$keys0" "$keys1"
  else
    print_store doc "$preload" "$disk_bytes"
  fi
  stop_server
  print_restart doc "$stored"
  [[ "$current_store" == redis_cluster ]] && stop_redis
}

for s in "${stores[@]}"; do run_store "$s"; done
exit "$status"
