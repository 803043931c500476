#!/usr/bin/env bash
# README command 2: installs what is missing, builds, and runs the whole test
# suite. .ci/run calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
./scripts/build.sh
cd "${BUILD_DIR:-build}"
ctest --output-on-failure --timeout 300 --parallel 2
