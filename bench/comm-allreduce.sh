#!/usr/bin/env bash
# comm-allreduce.sh [OUT_DIR]: allreduce busbw, 1 KB → 256 MB, at np 2 and 4, of ddpbench's
# mpi and gloo backends against (a) a plain MPI_Allreduce loop, (b) PyTorch's Gloo allreduce
# (python3-torch) and (c) the one-way ping-pong bandwidth between two ranks (the link's limit).
# All measured in this one run; writes OUT_DIR/*.jsonl and the page docs/bench-comm.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DDP_BUILD_DIR:-$root/build}
out=${1:-$root/bench/results}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun=(mpirun --oversubscribe --bind-to none)
min=1024 max=$((256 << 20)) factor=4 iters=${ITERS:-10}

"${mpirun[@]}" -np 2 "$build/bench/mpi_pingpong" $min $max $factor $iters > "$out/pingpong.jsonl"
for np in 2 4; do
  for backend in mpi gloo; do
    "${mpirun[@]}" -np $np "$build/comm/ddpbench" --backend $backend --op allreduce \
      -b $min -e $max -f $factor -n "$iters" -w 2 -c 0 --json "$out/ddpbench-$backend-np$np.json" >/dev/null
  done
  "${mpirun[@]}" -np $np "$build/bench/mpi_allreduce_baseline" $min $max $factor $iters > "$out/mpi-baseline-np$np.jsonl"
  /usr/bin/python3 "$root/bench/torch_gloo_allreduce.py" $np $min $max $factor $iters > "$out/torch-gloo-np$np.jsonl"
done
/usr/bin/python3 "$root/bench/report.py" "$out" > "$root/docs/bench-comm.md"
cat "$root/docs/bench-comm.md"
