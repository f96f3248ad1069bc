#!/usr/bin/env bash
# main-job.sh: installs what is missing (apt), builds, and runs the main job: a checked ddpbench
# allreduce sweep of the CPU backends, then `ddprun --profile -np 4 train` (an MLP on the embedded
# synthetic data, data-parallel on 4 ranks, with a bitwise check of the ranks' parameters and a
# checkpoint), ending in the profiler's report of the run.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DDP_BUILD_DIR:-$root/build}
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh" "$build"
ddprun=$build/launcher/ddprun
run="$root/ddprun-runs/main-job"
rm -rf "$run" "$run"-ddpbench-*
echo "backends in this build: $("$build/comm/ddpbench" --list-backends | paste -sd, -)"
for backend in mpi gloo; do
  "$ddprun" --log-level warn --output rank:0 --run-dir "$run-ddpbench-$backend" -np 4 "$build/comm/ddpbench" \
    --backend "$backend" --op allreduce -b 1K -e 16M -f 4 -n 10 -w 2 -c 1 --json "$run-ddpbench-$backend/ddpbench.json"
done
# The sweeps' results go into the training run's directory: its report.html draws their busbw.
mkdir -p "$run"
for backend in mpi gloo; do cp "$run-ddpbench-$backend/ddpbench.json" "$run/ddpbench-$backend.json"; done
"$ddprun" --profile --output rank:0 --run-dir "$run" -np 4 "$build/examples/train" --model mlp --steps 200 \
  --batch-size 32 --verify --checkpoint "$run/checkpoint"
echo "run directory: $run (run.json, ranks/, timings/, util/, checkpoint/, report.{txt,json,md,html}, trace.json)"
echo "open $run/report.html in a browser, and $run/trace.json at https://ui.perfetto.dev"
