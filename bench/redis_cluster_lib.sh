# shellcheck shell=bash
# redis_cluster_lib.sh: the benchmark scripts' one way to run a Redis
# Cluster on 127.0.0.1 and to account for its CPU and memory. Source it
# after server_lib.sh (it uses `tool` and `work`), and call stop_redis from
# the EXIT trap.
#
# start_redis_cluster MASTERS REPLICAS: starts MASTERS * (1 + REPLICAS)
#   redis-server processes at free ports (each also needs port + 10000, its
#   cluster bus), no persistence (the figures are the front end's and
#   Redis's work per item, not disk's), joins them with `redis-cli
#   --cluster create --cluster-replicas REPLICAS`, and waits (bounded) until
#   every node reports cluster_state:ok and every replica's link to its
#   master is up. Sets redis_pids, redis_ports, redis_nodes (HOST:PORT of
#   every node), redis_master_ports and redis_master_pids; exits the script
#   on failure.
# stop_redis: kills the nodes by PID (nothing on them is kept).
# redis_cpu [PID...]: user + system CPU seconds so far of the redis-server
#   processes PID... (default: every node, masters and replicas).
# redis_used_memory: INFO memory used_memory summed over the masters, in
#   bytes, once every replica has acknowledged its master's writes (bounded
#   wait), so that the replication buffers are drained.
# redis_keys: DBSIZE summed over the masters.
# redis_commands: INFO stats total_commands_processed summed over the
#   masters (it counts the commands a Lua script runs, one each).
# redis_phase_begin, then redis_phase_end LABEL N UNIT after a phase of N
#   UNITs: the line
#   cluster phase=<label> cpu_secs=<s> cpu_us_per_<unit>=<u>
#           masters_cpu_us_per_<unit>=<m> commands_per_<unit>=<c>
#   (cpu: every node's, replicas included; masters: the masters' alone, the
#   difference being replication's share; commands: what the masters ran,
#   those run inside Lua scripts included, and a few of them this
#   script's INFO calls).
# print_redis_memory UNIT N MEM0 MEM1 KEYS0 KEYS1: the line
#   redis_memory <unit>s=N used_memory_delta=<b> bytes_per_<unit>=<y>
#                keys_delta=<k> keys_per_<unit>=<z>
# print_redis_key_kinds UNIT N: where the memory goes, one line per key
#   kind (below).
# select_store STORE: sets current_store=STORE, server_flags (extra_flags,
#   after --store=redis_cluster and the nodes for redis_cluster) and, when
#   the run has more than one store (stores), label_prefix=STORE/; for
#   redis_cluster also mem0 and keys0, the masters' memory and keys before
#   the phases (the caller declares them local).
redis_pids=()
redis_ports=()
redis_nodes=()
redis_master_ports=()
redis_master_pids=()

stop_redis() {
  local pid
  for pid in "${redis_pids[@]}"; do kill -KILL "$pid" 2>/dev/null; done
  for pid in "${redis_pids[@]}"; do wait "$pid" 2>/dev/null; done
  redis_pids=()
}

# redis_free_port: a port P with P and P + 10000 (its cluster bus) both
# free on 127.0.0.1.
redis_free_port() {
  python3 - <<'EOF'
import random, socket
for _ in range(200):
    p = random.randint(20000, 40000)
    ok = True
    for q in (p, p + 10000):
        s = socket.socket()
        try:
            s.bind(("127.0.0.1", q))
        except OSError:
            ok = False
        finally:
            s.close()
    if ok:
        print(p)
        break
EOF
}

