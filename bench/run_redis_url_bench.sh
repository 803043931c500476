#!/usr/bin/env bash
# run_redis_url_bench.sh: CheckUrl claims through one dedupd front end on a
# Redis Cluster (--store=redis_cluster), and through the embedded RocksDB
# store in the same run, for comparison.
#
# Starts a 3-master Redis Cluster on 127.0.0.1 (bench/redis_cluster_lib.sh:
# redis-server processes at free ports, no replicas, no persistence: the
# figures are the front end's and Redis's work per claim, not disk's),
# stopped by PID at exit; every wait is bounded. Then:
#   redis    one dedupd --store=redis_cluster; dedupd_url_load claims --urls
#            new synthetic URLs (batch --batch, --threads threads)
#   redis2   a second front end beside the first on the same cluster; two
#            dedupd_url_load at once, one per front end, each claiming half
#            of --urls other new URLs with --threads threads: the check of
#            the scaling model (docs/benchmarks.md)
#   rocksdb  one dedupd on a fresh data dir (the default store), the same
#            URLs
# Prints each phase's checkurl line, and
#   server  phase=<p> cpu_secs=<s> cpu_us_per_url=<u> rss_mb=<r>
#   cluster phase=redis cpu_secs=<s> cpu_us_per_url=<u>  (the 3 redis-servers)
#           masters_cpu_us_per_url=<u> (the same: no replicas) commands_per_url=<c>
#   redis_memory urls=<n> used_memory_delta=<b> bytes_per_url=<y>
#                keys_delta=<k> keys_per_url=<z> (INFO memory used_memory
#                and DBSIZE summed over the masters, after minus before)
#   two_front_ends urls=<n> secs=<s> urls_per_sec=<r> front_end_cpu_us_per_url=<f>
#                (both front ends) cluster_cpu_us_per_url=<c>
# Exits non-zero when a tool fails or a verdict count is wrong.
#
# Usage: bench/run_redis_url_bench.sh [--build_dir=DIR] [--urls=N]
#          [--batch=N] [--threads=N] [--tiny] [-- extra dedupd flags]
#   --build_dir  where dedupd and dedupd_url_load were built (default: build)
#   --urls       URLs claimed per phase (default 1000000); --tiny: 20000
# Example (docs/benchmarks.md, "Redis Cluster front end"):
#   bench/run_redis_url_bench.sh --build_dir=build-rel --urls=1000000
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build_dir="$here/../build"
urls=1000000
batch=1000
threads=4
keep_data=0
extra_flags=()
while (($#)); do
  case "$1" in
    --build_dir=*) build_dir=${1#*=} ;;
    --urls=*) urls=${1#*=} ;;
    --batch=*) batch=${1#*=} ;;
    --threads=*) threads=${1#*=} ;;
    --tiny) urls=20000 ;;
    --) shift; extra_flags=("$@"); break ;;
    -h|--help) sed -n '2,28p' "$0"; exit 0 ;;
    *) echo "run_redis_url_bench: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
for n in "$urls" "$batch" "$threads"; do
  [[ "$n" =~ ^[1-9][0-9]*$ ]] || { echo "run_redis_url_bench: not a positive count: $n" >&2; exit 2; }
