#!/usr/bin/env bash
# install-consumer.sh BUILD_DIR SOURCE_DIR: installs ddprun into a temporary prefix, then builds
# and runs a separate project that uses find_package(ddprun) and links ddp::comm.
set -euo pipefail
build=$1 here=$2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix/install" >/dev/null
cmake -S "$here/consumer" -B "$prefix/build" -DCMAKE_PREFIX_PATH="$prefix/install" >/dev/null
cmake --build "$prefix/build" >/dev/null
"$prefix/build/consumer"