start_redis_cluster() {
  local masters=$1 replicas=$2 count i p d ok
  count=$((masters * (1 + replicas)))
  for ((i = 0; i < count; i++)); do
    p=$(redis_free_port)
    [[ -n "$p" ]] || { echo "$tool: no free port" >&2; exit 1; }
    d="$work/redis$i"
    mkdir -p "$d"
    /usr/bin/redis-server --bind 127.0.0.1 --port "$p" --cluster-enabled yes \
      --cluster-config-file "$d/nodes.conf" --dir "$d" --save '' --appendonly no \
      --protected-mode no --logfile "$d/log" &
    redis_pids+=($!)
    redis_ports+=("$p")
    redis_nodes+=("127.0.0.1:$p")
  done
  for p in "${redis_ports[@]}"; do
    for _ in $(seq 1 100); do
      /usr/bin/redis-cli -p "$p" ping >/dev/null 2>&1 && break
      sleep 0.1
    done
  done
  # redis-cli makes the first `masters` nodes masters and assigns the rest.
  timeout 60 /usr/bin/redis-cli --cluster create "${redis_nodes[@]}" \
    --cluster-replicas "$replicas" --cluster-yes >"$work/create.log" 2>&1 ||
    { echo "$tool: redis-cli --cluster create failed:" >&2; cat "$work/create.log" >&2; exit 1; }
  for _ in $(seq 1 300); do
    ok=0
    for p in "${redis_ports[@]}"; do
      /usr/bin/redis-cli -p "$p" cluster info 2>/dev/null | grep -q 'cluster_state:ok' || continue
      if /usr/bin/redis-cli -p "$p" info replication 2>/dev/null | grep -q '^role:slave'; then
        /usr/bin/redis-cli -p "$p" info replication | grep -q '^master_link_status:up' || continue
      fi
      ok=$((ok + 1))
    done
    ((ok == count)) && break
    sleep 0.1
  done
  ((ok == count)) || { echo "$tool: cluster not ok (replicas linked) within 30 s" >&2; exit 1; }
  for i in "${!redis_ports[@]}"; do
    p=${redis_ports[$i]}
    if /usr/bin/redis-cli -p "$p" info replication | grep -q '^role:master'; then
      redis_master_ports+=("$p")
      redis_master_pids+=("${redis_pids[$i]}")
    fi
  done
  ((${#redis_master_ports[@]} == masters)) ||
    { echo "$tool: expected $masters masters, found ${#redis_master_ports[@]}" >&2; exit 1; }
}

redis_cpu() {
  local pid pids=("$@")
  ((${#pids[@]})) || pids=("${redis_pids[@]}")
  for pid in "${pids[@]}"; do cat "/proc/$pid/stat"; done |
    awk -v t="$(getconf CLK_TCK)" '{ sub(/.*\) /, ""); s += $12 + $13 } END { print s / t }'
}

# redis_wait_replicas: until every master's replicas have acknowledged its
# replication offset (up to 30 s; then the reading is taken anyway).
redis_wait_replicas() {
  local p info behind
  for _ in $(seq 1 300); do
    behind=0
    for p in "${redis_master_ports[@]}"; do
      info=$(/usr/bin/redis-cli -p "$p" info replication | tr -d '\r')
      # slave<i>:ip=...,offset=<o>,... lines come before master_repl_offset.
      awk -F'[:,=]' '/^master_repl_offset:/ { m = $2 + 0 }
        /^slave[0-9]+:/ { for (i = 1; i < NF; i++) if ($i == "offset") o[++n] = $(i + 1) + 0 }
        END { for (j = 1; j <= n; j++) if (o[j] < m) exit 1 }' <<<"$info" || behind=1
    done
    ((behind == 0)) && return 0
    sleep 0.1
  done
  echo "$tool: replicas still behind after 30 s" >&2
}

redis_used_memory() {
  local total=0 p m
  redis_wait_replicas
  for p in "${redis_master_ports[@]}"; do
    m=$(/usr/bin/redis-cli -p "$p" info memory | tr -d '\r' | sed -n 's/^used_memory:\([0-9]*\)$/\1/p')
    total=$((total + m))
  done
  echo "$total"
}

redis_keys() {
  local total=0 p
  for p in "${redis_master_ports[@]}"; do
    total=$((total + $(/usr/bin/redis-cli -p "$p" dbsize | tr -d '\r')))
  done
  echo "$total"
}

redis_commands() {
  local total=0 p
  for p in "${redis_master_ports[@]}"; do
    total=$((total + $(/usr/bin/redis-cli -p "$p" info stats | tr -d '\r' |
      sed -n 's/^total_commands_processed:\([0-9]*\)$/\1/p')))
  done
  echo "$total"
}

redis_phase_begin() {
  redis_phase_cpu0=$(redis_cpu)
  redis_phase_masters0=$(redis_cpu "${redis_master_pids[@]}")
  redis_phase_commands0=$(redis_commands)
}

redis_phase_end() {
  awk -v p="$1" -v n="$2" -v u="$3" -v a="$redis_phase_cpu0" -v b="$(redis_cpu)" \
    -v ma="$redis_phase_masters0" -v mb="$(redis_cpu "${redis_master_pids[@]}")" \
    -v ca="$redis_phase_commands0" -v cb="$(redis_commands)" 'BEGIN {
    if (n <= 0) n = 1
    printf "cluster phase=%s cpu_secs=%.2f cpu_us_per_%s=%.1f masters_cpu_us_per_%s=%.1f commands_per_%s=%.1f\n",
      p, b - a, u, (b - a) * 1e6 / n, u, (mb - ma) * 1e6 / n, u, (cb - ca) / n }'
}

print_redis_memory() {
  awk -v u="$1" -v n="$2" -v a="$3" -v b="$4" -v k0="$5" -v k1="$6" 'BEGIN {
    printf "redis_memory %ss=%d used_memory_delta=%d bytes_per_%s=%.1f keys_delta=%d keys_per_%s=%.2f\n",
      u, n, b - a, u, (n > 0 ? (b - a) / n : 0), k1 - k0, u, (n > 0 ? (k1 - k0) / n : 0) }'
}

# print_redis_key_kinds UNIT N: one line per key kind (the key's part
# between its first and second ':', e.g. c, f, lb under the default
# prefix dedupd:) over the masters:
#   redis_keys kind=<k> keys=<n> keys_per_<unit>=<x> bytes_per_key=<b>
#              bytes_per_<unit>=<y>
# keys: counted by a full SCAN; bytes_per_key: the mean MEMORY USAGE (the
# key, its value and their allocations; not the keyspace's own hash table)
# of every s-th key, s chosen so that at most 50,000 keys per master are
# measured (-1 for a kind none of whose keys was measured);
# bytes_per_<unit>: keys * bytes_per_key / N.
print_redis_key_kinds() {
  local p n step
  for p in "${redis_master_ports[@]}"; do
    /usr/bin/redis-cli -p "$p" --scan >"$work/keys.$p"
    n=$(wc -l <"$work/keys.$p")
    step=$(((n + 49999) / 50000))
    ((step > 0)) || step=1
    awk -v s="$step" 'NR % s == 0' "$work/keys.$p" >"$work/sample.$p"
    awk '{ printf "MEMORY USAGE \"%s\" SAMPLES 0\n", $0 }' "$work/sample.$p" |
      timeout 600 /usr/bin/redis-cli -p "$p" >"$work/usage.$p"
    awk '{ split($0, a, ":"); print "count", a[2] }' "$work/keys.$p"
    # A key gone since the scan (a lease) answers nil: an empty line.
    paste -d' ' "$work/sample.$p" "$work/usage.$p" |
      awk 'NF >= 2 && $NF ~ /^[0-9]+$/ { split($1, a, ":"); print "usage", a[2], $NF }'
  done | awk -v u="$1" -v n="$2" '
    $1 == "count" { c[$2]++ }
    $1 == "usage" { s[$2] += $3; m[$2]++ }
    END {
      for (k in c) {
        # A kind with no key in the sample (a single counter) shows -1.
        b = m[k] ? s[k] / m[k] : -1
        printf "redis_keys kind=%s keys=%d keys_per_%s=%.2f bytes_per_key=%.1f bytes_per_%s=%.1f\n",
          k, c[k], u, (n > 0 ? c[k] / n : 0), b, u, (n > 0 && b > 0 ? c[k] * b / n : 0)
      }
    }' | sort
}

select_store() {
  current_store=$1
  if [[ "$current_store" == redis_cluster ]]; then
    server_flags=(--store=redis_cluster "--redis_nodes=$(IFS=,; echo "${redis_nodes[*]}")"
      "${extra_flags[@]}")
    mem0=$(redis_used_memory)
    keys0=$(redis_keys)
  else
    server_flags=("${extra_flags[@]}")
  fi
  ((${#stores[@]} > 1)) && label_prefix="$current_store/"
  return 0
}
