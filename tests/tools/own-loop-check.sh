#!/usr/bin/env bash
# own-loop-check.sh: examples/own_loop (a LibTorch loop of its own over c10d's ProcessGroupGloo,
# timed with ddp::comm::StepTimer; docs/step-timer.md) under `ddprun --profile -np 2`: the ranks
# agree on the weights, and the report analyses the steps, phases and the allreduce from the
# C++ step timer.
set -euo pipefail
: "${DDPRUN:?}" "${OWN_LOOP:?}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fail() { echo "FAIL: $*"; exit 1; }
json() { /usr/bin/python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
run=$work/run
"$DDPRUN" --profile --log-level error --run-dir "$run" -np 2 "$OWN_LOOP" --steps 60 --batch-size 32 >"$work/out.txt" 2>&1 ||
  fail "own_loop exited $?: $(tail -20 "$work/out.txt")"
grep -q "own_loop: 60 steps, loss .*, weights agree on 2 ranks" "$work/out.txt" || fail "weights: $(cat "$work/out.txt")"
[[ $(json "$run/report.json" '[s["source"] for s in r["timings_sources"]]') == "['cpp', 'cpp']" ]] ||
  fail "source: $(json "$run/report.json" 'r["timings_sources"]')"
grep -q "timings: the C++ step timer (ddp::StepTimer), cpu on ranks 0, 1" "$run/report.txt" || fail "report: $(cat "$run/report.txt")"
[[ $(json "$run/report.json" 'r["steps"]["analysed"]') -ge 40 ]] || fail "too few steps analysed"
for phase in data forward backward comm_wait optimizer; do
  [[ $(json "$run/report.json" "r['phases']['$phase'] > 0") == True ]] ||
    fail "phase $phase not measured: $(json "$run/report.json" 'r["phases"]')"
done
grep -q '"op":"allreduce"' "$run/timings/rank-00001.jsonl" || fail "no allreduce recorded"
echo "ok: own_loop's weights agree; its report analyses $(json "$run/report.json" 'r["steps"]["analysed"]') steps from the C++ step timer"
