#!/usr/bin/env bash
# README command 2: installs what is missing, builds, and runs the whole test
# suite. .ci/run calls exactly this.
#
# Three builds, each followed by its tests:
#   build-fuzz  clang + libFuzzer: every fuzzer, a bounded run each;
#   build-asan  AddressSanitizer + UndefinedBehaviorSanitizer: the suite;
#   build       the normal build: the suite plus the benchmark smoke runs
#               (last, so its ctest summary closes the output).
# SKIP_SANITIZERS=1 skips the first two (for a quick local run).
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
jobs=$(nproc)

if [[ "${SKIP_SANITIZERS:-0}" != 1 ]]; then
  echo "== fuzzers (clang, libFuzzer + ASan/UBSan), bounded runs"
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja \
    -DDEDUPD_FUZZ=ON -DDEDUPD_BENCH=OFF >/dev/null
  cmake --build build-fuzz --parallel "$jobs" --target dedupd_fuzzers
  ctest --test-dir build-fuzz -L fuzz --output-on-failure --timeout 300

  echo "== test suite under AddressSanitizer + UndefinedBehaviorSanitizer"
  BUILD_DIR=build-asan ./scripts/build.sh -DDEDUPD_SANITIZE=ON -DDEDUPD_BENCH=OFF
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure --timeout 600 --parallel 2
fi

echo "== test suite (normal build) and benchmark smoke runs"
./scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure --timeout 300 --parallel 2
