#!/usr/bin/env bash
# profile-check.sh MODE: ddprof over real runs of train (TRAIN, DDPROF, MPIRUN in the environment).
#   straggler  rank 1 of 3 sleeps 30 ms per step: the report names it as the straggler
#   scaling    the same job at np 1 and 2: weak scaling with an efficiency per size
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
train() {  # train RUN_DIR NP ARGS...
  local dir=$1 np=$2
  shift 2
  DDPRUN_RUN_DIR=$dir $MPIRUN -x DDPRUN_RUN_DIR -np "$np" "$TRAIN" --log-every 1000 "$@" >/dev/null
}
findings() {  # the report's findings as "severity kind ranks" lines
  /usr/bin/python3 -c 'import json,sys
for f in json.load(open(sys.argv[1]))["findings"]: print(f["severity"], f["kind"], ",".join(map(str, f["ranks"])))' "$1/report.json"
}
case $1 in
  straggler)
    train "$work/run" 3 --model mlp --steps 15 --batch-size 16 --fault 1:0:slow:30
    "$DDPROF" report "$work/run"
    for f in report.txt report.json report.md; do test -s "$work/run/$f"; done
    findings "$work/run" | grep -qx "warning straggler 1" || { echo "no straggler finding for rank 1:"; findings "$work/run"; exit 1; } ;;
  scaling)
    train "$work/np1" 1 --model mlp --steps 12 --batch-size 16
    train "$work/np2" 2 --model mlp --steps 12 --batch-size 16
    out=$("$DDPROF" scaling "$work/np2" "$work/np1")
    echo "$out"
    grep -q "^weak scaling" <<<"$out" && grep -Eq "^ +2 .* [0-9.]+ %  $work/np2\$" <<<"$out" ||
      { echo "unexpected scaling output"; exit 1; } ;;
  *) echo "unknown mode $1"; exit 2 ;;
esac
