#!/usr/bin/env bash
# check_layering.sh: fails (exit 1) when a source file includes what its
# folder may not (docs/design.md, "Code layout"). CMake cannot enforce
# include rules when every header sits in /usr/include, so this grep does;
# the test suite runs it (ctest test `layering`).
#   - RocksDB headers only in storage/rocksdb/
#   - hiredis headers only in storage/redis/
#   - prometheus-cpp only in server/metrics.cc
#   - no gRPC in common/, core/ or storage/
#   - no Abseil internal/ header anywhere
# Usage: scripts/check_layering.sh [source root, default: the repository]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
status=0

# violation <description> <grep -E pattern> <paths...>: every matching
# include line under <paths> is one violation (file:line: text).
violation() {
  local what=$1 pattern=$2
  shift 2
  local hits
  hits=$(grep -rnHE --include='*.h' --include='*.cc' "$pattern" "$@" 2>/dev/null || true)
  if [[ -n $hits ]]; then
    echo "layering: $what:" >&2
    echo "$hits" | sed 's/^/  /' >&2
    status=1
  fi
}

include='^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"]'
sources=(common core storage server client tests bench)
others=()
for d in "${sources[@]}"; do
  [[ -d $d ]] && others+=("$d")
done

# RocksDB outside storage/rocksdb/.
mapfile -t not_rocksdb < <(find "${others[@]}" -type f \( -name '*.h' -o -name '*.cc' \) \
  -not -path 'storage/rocksdb/*' | sort)
violation "RocksDB included outside storage/rocksdb/" "${include}rocksdb/" "${not_rocksdb[@]}"

# hiredis outside storage/redis/: the Redis Cluster router owns the
# connections; everything else sees absl::Status and the store seams.
mapfile -t not_redis < <(find "${others[@]}" -type f \( -name '*.h' -o -name '*.cc' \) \
  -not -path 'storage/redis/*' | sort)
violation "hiredis included outside storage/redis/" "${include}hiredis/" "${not_redis[@]}"

# prometheus-cpp outside server/metrics.cc.
mapfile -t not_metrics < <(find "${others[@]}" -type f \( -name '*.h' -o -name '*.cc' \) \
  -not -path 'server/metrics.cc' | sort)
violation "prometheus-cpp included outside server/metrics.cc" "${include}prometheus/" "${not_metrics[@]}"

# gRPC in the layers below the server.
lower=()
for d in common core storage; do [[ -d $d ]] && lower+=("$d"); done
violation "gRPC included in common/, core/ or storage/" "${include}grpc(pp)?[/+]" "${lower[@]}"

# Abseil internal headers (not a public API; they change without notice).
violation "Abseil internal header included" "${include}absl/([a-z_]+/)*internal/" "${others[@]}"

if ((status == 0)); then
  echo "layering: ok"
fi
exit "$status"
