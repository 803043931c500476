#!/usr/bin/env bash
# ab_url_servers.sh: CheckUrl claims on a fresh store, two variants
# alternated (A, B, A, B, ...), for comparisons on a machine whose speed
# drifts: each run starts the variant's dedupd on 127.0.0.1 with an empty
# data dir, sends --urls synthetic URLs (dedupd_url_load, batches of
# --batch, --threads threads) and stops it. A variant is a dedupd binary
# plus extra dedupd flags and extra dedupd_url_load flags, so two builds,
# two server settings or two load settings can be compared. Prints one
# line per run:
#   ab  variant=<A|B> run=<i> urls_per_sec=<x> p50_ms=<a> p99_ms=<b> server_us_per_url=<s> client_us_per_url=<c>
# then, per variant, the median of each figure over its runs:
#   ab_median  variant=<A|B> runs=<n> urls_per_sec=<x> server_us_per_url=<s> client_us_per_url=<c>
# server_us_per_url: the server's CPU (every thread) from the first call to
# the last answer (dedupd_url_load --server_pid), per URL.
# Exits non-zero when a run fails or a verdict count is wrong.
#
# Usage: bench/ab_url_servers.sh --a=DEDUPD --b=DEDUPD [--a_flags="..."]
#          [--b_flags="..."] [--a_load_flags="..."] [--b_load_flags="..."]
#          [--load=URL_LOAD] [--pairs=N] [--urls=N] [--batch=N] [--threads=N]
#   --a, --b            the two dedupd binaries (may be the same)
#   --a_flags, --b_flags
#                       extra dedupd flags for that variant (words)
#   --a_load_flags, --b_load_flags
#                       extra dedupd_url_load flags for that variant
#   --load              dedupd_url_load (default: build/bench/dedupd_url_load)
#   --pairs             A/B pairs (default 7); --urls per run (1000000);
#   --batch (1000); --threads (4)
# Example:
#   bench/ab_url_servers.sh --a=/tmp/old/dedupd --b=build-rel/server/dedupd \
#       --load=build-rel/bench/dedupd_url_load --pairs=7
#   bench/ab_url_servers.sh --a=build-rel/server/dedupd --b=build-rel/server/dedupd \
#       --b_flags=--worker_threads=2 --load=build-rel/bench/dedupd_url_load
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
a_bin="" b_bin="" a_flags="" b_flags="" a_load="" b_load=""
load_bin="$here/../build/bench/dedupd_url_load"
pairs=7 urls=1000000 batch=1000 threads=4
while (($#)); do
  case "$1" in
    --a=*) a_bin=${1#*=} ;;
    --b=*) b_bin=${1#*=} ;;
    --a_flags=*) a_flags=${1#*=} ;;
    --b_flags=*) b_flags=${1#*=} ;;
    --a_load_flags=*) a_load=${1#*=} ;;
    --b_load_flags=*) b_load=${1#*=} ;;
    --load=*) load_bin=${1#*=} ;;
    --pairs=*) pairs=${1#*=} ;;
    --urls=*) urls=${1#*=} ;;
    --batch=*) batch=${1#*=} ;;
    --threads=*) threads=${1#*=} ;;
    -h|--help) sed -n '2,32p' "$0"; exit 0 ;;
    *) echo "ab_url_servers: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
for n in "$pairs" "$urls" "$batch" "$threads"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "ab_url_servers: not a positive count: $n" >&2; exit 2; }
done
for b in "$a_bin" "$b_bin" "$load_bin"; do
  [[ -n "$b" && -x "$b" ]] || { echo "ab_url_servers: not an executable: '$b' (see --help)" >&2; exit 2; }
done

tool=ab_url_servers
keep_data=0
server_flags=()
work=$(mktemp -d "${TMPDIR:-/tmp}/dedupd-ab.XXXXXX")
# shellcheck source=bench/server_lib.sh
source "$here/server_lib.sh"

declare -A figures  # "<variant> <figure>" -> space-separated values
# run VARIANT BIN SERVER_FLAGS LOAD_FLAGS I: one run on a fresh store.
run() {
  local variant=$1 i=$5 line rc
  server_bin=$2
  read -r -a server_flags <<<"$3"
  rm -rf "$data_dir"
  start_server
  # shellcheck disable=SC2086  # the variant's load flags are words
  line=$("$load_bin" --target="127.0.0.1:$port" --synthetic --seed=1 --urls="$urls" \
    --batch="$batch" --threads="$threads" --mode=claim --server_pid="$server_pid" $4)
  rc=$?
  stop_server
  if ((rc != 0)) || [[ "$(field new "$line")" != "$urls" ]]; then
    echo "$tool: $variant run $i: dedupd_url_load failed or not all new: $line" >&2
    status=1
    return
  fi
  local ups server client
  ups=$(field urls_per_sec "$line")
  server=$(awk -v c="$(field server_cpu_secs "$line")" -v n="$urls" 'BEGIN { printf "%.2f", c * 1e6 / n }')
  client=$(awk -v c="$(field client_cpu_secs "$line")" -v n="$urls" 'BEGIN { printf "%.2f", c * 1e6 / n }')
  echo "ab  variant=$variant run=$i urls_per_sec=$ups p50_ms=$(field p50_ms "$line") p99_ms=$(field p99_ms "$line")" \
    "server_us_per_url=$server client_us_per_url=$client"
  figures["$variant urls_per_sec"]+="$ups "
  figures["$variant server_us_per_url"]+="$server "
  figures["$variant client_us_per_url"]+="$client "
}
median() { tr ' ' '\n' <<<"$1" | sed '/^$/d' | sort -g | awk '{ v[NR] = $1 } END {
  print (NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2) }'; }

echo "# ab_url_servers: a=$a_bin [$a_flags] ($a_load) b=$b_bin [$b_flags] ($b_load)" \
  "pairs=$pairs urls=$urls" \
  "batch=$batch threads=$threads loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"
for ((i = 1; i <= pairs; ++i)); do
  run A "$a_bin" "$a_flags" "$a_load" "$i"
  run B "$b_bin" "$b_flags" "$b_load" "$i"
done
for v in A B; do
  echo "ab_median  variant=$v runs=$(wc -w <<<"${figures["$v urls_per_sec"]:-}")" \
    "urls_per_sec=$(median "${figures["$v urls_per_sec"]:-}")" \
    "server_us_per_url=$(median "${figures["$v server_us_per_url"]:-}")" \
    "client_us_per_url=$(median "${figures["$v client_us_per_url"]:-}")"
done
exit "$status"
