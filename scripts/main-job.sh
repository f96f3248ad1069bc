#!/usr/bin/env bash
# main-job.sh: installs what is missing (apt), builds, and runs the main job: `train` (an MLP on
# the embedded synthetic data) data-parallel on 4 ranks with per-rank step timings in a run
# directory and a bitwise check of the ranks' parameters, preceded by a checked ddpbench
# allreduce sweep of the backends, and ending in ddprof's report of the run. (The launcher
# `ddprun` takes over the mpirun steps when it lands.)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DDP_BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "$build"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun=(mpirun -np 4 --oversubscribe --bind-to none)
run="$root/ddprun-runs/main-job"
rm -rf "$run"
mkdir -p "$run"
echo "backends in this build: $("$build/comm/ddpbench" --list-backends | paste -sd, -)"
for backend in mpi gloo; do
  "${mpirun[@]}" "$build/comm/ddpbench" --backend "$backend" --op allreduce \
    -b 1K -e 16M -f 4 -n 10 -w 2 -c 1 --json "$run/ddpbench-$backend.json"
done
export DDPRUN_RUN_DIR=$run
"${mpirun[@]}" -x DDPRUN_RUN_DIR "$build/examples/train" --model mlp --steps 200 --batch-size 32 \
  --verify --checkpoint "$run/checkpoint"
echo
"$build/profiler/ddprof" report "$run"
echo "run directory: $run (timings/, checkpoint/, ddpbench-*.json, report.{txt,json,md})"
