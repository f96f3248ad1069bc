#!/usr/bin/env bash
# train-check.sh MODE ARGS...: end-to-end checks of the train example under mpirun.
# Needs TRAIN, MPIRUN (the command with its options), PARAM_DIFF and CHECK_TIMINGS in the
# environment.
#   equivalence MODEL NP B  np=NP with batch B per rank = np=1 with batch NP*B (20 steps, 1e-4)
#   overlap NP              overlap on and off: bitwise identical parameters
#   nosync NP B             --accumulate 2 with batch B = one step of batch 2B (1e-4)
#   resume NP               10 steps + checkpoint, then --resume to 20 = 20 straight (bitwise)
#   wrong-model             resuming another model's checkpoint: exit 2, checkpoint untouched
#   real-data               MNIST and CIFAR-10 files in the standard formats, --epochs
#   amp                     --amp on CPU: bf16 autocast
#   timings NP              one valid timings record per step per rank in DDPRUN_RUN_DIR
#   verify NP TRAIN_ARGS... --verify passes (exit 0, its line), and, checked outside the backend
#                           under test, every rank's parameter dump is byte-identical to rank 0's
set -euo pipefail
mode=$1
shift
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
run() {  # run NP ARGS...
  local np=$1
  shift
  $MPIRUN -np "$np" "$TRAIN" --steps 20 --log-every 1000 "$@"
}
case $mode in
  equivalence)
    model=$1 np=$2 b=$3
    run 1 --model "$model" --batch-size $((np * b)) --dump-params "$work/one"
    run "$np" --model "$model" --batch-size "$b" --dump-params "$work/many" --verify
    "$PARAM_DIFF" "$work/one" "$work/many" 1e-4 ;;
  overlap)
    np=$1
    run "$np" --model mlp --batch-size 8 --bucket-mb 0.5 --dump-params "$work/on"
    run "$np" --model mlp --batch-size 8 --bucket-mb 0.5 --no-overlap --dump-params "$work/off"
    "$PARAM_DIFF" "$work/on" "$work/off" 0 ;;
  nosync)
    np=$1 b=$2
    run "$np" --model mlp --batch-size "$b" --accumulate 2 --dump-params "$work/accumulated" --verify
    run "$np" --model mlp --batch-size $((2 * b)) --dump-params "$work/doubled"
    "$PARAM_DIFF" "$work/accumulated" "$work/doubled" 1e-4 ;;
  resume)
    np=$1
    run "$np" --model cnn --batch-size 4 --dump-params "$work/straight"
    $MPIRUN -np "$np" "$TRAIN" --model cnn --batch-size 4 --steps 10 --checkpoint-every 5 --checkpoint "$work/ckpt" >/dev/null
    test -f "$work/ckpt/checkpoint.pt"
    if ls "$work/ckpt" | grep -q tmp; then echo "temporary checkpoint left behind"; exit 1; fi
    out=$(run "$np" --model cnn --batch-size 4 --checkpoint "$work/ckpt" --resume --dump-params "$work/resumed")
    grep -q "resumed from step 10" <<<"$out" || { echo "did not resume: $out"; exit 1; }
    "$PARAM_DIFF" "$work/straight" "$work/resumed" 0 ;;
  wrong-model)
    $TRAIN --model mlp --steps 2 --checkpoint "$work/ckpt" >/dev/null
    before=$(md5sum <"$work/ckpt/checkpoint.pt")
    rc=0
    err=$($TRAIN --model cnn --steps 2 --checkpoint "$work/ckpt" --resume 2>&1 >/dev/null) || rc=$?
    [ "$rc" -eq 2 ] || { echo "expected exit 2, got $rc: $err"; exit 1; }
    grep -q "checkpoint $work/ckpt/checkpoint.pt is of another model (mlp); this run trains cnn" <<<"$err" ||
      { echo "unexpected message: $err"; exit 1; }
    [ "$(md5sum <"$work/ckpt/checkpoint.pt")" = "$before" ] || { echo "checkpoint changed"; exit 1; }
    [ "$(ls -A "$work/ckpt")" = checkpoint.pt ] || { echo "files left: $(ls -A "$work/ckpt")"; exit 1; }
    echo "ok: $err" ;;
  real-data)
    # The standard file formats, read end to end; --epochs over a 256-sample MNIST set.
    /usr/bin/python3 "$(dirname "$0")/make-datasets.py" "$work/data"
    out=$($MPIRUN -np 2 "$TRAIN" --model mlp --data "mnist:$work/data/mnist" --batch-size 32 --epochs 2 --verify)
    grep -q "data=mnist (256 samples)" <<<"$out" && grep -q "train: steps=8 " <<<"$out" ||
      { echo "unexpected: $out"; exit 1; }
    out=$($MPIRUN -np 2 "$TRAIN" --model cnn --data "cifar10:$work/data/cifar10" --batch-size 4 --steps 3 --verify)
    grep -q "data=cifar10 (50000 samples)" <<<"$out" || { echo "unexpected: $out"; exit 1; }
    echo "$out" ;;
  amp)
    # bf16 autocast on CPU: trains, reports it, and the ranks stay identical.
    out=$($MPIRUN -np 2 "$TRAIN" --model cnn --batch-size 4 --steps 3 --amp --verify)
    grep -q "precision=bf16-autocast" <<<"$out" || { echo "unexpected: $out"; exit 1; }
    echo "$out" ;;
  timings)
    np=$1
    DDPRUN_RUN_DIR=$work/run $MPIRUN -x DDPRUN_RUN_DIR -np "$np" "$TRAIN" --model mlp --steps 7 --batch-size 8 --bucket-mb 0.5
    "$CHECK_TIMINGS" "$work/run" "$np" 7 ;;
  verify)
    np=$1
    shift
    out=$($MPIRUN -np "$np" "$TRAIN" --verify --dump-params "$work/params.%r" "$@")
    echo "$out"
    grep -q "train: verify: parameters bitwise identical on $np ranks" <<<"$out" || { echo "no verify line"; exit 1; }
    for r in $(seq 1 $((np - 1))); do
      cmp "$work/params.0" "$work/params.$r" || { echo "rank $r's parameters differ from rank 0's"; exit 1; }
    done
    echo "ok: $np parameter dumps of $(stat -c %s "$work/params.0") bytes are identical" ;;
  *) echo "unknown mode $mode"; exit 2 ;;
esac
