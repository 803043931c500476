#!/usr/bin/env bash
# Configures and builds dedupd into ${BUILD_DIR:-build} (Release-like, with
# debug info). Extra arguments go to cmake's configure step. TARGETS (space
# separated) limits the build to those targets, e.g. TARGETS="dedupd dedupctl".
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${BUILD_DIR:-build}
cmake -S . -B "$build_dir" -G Ninja "$@" >/dev/null
targets=()
for t in ${TARGETS:-}; do targets+=(--target "$t"); done
cmake --build "$build_dir" --parallel "$(nproc)" "${targets[@]}"
