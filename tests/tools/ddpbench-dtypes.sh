#!/usr/bin/env bash
# ddpbench-dtypes.sh NP BACKEND DDPBENCH MPIRUN: every collective with every dtype and reduce
# op, checked (-c 1), on sizes that do not divide by the world size; fails on any #wrong.
set -eu
np=$1 backend=$2 bench=$3 mpirun=$4
out=$("$mpirun" --oversubscribe --bind-to none -np "$np" "$bench" --backend "$backend" \
  --op all -d all -o all -b 4 -e 8M -f 37 -n 1 -w 0 -c 1)
echo "$out"
if grep -q FAILED <<<"$out"; then exit 1; fi
rows=$(grep -c '^ ' <<<"$out")
echo "rows: $rows, #wrong 0 everywhere"
