#!/usr/bin/env bash
# README command 2: installs what is missing, builds, and runs the whole test
# suite. .ci/run calls exactly this.
#
# Four builds, each followed by its tests:
#   build-fuzz  clang + libFuzzer: every fuzzer, a bounded run each;
#   build-asan  clang, AddressSanitizer + UndefinedBehaviorSanitizer (UBSan
#               does not recover): the whole suite, zero reports allowed;
#   build-tsan  clang, ThreadSanitizer: only the test cases that start
#               threads in core and storage (ctest label
#               `tsan`, a gtest filter per executable in its CMakeLists.txt;
#               single-threaded cases cannot race), and only their targets
#               (dedupd_tsan_tests). Debian's Abseil, gRPC and RocksDB are not
#               TSan-built: tests/tsan_absl_sync.cc makes absl::Mutex visible
#               to TSan; no test over RocksDB or with gRPC threads is
#               labelled (their atomics are invisible to TSan and gave false
#               reports); tests/tsan.supp says why (and holds suppressions).
#               A report fails the test (halt_on_error=1, exit code 66);
#   build       the normal build (gcc): the suite plus the benchmark smoke
#               runs (last, so its ctest summary closes the output).
# SKIP_SANITIZERS=1 skips the first three (for a quick local run).
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

  echo "== test suite under AddressSanitizer + UndefinedBehaviorSanitizer (clang)"
  BUILD_DIR=build-asan ./scripts/build.sh -DCMAKE_CXX_COMPILER=clang++ \
    -DDEDUPD_SANITIZE=ON -DDEDUPD_BENCH=OFF
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
    ctest --test-dir build-asan --output-on-failure --timeout 600 --parallel 2

  echo "== threaded core and storage tests under ThreadSanitizer (clang)"
  BUILD_DIR=build-tsan TARGETS=dedupd_tsan_tests ./scripts/build.sh \
    -DCMAKE_CXX_COMPILER=clang++ -DDEDUPD_TSAN=ON -DDEDUPD_BENCH=OFF
  TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp" \
    ctest --test-dir build-tsan -L tsan --output-on-failure --timeout 600 --parallel 2
fi

echo "== test suite (normal build) and benchmark smoke runs"
./scripts/build.sh
ctest --test-dir "${BUILD_DIR:-build}" --output-on-failure --timeout 300 --parallel 2
