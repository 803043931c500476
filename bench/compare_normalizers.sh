#!/usr/bin/env bash
# compare_normalizers.sh: dedupd's URL normalizer against w3lib's
# canonicalize_url on the same URL file, in the same run. Prints the two
# tools' lines and then
#
#   ratio dedupd/w3lib=<x>
#
# (urls_per_sec of dedupd over urls_per_sec of w3lib; both single-threaded).
#
# Usage: bench/compare_normalizers.sh [--build_dir=DIR] [--rounds=N]
#            [--w3lib_rounds=N] CORPUS
#   --build_dir     where dedupd was built (default: build)
#   --rounds        timed rounds of dedupd_normalize_bench (default 3)
#   --w3lib_rounds  timed rounds of w3lib_bench.py (default 1; it is ~50x slower)
# Example:
#   bench/compare_normalizers.sh --build_dir=build bench/corpus/urls.txt
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
build_dir="$here/../build"
rounds=3
w3lib_rounds=1
corpus=""
for arg in "$@"; do
  case "$arg" in
    --build_dir=*) build_dir=${arg#*=} ;;
    --rounds=*) rounds=${arg#*=} ;;
    --w3lib_rounds=*) w3lib_rounds=${arg#*=} ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    -*) echo "compare_normalizers: unknown flag $arg" >&2; exit 2 ;;
    *) corpus=$arg ;;
  esac
done
if [[ -z "$corpus" || ! -r "$corpus" ]]; then
  echo "compare_normalizers: need a readable URL file (got '${corpus}')" >&2
  exit 2
fi
bench="$build_dir/bench/dedupd_normalize_bench"
if [[ ! -x "$bench" ]]; then
  echo "compare_normalizers: $bench not built (ninja -C $build_dir dedupd_normalize_bench)" >&2
  exit 1
fi

# `python3` on PATH may be another interpreter without the Debian w3lib.
dedupd_line=$("$bench" --rounds="$rounds" "$corpus" 2>/dev/null)
w3lib_line=$(/usr/bin/python3 "$here/w3lib_bench.py" --rounds "$w3lib_rounds" "$corpus")
echo "$dedupd_line"
echo "$w3lib_line"

rate() { sed -n 's/.* urls_per_sec=\([0-9.]*\).*/\1/p' <<<"$1"; }
d=$(rate "$dedupd_line")
w=$(rate "$w3lib_line")
if [[ -z "$d" || -z "$w" ]]; then
  echo "compare_normalizers: could not read urls_per_sec from the lines above" >&2
  exit 1
fi
awk -v d="$d" -v w="$w" 'BEGIN { printf "ratio dedupd/w3lib=%.1f\n", d / w }'
