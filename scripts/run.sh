#!/usr/bin/env bash
# README command 1: installs what is missing, builds, and runs dedupd on its
# embedded RocksDB store in ./data, listening on 127.0.0.1:50051.
# Extra arguments are passed to dedupd (see README "Configuration").
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
# Only what it runs: a first start does not compile the test suite.
TARGETS="dedupd dedupctl" ./scripts/build.sh
exec "${BUILD_DIR:-build}/server/dedupd" --data_dir=./data --listen=127.0.0.1:50051 "$@"
