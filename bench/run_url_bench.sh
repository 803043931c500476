#!/usr/bin/env bash
# run_url_bench.sh: CheckUrl throughput on an empty store and on a loaded
# store, against the real server binary on 127.0.0.1 with a fresh data dir.
#
# Phases (all synthetic URLs from dedupd_url_load, seed 1, disjoint ranges;
# the measured phases' requests are built before their clock starts):
#   empty   claim --measure new URLs, starting on the empty store  [0, M)
#   preload (only when --preload > --measure) claim new URLs until the
#           store holds --preload                                   [M, P)
#   (settle: wait, up to --settle_secs, until the server runs no flush or
#   compaction and has none pending, so that the loaded phase, like the
#   empty one, starts on an idle store and pays only for the background
#   work its own writes cause, not for the rest of the earlier phase's;
#   the same before the seen phase)
#   loaded  claim --measure new URLs, starting on the loaded store  [P, P+M)
#   seen    claim --seen URLs already stored (all SEEN)             [0, S)
# By default M = P = 10,000,000: the empty phase fills the empty store to
# 10M (its flushes and its compactions into a growing tree included), the
# loaded phase takes it from 10M to 20M; equal lengths, each long enough to
# hold many flush and compaction cycles ("sustained"). The first --first
# URLs of each (default 2,000,000: a few memtables, hardly any compaction
# yet on the empty store) are reported apart as well.
# Prints each phase's checkurl line (and checkurl_first line; see
# docs/benchmarks.md) and
#   server  phase=<p> cpu_secs=<s> cpu_us_per_url=<u> rss_mb=<r>
# (the server's CPU from the phase's first call to its last answer,
# background flushes and compactions included; phase empty_first and
# loaded_first: up to the first --first URLs' last answer); before the
# loaded and the seen phase
#   settle  secs=<s> idle=<yes|no> before=<loaded|seen> cpu_secs=<c>
# and at the end
#   ratio loaded/empty urls_per_sec=<x>
#   ratio_first loaded/empty urls_per_sec=<y> urls=<first>
#   debt  phase=<empty|loaded> settle_secs=<s> settle_cpu_secs=<c> cpu_us_per_url=<u>
#   ratio_debt loaded/empty urls_per_server_cpu_sec=<r>
#   store  urls=<n> bytes=<b> bytes_per_url=<y> peak_rss_mb=<z>
#   closed  urls=<n> bytes=<b> bytes_per_url=<y>
#   restart  urls=<n> secs_to_serving=<s>
# where settle's cpu_secs is the server's CPU while it waited: the flushes
# and compactions the phase before left behind. A phase's debt line adds
# that to the phase's own CPU (empty: only without a separate preload), the
# server's whole cost per URL of the phase, and ratio_debt compares the two
# (URLs per server CPU second, loaded over empty): the throughput ratio the
# server's work allows, whether or not the work fell inside the phase;
# store's bytes is `du -sb` of the data dir after the preload and the
# settle (WAL and unflushed memtables included: what the disk holds at that
# moment; without a settle it also counts the inputs of a compaction still
# running), urls the URLs stored then, and peak_rss_mb the server's VmHWM at the end;
# closed's are the same after the server stopped cleanly at the end of the
# phases (every memtable flushed, no compaction running, the URL filter
# file written), with every URL stored by then.
# Exits non-zero when a tool fails, a call fails, or a verdict count is wrong.
#
# Usage: bench/run_url_bench.sh [--build_dir=DIR] [--measure=N] [--preload=N]
#          [--first=N] [--seen=N] [--batch=N] [--threads=N] [--phase_secs=S]
#          [--settle_secs=S] [--tiny] [--keep_data] [-- extra dedupd flags,
#          e.g. --sync_writes=true]
#   --build_dir   where dedupd was built (default: build)
#   --measure     URLs per measured phase (default 10000000)
#   --preload     URLs in the store before the loaded phases (default
#                 10000000; raised to --measure when below it; equal: the
#                 empty phase is the preload)
#   --first       also report each measured phase's first N URLs (default
#                 2000000; 0, or not below --measure: not)
#   --seen        URLs in the all-seen phase (default 2000000; at most the
#                 URLs stored by then)
#   --batch       URLs per call (default 1000); --threads client threads (4)
#   --phase_secs  time bound of each phase (default 3600); the line then shows
#                 how many URLs were sent in that time
#   --settle_secs longest wait for the store to go idle before the loaded
#                 and the seen phase (default 300; 0: no wait, each then
#                 also pays for the earlier phase's pending compactions)
#   --tiny        CI size: --measure=20000 --preload=50000 --first=5000
#                 --seen=20000 --phase_secs=60
#   --keep_data   leave the data dir (its path is printed)
#   --claim_ids   every request carries a claim id (as the C++ client's do)
#   --lease_seconds=N  every claim leases its URLs for N seconds (0: none;
#                 longer than the run, so the seen phase finds them leased)
# The client pregenerates each measured phase's requests: about 230 bytes of
# its memory per URL (2.3 GB for --measure=10000000).
# Example (the README's figures):
#   bench/run_url_bench.sh --build_dir=build-rel
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build_dir="$here/../build"
measure=10000000
preload=10000000
first=2000000
seen=2000000
batch=1000
threads=4
phase_secs=3600
settle_secs=300
keep_data=0
load_flags=()
server_flags=()
while (($#)); do
  case "$1" in
    --build_dir=*) build_dir=${1#*=} ;;
    --measure=*) measure=${1#*=} ;;
    --preload=*) preload=${1#*=} ;;
    --first=*) first=${1#*=} ;;
    --seen=*) seen=${1#*=} ;;
    --batch=*) batch=${1#*=} ;;
    --threads=*) threads=${1#*=} ;;
    --phase_secs=*) phase_secs=${1#*=} ;;
    --settle_secs=*) settle_secs=${1#*=} ;;
    --tiny) measure=20000; preload=50000; first=5000; seen=20000; phase_secs=60 ;;
    --keep_data) keep_data=1 ;;
    --claim_ids) load_flags+=(--claim_ids) ;;
    --lease_seconds=*) load_flags+=("--lease_seconds=${1#*=}") ;;
    --) shift; server_flags=("$@"); break ;;
    -h|--help) sed -n '2,82p' "$0"; exit 0 ;;
    *) echo "run_url_bench: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
