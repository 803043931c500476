# server_lib.sh: the benchmark scripts' one way to run the real dedupd on
# 127.0.0.1 with a fresh data dir. Source it after setting:
#   tool         the calling script's name, for messages
#   server_bin   the dedupd binary
#   work         a scratch directory (removed on exit unless keep_data=1)
#   server_flags an array of extra dedupd flags
#   keep_data    0 or 1
# It sets data_dir, port_file, server_log and status (0; 1 after a server
# failure), installs the EXIT trap, and defines start_server (sets
# server_pid and port), stop_server, field NAME LINE (a NAME=value field
# of a fixed-format line), print_server_cpu, print_store and print_restart.
data_dir="$work/data"
port_file="$work/port"
server_log="$work/server.log"
server_pid=""
status=0

stop_server() {
  [[ -n "$server_pid" ]] || return 0
  if kill -0 "$server_pid" 2>/dev/null; then
    kill -TERM "$server_pid" 2>/dev/null
    # dedupd drains for up to --drain_timeout (10 s) and closes the store.
    for _ in $(seq 1 300); do
      kill -0 "$server_pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$server_pid" 2>/dev/null; then
      echo "$tool: server did not exit 30 s after SIGTERM; SIGKILL" >&2
      kill -KILL "$server_pid" 2>/dev/null
      status=1
    fi
  fi
  wait "$server_pid" 2>/dev/null
  local rc=$?
  if ((rc != 0)); then
    echo "$tool: server exited with status $rc; log tail:" >&2
    tail -n 20 "$server_log" >&2
    status=1
  fi
  server_pid=""
}
cleanup() {
  stop_server
  if ((keep_data)); then
    echo "# data dir kept: $data_dir"
  else
    rm -rf "$work"
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# setpriv --pdeathsig: if the script is killed outright (SIGKILL, e.g. by a
# ctest timeout), the kernel sends the server SIGTERM, so it cannot outlive
# it. setpriv execs the server, so $! is the server's own pid.
launcher=()
if command -v setpriv >/dev/null; then launcher=(setpriv --pdeathsig TERM --); fi
# start_server: starts dedupd on $data_dir and waits (up to 60 s) for its
# port file; sets server_pid and port.
start_server() {
  rm -f "$port_file"
  "${launcher[@]}" "$server_bin" --listen=127.0.0.1:0 --data_dir="$data_dir" \
    --port_file="$port_file" "${server_flags[@]}" 2>>"$server_log" &
  server_pid=$!
  for _ in $(seq 1 6000); do
    [[ -s "$port_file" ]] && break
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.01
  done
  if [[ ! -s "$port_file" ]]; then
    echo "$tool: server did not write its port within 60 s; log:" >&2
    cat "$server_log" >&2
    exit 1
  fi
  port=$(<"$port_file")
}
field() { sed -n "s/.* $1=\(-\{0,1\}[0-9.]*\).*/\1/p" <<<"$2"; }

# print_server_cpu PHASE LINE ITEMS UNIT: the line
#   server  phase=<p> cpu_secs=<s> cpu_us_per_<unit>=<u> rss_mb=<r>
# for a phase whose load tool LINE (run with --server_pid) reports
# server_cpu_secs: the server's CPU from the phase's first call to its last
# answer, for ITEMS items.
print_server_cpu() {
  local secs
  secs=$(field server_cpu_secs "$2")
  if [[ -z "$secs" || "$secs" == -* ]]; then
    echo "$tool: $1: the load tool could not read the server's CPU (pid $server_pid)" >&2
    status=1
    echo "server  phase=$1 cpu_secs=-1 cpu_us_per_$4=-1"
    return
  fi
  awk -v p="$1" -v c="$secs" -v n="$3" -v u="$4" \
    -v r="$(awk '/^VmRSS:/ {print $2}' "/proc/$server_pid/status" 2>/dev/null)" 'BEGIN {
    printf "server  phase=%s cpu_secs=%.2f cpu_us_per_%s=%.1f rss_mb=%.1f\n",
      p, c, u, (n > 0 ? c * 1e6 / n : 0), r / 1024 }'
}

# print_store UNIT N BYTES: the store line of N stored UNITs (url, doc,
# chunk) taking BYTES on disk, with the running server's peak RSS:
#   store  <unit>s=N bytes=BYTES bytes_per_<unit>=<y> peak_rss_mb=<z>
print_store() {
  local rss_kb
  rss_kb=$(awk '/^VmHWM:/ {print $2}' "/proc/$server_pid/status" 2>/dev/null)
  awk -v u="$1" -v n="$2" -v b="$3" -v r="${rss_kb:-0}" 'BEGIN {
    printf "store  %ss=%d bytes=%d bytes_per_%s=%.1f peak_rss_mb=%.1f\n",
      u, n, b, u, (n > 0 ? b / n : 0), r / 1024 }'
}

# print_restart UNIT N: with the server stopped, starts it on the same data
# dir and prints how long it took to serve a store of N UNITs, then the
# end line, and stops it:
#   restart  <unit>s=N secs_to_serving=<s>
print_restart() {
  local restart_start restart_end
  restart_start=$(date +%s.%N)
  start_server
  restart_end=$(date +%s.%N)
  awk -v u="$1" -v n="$2" -v a="$restart_start" -v b="$restart_end" 'BEGIN {
    printf "restart  %ss=%d secs_to_serving=%.3f\n", u, n, b - a }'
  echo "# end loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"
  stop_server
}
