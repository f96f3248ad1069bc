#!/usr/bin/env bash
# install-consumer.sh BUILD_DIR SOURCE_DIR MPIRUN...: installs ddprun into a temporary prefix,
# then builds a separate project that uses find_package(ddprun) and runs, under mpirun on 2 ranks,
# its program that picks the mpi backend (and gloo, when the package has it) by name, and its
# ddp::torch program when the package has LibTorch. Every step must exit 0 and say what it checked.
set -euo pipefail
build=$1 here=$2
shift 2
prefix=$(mktemp -d)
trap 'rm -rf "$prefix"' EXIT
cmake --install "$build" --prefix "$prefix/install" >/dev/null
test -x "$prefix/install/bin/ddpbench"
cmake -S "$here/consumer" -B "$prefix/build" -DCMAKE_PREFIX_PATH="$prefix/install" >/dev/null
cmake --build "$prefix/build" -j2 >/dev/null
backends=(mpi)
test -f "$prefix/install/lib/libddp_comm_gloo.a" && backends+=(gloo)
out=$("$@" -np 2 "$prefix/build/consumer" "${backends[@]}")
echo "$out"
for b in "${backends[@]}"; do
  for r in 0 1; do
    grep -q "consumer rank $r of 2: backend $b by name: allreduce correct" <<<"$out" || { echo "FAIL: rank $r, backend $b"; exit 1; }
  done
done
if [ -x "$prefix/build/consumer_ddp" ]; then
  test -x "$prefix/install/bin/train"
  out=$("$@" -np 2 "$prefix/build/consumer_ddp")
  echo "$out"
  grep -q "ddp consumer rank 1: gradient averaged" <<<"$out" || { echo "FAIL: ddp::torch"; exit 1; }
fi
echo "ok: backends ${backends[*]} chosen by name"