for n in "$measure" "$preload" "$first" "$seen" "$batch" "$threads" "$phase_secs" "$settle_secs"; do
  [[ "$n" =~ ^[0-9]+$ ]] || { echo "run_url_bench: not a count: $n" >&2; exit 2; }
done
((measure > 0 && seen > 0 && batch > 0 && threads > 0 && phase_secs > 0)) ||
  { echo "run_url_bench: sizes must be positive" >&2; exit 2; }
((preload >= measure)) || preload=$measure
((first < measure)) || first=0
((seen <= preload)) || seen=$preload  # the seen phase claims [0, seen)

server_bin="$build_dir/server/dedupd"
load_bin="$build_dir/bench/dedupd_url_load"
ctl_bin="$build_dir/client/dedupctl"
for b in "$server_bin" "$load_bin" "$ctl_bin"; do
  [[ -x "$b" ]] || { echo "run_url_bench: $b not built" >&2; exit 1; }
done

work=$(mktemp -d "${TMPDIR:-/tmp}/dedupd-url-bench.XXXXXX")
tool=run_url_bench
# shellcheck source=bench/server_lib.sh
source "$here/server_lib.sh"
start_server

echo "# dedupd url bench: batch=$batch threads=$threads measure=$measure" \
  "preload=$preload nproc=$(nproc) loadavg=$(cut -d' ' -f1-3 /proc/loadavg)" \
  "server_flags=${server_flags[*]:-none} load_flags=${load_flags[*]:-none}"

approximate=0
for f in "${server_flags[@]}"; do
  [[ "$f" == --url_seen_mode=approximate ]] && approximate=1
done

