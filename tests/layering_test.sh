#!/usr/bin/env bash
# layering_test.sh: scripts/check_layering.sh fails on each kind of
# forbidden include and passes a tree without one. Each case builds a small
# source tree in a temporary directory and runs the check on it.
set -euo pipefail
check=$(cd "$(dirname "$0")/.." && pwd)/scripts/check_layering.sh
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

# run_case <name> <want exit code> <want text in stderr, or ""> <file=line>...
run_case() {
  local name=$1 want_rc=$2 want_text=$3
  shift 3
  local root="$tmp/$name"
  mkdir -p "$root"
  local spec
  for spec in "$@"; do
    mkdir -p "$root/$(dirname "${spec%%=*}")"
    printf '%s\n' "${spec#*=}" >> "$root/${spec%%=*}"
  done
  local rc=0 err
  err=$("$check" "$root" 2>&1 >/dev/null) || rc=$?
  if [[ $rc != "$want_rc" ]]; then
    echo "FAIL $name: exit $rc, want $want_rc ($err)"; failures=$((failures + 1)); return
  fi
  if [[ -n $want_text && $err != *"$want_text"* ]]; then
    echo "FAIL $name: stderr lacks '$want_text': $err"; failures=$((failures + 1)); return
  fi
  echo "ok   $name"
}

run_case clean 0 "" \
  'storage/rocksdb/store.cc=#include "rocksdb/db.h"' \
  'storage/redis/slots.cc=#include <hiredis/hiredis.h>' \
  'server/metrics.cc=#include "prometheus/counter.h"' \
  'server/service.cc=#include <grpcpp/grpcpp.h>' \
  'core/url/a.cc=#include "absl/strings/str_cat.h"'
run_case rocksdb_in_server 1 "server/engine.cc:1:" \
  'server/engine.cc=#include "rocksdb/db.h"'
run_case rocksdb_in_storage_root 1 "RocksDB included outside storage/rocksdb/" \
  'storage/plan/p.cc=#include <rocksdb/options.h>'
run_case hiredis_in_server 1 "hiredis included outside storage/redis/" \
  'server/engine.cc=#include <hiredis/hiredis.h>'
run_case hiredis_in_test_helpers 1 "tests/testing/r.cc:1:" \
  'tests/testing/r.cc=#include "hiredis/read.h"'
run_case prometheus_outside_metrics 1 "prometheus-cpp included outside" \
  'server/server.cc=#include "prometheus/registry.h"'
run_case grpc_in_core 1 "gRPC included in common/, core/ or storage/" \
  'core/text/t.h=#include <grpcpp/server.h>'
run_case grpc_in_storage 1 "gRPC included in" \
  'storage/memory/m.cc=#include "grpc/grpc.h"'
run_case absl_internal 1 "Abseil internal header included" \
  'tests/fuzz/f.cc=#include "absl/base/internal/endian.h"'
run_case absl_nested_internal 1 "Abseil internal header" \
  'client/c.cc=  #  include "absl/container/internal/raw_hash_set.h"'

if ((failures)); then
  echo "layering_test: $failures case(s) failed"
  exit 1
fi
echo "layering_test: all cases passed"
