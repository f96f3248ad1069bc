#!/usr/bin/env bash
# test-asan.sh: the whole test suite again, built with AddressSanitizer + UndefinedBehaviorSanitizer
# (Debug, build-asan/). Any sanitizer report fails the test that triggered it.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
build=${DDP_ASAN_BUILD_DIR:-$root/build-asan}
"$root/scripts/build.sh" "$build" -DDDP_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
cd "$build"
ctest --output-on-failure -j 1 "$@"
