#!/usr/bin/env bash
# test.sh [CTEST_ARGS...]: installs what is missing (apt), builds, and runs the whole test suite
# with CTest (multi-rank tests under mpirun, as root too). Then lists the skipped tests: a test
# may be skipped only for want of a GPU (scripts/check-skips.py); any other skip fails the run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DDP_BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "$build"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$build"
status=0
ctest --output-on-failure --output-junit ctest-junit.xml -j "${DDP_TEST_JOBS:-1}" "$@" || status=$?
/usr/bin/python3 "$root/scripts/check-skips.py" "$build/ctest-junit.xml" || status=1
exit $status