# run_phase NAME EXPECT OFFSET URLS [LOAD FLAGS]: runs one load phase,
# prints its line (and its checkurl_first line, when asked for with
# --first_urls), and checks that every URL got the EXPECTed verdict (new or
# seen). Sets last_line and first_line.
last_line=""
first_line=""
run_phase() {
  local name=$1 expect=$2 offset=$3 urls=$4 out rc
  shift 4
  echo "# $name: claim $urls URLs from synthetic offset $offset (expect all $expect)"
  out=$(timeout --signal=TERM --kill-after=10 $((phase_secs + 120)) \
    "$load_bin" --target="127.0.0.1:$port" --synthetic --seed=1 \
    --offset="$offset" --urls="$urls" --seconds="$phase_secs" \
    --batch="$batch" --threads="$threads" --mode=claim --server_pid="$server_pid" \
    ${load_flags[@]+"${load_flags[@]}"} "$@")
  rc=$?
  last_line=$(grep '^checkurl ' <<<"$out")
  first_line=$(grep '^checkurl_first ' <<<"$out")
  echo "$last_line"
  if ((rc != 0)) || [[ -z "$last_line" ]]; then
    echo "run_url_bench: $name: dedupd_url_load failed (status $rc)" >&2
    status=1
    return 1
  fi
  local sent got
  sent=$(field urls "$last_line")
  print_server_cpu "$name" "$last_line" "${sent:-0}" url
  if [[ -n "$first_line" ]]; then
    echo "$first_line"
    print_server_cpu "${name}_first" "$first_line" "$(field urls "$first_line")" url
  fi
  got=$(field "$expect" "$last_line")
  if ((approximate)); then
    # The approximate seen-set answers SEEN_PROBABLY instead of SEEN, and a
    # false positive answers a new URL SEEN_PROBABLY: counted, not an error.
    if [[ "$expect" == seen ]]; then
      got=$(field seen_probably "$last_line")
    elif [[ "$sent" != "$got" ]]; then
      echo "# $name: $((sent - got)) of $sent new URLs answered seen_probably (false positives: skipped)"
      got=$sent
    fi
  fi
  if [[ "$sent" != "$got" ]]; then
    echo "run_url_bench: $name: $expect=$got but urls=$sent" >&2
    status=1
  fi
  if ((sent < urls)); then
    echo "run_url_bench: $name: time bound hit after $sent of $urls URLs" >&2
  fi
}

first_flags=()
((first > 0)) && first_flags=(--first_urls="$first")
run_phase empty new 0 "$measure" "${first_flags[@]}"
empty_rate=$(field urls_per_sec "$last_line")
empty_first_rate=$(field urls_per_sec "$first_line")
stored=$(field new "$last_line")
if ((preload > measure)); then
  # Not a figure: built as it goes, not held in memory all at once.
  run_phase preload new "$measure" $((preload - measure)) --pregenerate=false
  stored=$((stored + $(field new "$last_line")))
