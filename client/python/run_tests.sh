#!/usr/bin/env bash
# The Python package's tests, as ctest runs them (client/python/CMakeLists.txt).
#
#   run_tests.sh install BUILD_DIR
#       a fresh venv in BUILD_DIR/python-venv (Debian's /usr/bin/python3 with
#       its system site packages: python3-grpcio, python3-protobuf,
#       python3-scrapy, python3-pytest), and `pip install --no-build-isolation
#       --no-index ./client/python` into it, as the README tells users.
#   run_tests.sh pytest BUILD_DIR DEDUPD_BINARY [pytest arguments...]
#       runs pytest from that venv against DEDUPD_BINARY.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cmd=${1:?usage: run_tests.sh install|pytest BUILD_DIR ...}
build_dir=$(cd "${2:?BUILD_DIR}" && pwd)
venv=$build_dir/python-venv
case "$cmd" in
  install)
    rm -rf "$venv"
    /usr/bin/python3 -m venv --system-site-packages "$venv"
    # --no-index: no package index is reachable, and none is needed.
    "$venv/bin/pip" install --quiet --no-build-isolation --no-index "$here"
    # The source tree's build/ and egg-info are pip's in-tree build leftovers.
    rm -rf "$here/build" "$here/dedupd.egg-info"
    "$venv/bin/python" -c "import dedupd, dedupd.aio, dedupd.v1.dedupd_pb2_grpc"
    ;;
  pytest)
    export DEDUPD_BINARY=${3:?DEDUPD_BINARY}
    shift 3
    base=$build_dir/python-tests-tmp/$$
    rm -rf "$base" && mkdir -p "$(dirname "$base")"
    # From the build dir, so that `import dedupd` is the installed package,
    # not the source tree (which has no generated dedupd.v1).
    cd "$build_dir"
    status=0
    "$venv/bin/python" -m pytest -p no:cacheprovider -q -rs --basetemp="$base" "$@" || status=$?
    rm -rf "$base"
    exit $status
    ;;
  *) echo "run_tests.sh: unknown command '$cmd'" >&2; exit 2 ;;
esac
