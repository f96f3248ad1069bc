#!/usr/bin/env bash
# test.sh: installs what is missing (apt), builds, and runs the whole test suite with CTest.
# Multi-rank tests run under mpirun, as root too.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "${DDP_BUILD_DIR:-$root/build}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "${DDP_BUILD_DIR:-$root/build}"
ctest --output-on-failure -j "${DDP_TEST_JOBS:-1}" "$@"
