#!/usr/bin/env bash
# build.sh [BUILD_DIR] [extra cmake args...]: configure and build ddprun (-j2: 2-core machines,
# and LibTorch translation units need ~1.3 GB each); DDP_BUILD_TARGET=T builds target T only.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
shift || true
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
if [ ! -f "$build/CMakeCache.txt" ]; then
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@"
elif [ $# -gt 0 ]; then
  cmake "$build" "$@"
fi
cmake --build "$build" -j "${DDP_JOBS:-2}" ${DDP_BUILD_TARGET:+--target "$DDP_BUILD_TARGET"}
