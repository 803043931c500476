#!/usr/bin/env bash
# Installs every Debian 12 package dedupd needs to build, test and benchmark.
# Safe to run again: apt-get skips what is already installed.
# Why each package is here: README.md, section "Dependencies".
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config git ca-certificates
  clang libclang-rt-14-dev llvm
  # gRPC + Protobuf (API, server, client)
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  # Abseil (status, strings, flags, synchronization)
  libabsl-dev
  # storage
  librocksdb-dev
  # Prometheus /metrics endpoint (prometheus-cpp 1.0: core + pull)
  prometheus-cpp-dev
  # hashing (SHA-256 via EVP) and TLS
  libssl-dev
  # URL parsing (RFC 3986) and IDNA2008/UTS #46
  libboost-url1.81-dev libidn2-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  # benchmark corpus (real documentation sites) and the baseline normalizer
  python3 python3-w3lib python3-doc postgresql-doc-15
  # content fingerprints: Unicode NFC + case folding (ICU 72)
  libicu-dev
  # tests use these to drive the real binary
  procps
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
