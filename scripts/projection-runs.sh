#!/usr/bin/env bash
# projection-runs.sh OUT [ROUNDS] [STEPS]: the measured runs `ddprof project` is validated against
# (docs/projection.md, scripts/projection-validation.py). On simulated hosts
# (scripts/simulate-hosts), each host given a CPU core of its own (taskset -c NODE_RANK), the
# same job trains over Gloo as 2 hosts x 2 ranks with host sim1's link unlimited and limited to
# 1 Gbit/s, 200 Mbit/s and 50 Mbit/s (tc tbf), and as 1 host x 2 ranks; for the MLP and the CNN.
# Before each run, ddpbench measures the link: a Gloo allreduce across the same 2 x 2 ranks,
# saved as OUT/rK/ddpbench-<link>-<model>.json and into the run directory as ddpbench-link.json
# (what `ddprof project` and the targets' bandwidths read). Needs root; built binaries in build/
# (BUILD to change). This machine's speed drifts from minute to minute, so every configuration
# runs ROUNDS times (default 3), the configurations in turn within a round: OUT/rK/<model>-<link>/
# run directories.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: projection-runs.sh OUT [ROUNDS] [STEPS]}
rounds=${2:-3}
steps=${3:-40}
build=${BUILD:-$root/build}
sim=$root/scripts/simulate-hosts
[ "$(id -u)" -eq 0 ] || { echo "projection-runs.sh: simulated hosts need root" >&2; exit 2; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
trap '"$sim" down >/dev/null 2>&1 || true' EXIT
pin='exec taskset -c $NODE_RANK "$@"'  # each simulated host on its own core

# Batch sizes chosen so that compute and communication are both visible on this machine.
declare -A batch=([mlp]=64 [cnn]=32)
declare -A burst=([1gbit]=125000 [200mbit]=25000 [50mbit]=6250)  # bytes: 1 ms at the rate
train() {  # train DIR HOSTS MODEL
  "$sim" exec sim0 -- "$build/launcher/ddprun" --profile --output rank:0 --run-dir "$1" -H "$2" -- \
    sh -c "$pin" sh "$build/examples/train" --backend gloo --model "$3" --batch-size "${batch[$3]}" \
    --steps "$steps" --log-every 1000 >"$1.txt" 2>&1
  echo "$1: $(grep -m1 -o "[0-9.]* samples/s" "$1/report.txt" || echo '?')"
}
for round in $(seq 1 "$rounds"); do
for link in unlimited 1gbit 200mbit 50mbit; do
  # The link's bucket holds 1 ms at its rate (tbf's burst): a wire holds none, and a larger one,
  # refilled while the ranks compute, passes that much of a step's gradients at the veth's speed
  # (docs/simulate-hosts.md); tbf needs about that much to keep up with the rate.
  if [ "$link" = unlimited ]; then "$sim" up 2 >/dev/null; else "$sim" up 2 --rate sim1=$link --burst "${burst[$link]}" >/dev/null; fi
  mkdir -p "$out/r$round"
  for model in mlp cnn; do
    # The link measured just before each run: this machine's speed drifts from minute to minute,
    # and the unlimited link's rate is the CPU's (measured once per link and round, it was at
    # times far from what the runs a few minutes later had).
    bench=$out/r$round/ddpbench-$link-$model.json
    "$sim" exec sim0 -- "$build/launcher/ddprun" --run-dir "$out/.bench-r$round-$link-$model" -H sim0:2,sim1:2 -- \
      sh -c "$pin" sh "$build/comm/ddpbench" --backend gloo --op allreduce -b 8 -e 2M -f 4 -n 10 -w 2 -c 0 \
      --json "$bench" >"${bench%.json}.txt" 2>&1
    dir=$out/r$round/$model-$link
    rm -rf "$dir"
    train "$dir" sim0:2,sim1:2 $model
    cp "$bench" "$dir/ddpbench-link.json"
  done
done
# One host x 2 ranks, both on sim0's core: the source of the 1 -> 2 hosts projection.
"$sim" up 2 >/dev/null
for model in mlp cnn; do
  rm -rf "$out/r$round/$model-1host"
  train "$out/r$round/$model-1host" sim0:2 $model
done
done
rm -rf "$out"/.bench-*
