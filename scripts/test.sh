#!/usr/bin/env bash
# test.sh [CTEST_ARGS...]: installs what is missing (apt, and the torch-2 environment), builds, and
# runs the whole test suite with CTest (multi-rank tests under mpirun, as root too); the Python
# tests run on both torches. Then builds what is compiled against LibTorch a second time, against
# the torch-2 environment's LibTorch 2.13 (build-torch2/), and runs its tests there (label
# libtorch). Then lists the skipped tests: a test may be skipped only for want of a GPU
# (scripts/check-skips.py); any other skip fails the run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DDP_BUILD_DIR:-$root/build}
build2=${DDP_TORCH2_BUILD_DIR:-$root/build-torch2}
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "$build"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
status=0
(cd "$build" && ctest --output-on-failure --output-junit ctest-junit.xml -j "${DDP_TEST_JOBS:-1}" "$@") || status=$?
/usr/bin/python3 "$root/scripts/check-skips.py" "$build/ctest-junit.xml" || status=1

echo "test.sh: the LibTorch-dependent tests against LibTorch 2.13 ($build2)"
prefix=$("$root/.venv-torch2/bin/python" -c 'import torch; print(torch.utils.cmake_prefix_path)')
DDP_BUILD_TARGET=ddp_libtorch_checks "$root/scripts/build.sh" "$build2" -DCMAKE_PREFIX_PATH="$prefix"
(cd "$build2" && ctest --output-on-failure --output-junit ctest-junit.xml -L libtorch "$@") || status=$?
/usr/bin/python3 "$root/scripts/check-skips.py" "$build2/ctest-junit.xml" || status=1
exit $status
