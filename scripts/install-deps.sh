#!/usr/bin/env bash
# Installs the Debian 12 packages dedupd needs. Safe to run again: apt-get
# skips what is already installed. Why each package is here: README.md,
# section "Dependencies".
#
#   scripts/install-deps.sh                  everything to build, test, benchmark
#   scripts/install-deps.sh --runtime        only the shared libraries the dedupd
#                                            and dedupctl binaries load (the
#                                            container image's runtime stage)
#   scripts/install-deps.sh --print-runtime  print that runtime list, one a line
#                                            (tests/deploy checks it against ldd)
set -euo pipefail

packages=(
  # toolchain
  build-essential cmake ninja-build pkg-config git ca-certificates
  clang libclang-rt-14-dev llvm
  # the format check of the test suite (scripts/check_format.sh)
  clang-format
  # gRPC + Protobuf (API, server, client)
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  # Abseil (status, strings, flags, synchronization)
  libabsl-dev
  # storage
  librocksdb-dev
  # the Redis Cluster store's client (storage/redis/): hiredis 0.14 speaks
  # RESP but has no cluster support, so dedupd carries its own small router
  libhiredis-dev
  # the Redis Cluster tests start a real 3-master, 3-replica cluster of
  # redis-server 7.0 on loopback (redis-cli --cluster create)
  redis-server
  # the server's allocator (RocksDB's recommended one; per-thread caches)
  libjemalloc-dev
  # Prometheus /metrics endpoint (prometheus-cpp 1.0: core + pull)
  prometheus-cpp-dev
  # hashing (SHA-256 via EVP) and TLS
  libssl-dev
  # URL parsing (RFC 3986) and IDNA2008/UTS #46
  libboost-url1.81-dev libidn2-dev
  # fixed-width integers in keys and files (Boost.Endian, header-only; common/coding.h)
  libboost1.81-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev googletest libbenchmark-dev
  # benchmark corpus (real documentation sites) and the baseline normalizer
  python3 python3-w3lib python3-doc postgresql-doc-15
  # content fingerprints: Unicode NFC + case folding (ICU 72)
  libicu-dev
  # dedupctl's command line: CLI11 (header-only), one parser for every
  # command's flags
  libcli11-dev
  # tests use these to drive the real binary
  procps
  # the Python package client/python (dedupd, dedupd.scrapy): Debian's
  # interpreter with gRPC and protobuf, a venv with pip and setuptools (+ wheel)
  # to install it without a package index, Scrapy 2.8 and lxml for the Scrapy
  # integration and its main-text rule, pytest for its tests, openssl for the
  # tests' TLS certificates (stubs come from protoc + grpc_python_plugin above)
  python3-grpcio python3-protobuf python3-venv python3-pip python3-setuptools
  python3-wheel python3-scrapy python3-lxml python3-pytest openssl
  # tests/deploy: parse the rendered Kubernetes manifests; unshare/mount/chroot
  # for the container runtime layout test
  python3-yaml util-linux
)

# The shared libraries dedupd and dedupctl load (ldd closure of the Release
# binaries, minus the base packages every Debian image has: libc6, libstdc++6,
# libgcc-s1). RocksDB links statically; its compression libraries do not.
# tests/deploy/runtime_layout_test.py fails when a binary loads a library of a
# package missing here.
runtime_packages=(
  libgrpc++1.51 libgrpc29 libprotobuf32 libabsl20220623 libc-ares2 libre2-9
  libssl3 zlib1g libzstd1 liblz4-1 libsnappy1v5 libbz2-1.0
  libboost-url1.81.0 libidn2-0 libunistring2 libicu72
  libprometheus-cpp-core1.0 libprometheus-cpp-pull1.0 libcivetweb1 libjemalloc2
  libhiredis0.14
)

case "${1:-}" in
  "") ;;
  --runtime) packages=("${runtime_packages[@]}") ;;
  --print-runtime) printf '%s\n' "${runtime_packages[@]}"; exit 0 ;;
  *) echo "install-deps: unknown argument '$1' (want --runtime, --print-runtime or nothing)" >&2; exit 2 ;;
esac

# kubectl renders deploy/ (kubectl kustomize). Debian 12's is kubernetes-client;
# another kubectl on PATH (e.g. Google Cloud SDK's) owns the same file name, so
# install Debian's only when there is none.
if [[ -z "${1:-}" ]] && ! command -v kubectl >/dev/null; then
  packages+=(kubernetes-client)
fi

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