fi
# settle PHASE [CPU0]: polls the server's Stats (dedupctl admin stats) until
# it runs no flush or compaction and estimates no pending compaction bytes
# in two polls in a row (0.5 s apart: universal compaction estimates no
# pending bytes, and one merge may start right after another ends), for at
# most --settle_secs, before PHASE. CPU0: the server's total CPU at the end
# of the phase before (its load line's server_cpu_total_secs), so that what
# the server ran while the load tool exited counts too.
# Sets settle_secs_taken and settle_cpu (the server's CPU meanwhile: the
# flushes and compactions the earlier phases left, on one or two threads).
settle_secs_taken=0
settle_cpu=0
server_cpu() {
  awk -v t="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); print ($12 + $13) / t }' \
    "/proc/$server_pid/stat" 2>/dev/null || echo 0
}
settle() {
  local start idle=no stats running flushes pending cpu0=${2:-} quiet=0
  start=$(date +%s.%N)
  [[ -n "$cpu0" && "$cpu0" != -* ]] || cpu0=$(server_cpu)
  while :; do
    stats=$("$ctl_bin" admin stats --server="127.0.0.1:$port" 2>/dev/null) || break
    running=$(grep -o '"num_running_compactions":"[0-9]*' <<<"$stats" | grep -o '[0-9]*$')
    flushes=$(grep -o '"num_running_flushes":"[0-9]*' <<<"$stats" | grep -o '[0-9]*$')
    pending=$(grep -o '"estimate_pending_compaction_bytes":"[0-9]*' <<<"$stats" | grep -o '[0-9]*$')
    if [[ "$running" == 0 && "$flushes" == 0 && "$pending" == 0 ]]; then
      quiet=$((quiet + 1))
      if ((quiet >= 2)); then
        idle=yes
        break
      fi
    else
      quiet=0
    fi
    awk -v a="$start" -v b="$(date +%s.%N)" -v m="$settle_secs" 'BEGIN { exit !(b - a < m) }' || break
    sleep 0.5
  done
  settle_secs_taken=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
  settle_cpu=$(awk -v a="$cpu0" -v b="$(server_cpu)" 'BEGIN { printf "%.2f", b - a }')
  echo "settle  secs=$settle_secs_taken idle=$idle before=$1 cpu_secs=$settle_cpu"
}
# debt_line PHASE LINE: the phase's server CPU plus that of the settle
# after it (the flushes and compactions it left), per URL:
#   debt  phase=<p> settle_secs=<s> settle_cpu_secs=<c> cpu_us_per_url=<u>
debt_line() {
  awk -v p="$1" -v c="$(field server_cpu_secs "$2")" -v n="$(field urls "$2")" \
    -v s="$settle_secs_taken" -v d="$settle_cpu" 'BEGIN {
    printf "debt  phase=%s settle_secs=%s settle_cpu_secs=%s cpu_us_per_url=%.2f\n",
      p, s, d, (n > 0 ? (c + d) * 1e6 / n : 0) }'
}
# The empty phase's line, or the preload's when there was one.
before_loaded_line=$last_line
empty_debt=""
if ((settle_secs > 0)); then
  settle loaded "$(field server_cpu_total_secs "$before_loaded_line")"
  # The settle pays for the empty phase's leftover work only when there was
  # no separate preload.
  ((preload > measure)) || empty_debt=$(debt_line empty "$before_loaded_line")
fi
disk_bytes=$(du -sb "$data_dir" | cut -f1)
run_phase loaded new "$preload" "$measure" "${first_flags[@]}"
loaded_rate=$(field urls_per_sec "$last_line")
loaded_first_rate=$(field urls_per_sec "$first_line")
loaded_new=$(field new "$last_line")
loaded_line=$last_line
loaded_debt=""
if ((settle_secs > 0)); then
  settle seen "$(field server_cpu_total_secs "$loaded_line")"
  loaded_debt=$(debt_line loaded "$loaded_line")
fi
run_phase seen seen 0 "$seen"

awk -v l="${loaded_rate:-0}" -v e="${empty_rate:-0}" 'BEGIN {
  printf "ratio loaded/empty urls_per_sec=%.2f\n", (e > 0 ? l / e : 0) }'
if [[ -n "$empty_first_rate" && -n "$loaded_first_rate" ]]; then
  awk -v l="${loaded_first_rate:-0}" -v e="${empty_first_rate:-0}" -v n="$first" 'BEGIN {
    printf "ratio_first loaded/empty urls_per_sec=%.2f urls=%d\n", (e > 0 ? l / e : 0), n }'
fi
[[ -n "$empty_debt" ]] && echo "$empty_debt"
[[ -n "$loaded_debt" ]] && echo "$loaded_debt"
if [[ -n "$empty_debt" && -n "$loaded_debt" ]]; then
  awk -v e="$(field cpu_us_per_url "$empty_debt")" -v l="$(field cpu_us_per_url "$loaded_debt")" 'BEGIN {
    printf "ratio_debt loaded/empty urls_per_server_cpu_sec=%.2f\n", (l > 0 ? e / l : 0) }'
fi
print_store url "${stored:-0}" "$disk_bytes"
# Restart on the loaded store: the time from exec to serving must not grow
# with the store (nothing is rebuilt at startup).
stop_server
closed_bytes=$(du -sb "$data_dir" | cut -f1)
awk -v n="$((stored + ${loaded_new:-0}))" -v b="$closed_bytes" 'BEGIN {
  printf "closed  urls=%d bytes=%d bytes_per_url=%.1f\n", n, b, (n > 0 ? b / n : 0) }'
print_restart url "${stored:-0}"
exit "$status"
