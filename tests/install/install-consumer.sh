#!/usr/bin/env bash
# install-consumer.sh BUILD_DIR SOURCE_DIR [MPIRUN...]: installs ddprun into a temporary prefix,
# then builds a separate project that uses find_package(ddprun), runs its ddp::comm program,
# and runs its ddp::torch program under mpirun on 2 ranks when the package has LibTorch.
set -euo pipefail
build=$1 here=$2
shift 2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix/install" >/dev/null
test -x "$prefix/install/bin/ddpbench"
cmake -S "$here/consumer" -B "$prefix/build" -DCMAKE_PREFIX_PATH="$prefix/install" >/dev/null
cmake --build "$prefix/build" -j2 >/dev/null
"$prefix/build/consumer"
if [ -x "$prefix/build/consumer_ddp" ]; then
  test -x "$prefix/install/bin/train"
  "$@" -np 2 "$prefix/build/consumer_ddp"
fi