done
server_bin="$build_dir/server/dedupd"
load_bin="$build_dir/bench/dedupd_url_load"
for b in "$server_bin" "$load_bin" /usr/bin/redis-server /usr/bin/redis-cli; do
  [[ -x "$b" ]] || { echo "run_redis_url_bench: $b missing (build it / apt-get install redis-server)" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/dedupd-redis-bench.XXXXXX")
tool=run_redis_url_bench
server_flags=()
# shellcheck source=bench/server_lib.sh
source "$here/server_lib.sh"

# shellcheck source=bench/redis_cluster_lib.sh
source "$here/redis_cluster_lib.sh"
second_pid=""
stop_second() {
  [[ -n "$second_pid" ]] || return 0
  kill -TERM "$second_pid" 2>/dev/null
  for _ in $(seq 1 100); do kill -0 "$second_pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$second_pid" 2>/dev/null
  wait "$second_pid" 2>/dev/null
  second_pid=""
}
trap 'stop_second; stop_server; stop_redis; ((keep_data)) || rm -rf "$work"' EXIT

start_redis_cluster 3 0
nodes=("${redis_nodes[@]}")

echo "# dedupd redis url bench: urls=$urls batch=$batch threads=$threads nproc=$(nproc)" \
  "loadavg=$(cut -d' ' -f1-3 /proc/loadavg) cluster=${nodes[*]} (3 masters, no replicas)"

# run_phase NAME: claims [0, urls) through the running server; prints the
# load line and the server line; sets last_line.
run_phase() {
  local out rc sent got
  echo "# $1: claim $urls new URLs"
  out=$(timeout --signal=TERM --kill-after=10 3600 "$load_bin" --target="127.0.0.1:$port" \
    --synthetic --seed=1 --offset=0 --urls="$urls" --batch="$batch" --threads="$threads" \
    --mode=claim --server_pid="$server_pid")
  rc=$?
  last_line=$(grep '^checkurl ' <<<"$out")
  echo "$last_line"
  if ((rc != 0)) || [[ -z "$last_line" ]]; then
    echo "$tool: $1: dedupd_url_load failed (status $rc)" >&2
    status=1
    return 1
  fi
  sent=$(field urls "$last_line")
  got=$(field new "$last_line")
  [[ "$sent" == "$got" ]] || { echo "$tool: $1: new=$got but urls=$sent" >&2; status=1; }
  print_server_cpu "$1" "$last_line" "${sent:-0}" url
}

mem0=$(redis_used_memory)
keys0=$(redis_keys)
server_flags=(--store=redis_cluster "--redis_nodes=$(IFS=,; echo "${nodes[*]}")" "${extra_flags[@]}")
start_server
redis_phase_begin
run_phase redis
redis_phase_end redis "$urls" url
print_redis_memory url "$urls" "$mem0" "$(redis_used_memory)" "$keys0" "$(redis_keys)"

# redis2: a second front end on the same cluster, both loaded at once with
# URLs not claimed yet ([urls, 2 * urls), half through each).
first_pid=$server_pid
first_port=$port
port_file="$work/port2"
server_log="$work/server2.log"
start_server
second_pid=$server_pid
second_port=$port
server_pid=$first_pid
port=$first_port
half=$((urls / 2))
# claim_half PORT PID OFFSET OUT: $half new URLs from OFFSET through the
# front end at PORT (pid PID), the load tool's output to OUT.
claim_half() {
  timeout --signal=TERM --kill-after=10 3600 "$load_bin" --target="127.0.0.1:$1" \
    --synthetic --seed=1 --offset="$3" --urls="$half" --batch="$batch" --threads="$threads" \
    --mode=claim --server_pid="$2" >"$4"
}
echo "# redis2: two front ends, $half new URLs through each at once"
cpu0=$(redis_cpu)
out1="$work/redis2-a.out"
out2="$work/redis2-b.out"
claim_half "$first_port" "$first_pid" "$urls" "$out1" &
load1=$!
claim_half "$second_port" "$second_pid" $((urls + half)) "$out2" &
load2=$!
wait "$load1"; rc1=$?
wait "$load2"; rc2=$?
cpu1=$(redis_cpu)
line1=$(grep '^checkurl ' "$out1")
line2=$(grep '^checkurl ' "$out2")
echo "$line1"
echo "$line2"
if ((rc1 != 0 || rc2 != 0)) || [[ -z "$line1" || -z "$line2" ]]; then
  echo "$tool: redis2: dedupd_url_load failed (status $rc1, $rc2)" >&2
  status=1
else
  for l in "$line1" "$line2"; do
    [[ "$(field new "$l")" == "$(field urls "$l")" ]] ||
      { echo "$tool: redis2: new=$(field new "$l") but urls=$(field urls "$l")" >&2; status=1; }
  done
  awk -v s1="$(field secs "$line1")" -v s2="$(field secs "$line2")" \
    -v c1="$(field server_cpu_secs "$line1")" -v c2="$(field server_cpu_secs "$line2")" \
    -v a="$cpu0" -v b="$cpu1" -v n="$((2 * half))" 'BEGIN {
    s = s1 > s2 ? s1 : s2
    printf "two_front_ends urls=%d secs=%.2f urls_per_sec=%.0f front_end_cpu_us_per_url=%.1f cluster_cpu_us_per_url=%.1f\n",
      n, s, n / s, (c1 + c2) * 1e6 / n, (b - a) * 1e6 / n }'
fi
stop_second
port_file="$work/port"
server_log="$work/server.log"
stop_server
stop_redis

server_flags=("${extra_flags[@]}")
start_server
run_phase rocksdb
echo "# end loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"
exit "$status"
