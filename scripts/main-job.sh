#!/usr/bin/env bash
# main-job.sh: installs what is missing (apt), builds, and runs the main job: a checked
# ddpbench sweep of every collective over the mpi and gloo backends on 4 ranks (until the
# launcher and the training example land, this is the multi-rank run the project has).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "${DDP_BUILD_DIR:-$root/build}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
bench="${DDP_BUILD_DIR:-$root/build}/comm/ddpbench"
out="$root/ddprun-runs/main-job"
mkdir -p "$out"
echo "backends in this build: $("$bench" --list-backends | paste -sd, -)"
for backend in mpi gloo; do
  mpirun -np 4 --oversubscribe --bind-to none "$bench" --backend "$backend" --op all \
    -b 1K -e 16M -f 4 -n 10 -w 2 -c 1 --json "$out/ddpbench-$backend.json"
done
echo "results: $out/ddpbench-mpi.json $out/ddpbench-gloo.json"
