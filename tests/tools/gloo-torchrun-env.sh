#!/usr/bin/env bash
# gloo-torchrun-env.sh DDPBENCH NP: the gloo backend without MPI, from torchrun-style variables
# alone (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT): NP processes run a checked
# sweep; every one must exit 0 and rank 0's table must show #wrong 0.
set -u
bench=$1 np=$2
port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
pids=()
for ((r = 0; r < np; r++)); do
  env -u OMPI_COMM_WORLD_RANK -u OMPI_COMM_WORLD_SIZE RANK=$r WORLD_SIZE=$np LOCAL_RANK=$r \
    LOCAL_WORLD_SIZE=$np MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    timeout 120 "$bench" --backend gloo --op all -b 4 -e 1M -f 16 -n 2 -w 1 -c 1 >"$dir/out.$r" 2>&1 &
  pids+=($!)
done
rc=0
for ((r = 0; r < np; r++)); do
  wait "${pids[$r]}" || { echo "rank $r exited $?:"; cat "$dir/out.$r"; rc=1; }
done
cat "$dir/out.0"
grep -q FAILED "$dir/out.0" && rc=1
[ "$(grep -c 'Out of bounds values : 0 OK' "$dir/out.0")" -eq 5 ] || rc=1
exit $rc
