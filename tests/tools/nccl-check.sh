#!/usr/bin/env bash
# nccl-check.sh no-gpu-error|gpu-sweep DDPBENCH: exit 77 (skipped) for the part this machine
# cannot run.
set -u
mode=$1 bench=$2
out=$("$bench" --backend nccl --op all -b 8 -e 16M -f 8 -n 5 -w 2 -c 1 2>&1)
rc=$?
if grep -q "no usable CUDA device" <<<"$out"; then
  if [ "$mode" = gpu-sweep ]; then echo "SKIP: no GPU here ($out)"; exit 77; fi
  lines=$(grep -c . <<<"$out")
  if [ "$rc" -eq 1 ] && [ "$lines" -eq 1 ] && grep -q "^ddpbench: nccl backend: no usable CUDA device: cudaGetDeviceCount" <<<"$out"; then
    echo "ok: $out"; exit 0
  fi
  echo "bad error path (exit $rc, $lines lines): $out"; exit 1
fi
if [ "$mode" = no-gpu-error ]; then echo "SKIP: a GPU is present, so the no-GPU path cannot be tried"; exit 77; fi
echo "$out"
[ "$rc" -eq 0 ] && ! grep -q FAILED <<<"$out"
