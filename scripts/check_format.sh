#!/usr/bin/env bash
# check_format.sh: fails (exit 1) when a C++ source file differs from what
# clang-format makes of it with the repository's .clang-format (Google
# style, 100 columns). The test suite runs it (ctest test `format`); to fix,
# run clang-format -i on the files it names.
# Usage: scripts/check_format.sh [source root, default: the repository]
set -euo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root"
if ! command -v clang-format >/dev/null; then
  echo "check_format: clang-format is not installed (scripts/install-deps.sh installs it)" >&2
  exit 1
fi
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  mapfile -t files < <(git ls-files -- '*.h' '*.cc')
else
  mapfile -t files < <(find common core storage server client tests bench \
    -type f \( -name '*.h' -o -name '*.cc' \) 2>/dev/null | sort)
fi
bad=()
for f in "${files[@]}"; do
  [[ -f $f ]] || continue
  if ! clang-format --dry-run --Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
done
if ((${#bad[@]})); then
  echo "check_format: ${#bad[@]} file(s) not formatted (clang-format -i them):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check_format: ok (${#files[@]} files)"
