#!/usr/bin/env bash
# run_content_bench.sh: CheckContent throughput against the real server
# binary on 127.0.0.1 with a fresh data dir, on a store that already holds
# --preload documents.
#
# Phases (documents from dedupd_content_load, seed 1, disjoint ranges):
#   preload claim --preload new documents                         [0, P)
#   new     claim --measure new documents on the loaded store     [P, P+M)
#   mixed   claim --measure documents, every 2nd an exact repeat  [P+M, P+2M)
#   peek    peek --measure stored documents (all EXACT_DUPLICATE) [0, M)
# Prints each phase's checkcontent line (docs/benchmarks.md), then
#   store  docs=<n> bytes=<b> bytes_per_doc=<y> peak_rss_mb=<z>
#   restart  docs=<n> secs_to_serving=<s>
# (the restart rebuilds the near-duplicate index from the store).
# Exits non-zero when a tool fails, a call fails, or a verdict count is wrong.
#
# Usage: bench/run_content_bench.sh [--build_dir=DIR] [--pages_dir=DIR]
#          [--measure=N] [--preload=N] [--batch=N] [--threads=N] [--tiny]
#          [--keep_data] [-- extra dedupd flags]
#   --build_dir  where dedupd was built (default: build)
#   --pages_dir  word source (default bench/corpus/pages, from
#                make_text_corpus.py; falls back to bench/corpus/sample_pages)
#   --measure    documents per measured phase (default 100000)
#   --preload    documents stored before them (default 1000000)
#   --batch      documents per call (default 100); --threads (default 4)
#   --tiny       CI size: --measure=500 --preload=1000
# Example:
#   bench/run_content_bench.sh --build_dir=build --preload=1000000
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build_dir="$here/../build"
pages_dir="$here/corpus/pages"
measure=100000
preload=1000000
batch=100
threads=4
keep_data=0
server_flags=()
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
    --) shift; server_flags=("$@"); break ;;
    -h|--help) sed -n '2,30p' "$0"; exit 0 ;;
    *) echo "run_content_bench: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
for n in "$measure" "$preload" "$batch" "$threads"; do
  [[ "$n" =~ ^[0-9]+$ ]] && ((n > 0)) ||
    { echo "run_content_bench: not a positive count: $n" >&2; exit 2; }
done
((preload >= measure)) || preload=$measure
if ! compgen -G "$pages_dir/*.txt" >/dev/null; then pages_dir="$here/corpus/sample_pages"; fi

server_bin="$build_dir/server/dedupd"
load_bin="$build_dir/bench/dedupd_content_load"
for b in "$server_bin" "$load_bin"; do
  [[ -x "$b" ]] || { echo "run_content_bench: $b not built" >&2; exit 1; }
done
work=$(mktemp -d "${TMPDIR:-/tmp}/dedupd-content-bench.XXXXXX")
tool=run_content_bench
# shellcheck source=bench/server_lib.sh
source "$here/server_lib.sh"
start_server

echo "# dedupd content bench: batch=$batch threads=$threads measure=$measure" \
  "preload=$preload pages_dir=$pages_dir nproc=$(nproc)" \
  "loadavg=$(cut -d' ' -f1-3 /proc/loadavg) server_flags=${server_flags[*]:-none}"

# run_phase NAME OFFSET DOCS MODE REPEAT_EVERY CHECK: one load phase; CHECK
# is "FIELD=EXPECTED" on its line (e.g. new=1000), or empty.
last_line=""
run_phase() {
  local name=$1 offset=$2 docs=$3 mode=$4 repeat=$5 check=$6 line rc
  echo "# $name: $mode $docs documents from offset $offset (repeat_every=$repeat)"
  line=$(timeout --signal=TERM --kill-after=10 7200 "$load_bin" \
    --target="127.0.0.1:$port" --pages_dir="$pages_dir" --seed=1 \
    --offset="$offset" --docs="$docs" --batch="$batch" --threads="$threads" \
    --mode="$mode" --repeat_every="$repeat")
  rc=$?
  echo "$line"
  last_line=$line
  if ((rc != 0)) || [[ -z "$line" ]]; then
    echo "run_content_bench: $name: dedupd_content_load failed (status $rc)" >&2
    status=1
    return 1
  fi
  if [[ -n "$check" && " $line " != *" $check "* ]]; then
    echo "run_content_bench: $name: expected $check" >&2
    status=1
  fi
}

run_phase preload 0 "$preload" claim 0 "new=$preload"
disk_bytes=$(du -sb "$data_dir" | cut -f1)
run_phase new "$preload" "$measure" claim 0 "new=$measure"
run_phase mixed $((preload + measure)) "$measure" claim 2 "exact=$((measure / 2))"
run_phase peek 0 "$measure" peek 0 "exact=$measure"
stored=$((preload + measure + measure - measure / 2))

print_store doc "$preload" "$disk_bytes"
stop_server
print_restart doc "$stored"
exit "$status"
