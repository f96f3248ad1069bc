#!/usr/bin/env bash
# python-instructions.sh [OUT_DIR]: what the automatic Python instrumentation costs a step, counted
# in instructions rather than timed: a count that does not move with the host's load, where the
# wall-time ratios of python-overhead.sh move by more than the cost. bench/python_step.py (plain
# DDP over Gloo, a DataLoader, SGD) on 2 ranks under `ddprun --profile`, every rank under
# `valgrind --tool=callgrind`, with the instrumentation and with --no-instrument, each for S1 and
# for S2 steps: (I(S2) - I(S1)) / (S2 - S1) is a step's instructions, every thread of the rank
# counted, start-up and exit cancelled out. Both torches (Debian's 1.13 at /usr/bin/python3, 2.13
# in .venv-torch2), MODELS (default mlp; under valgrind a run takes minutes). Then the part of it
# that is the timing hook's pass scaling the gradients (bench/grad_pass.py: the MLP's gradients
# multiplied in place, 10 and 110 times). REUSE_RUNS=1 takes the DDP runs from OUT_DIR's results
# of an earlier run and measures only the pass. Writes the section python-instructions of docs/benchmarks.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DDP_BUILD_DIR:-$root/build}
out=${1:-$root/bench/results}
models=${MODELS:-mlp}
s1=20 s2=70
command -v valgrind >/dev/null || { echo "python-instructions.sh: valgrind is not installed" >&2; exit 2; }
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
unset PYTHONUNBUFFERED
# summary FILE: the instructions a callgrind output file counted.
summary() { sed -n 's/^summary: //p' "$1"; }
results=$out/python-instructions.jsonl
passes=$out/python-instructions-grad-pass.jsonl
if [[ ${REUSE_RUNS:-0} == 1 ]]; then
  [[ -s $results ]] || { echo "python-instructions.sh: REUSE_RUNS=1, but $results holds no runs" >&2; exit 2; }
  pythons=()
else
  : >"$results"
  pythons=(/usr/bin/python3 "$root/.venv-torch2/bin/python")
fi
for py in "${pythons[@]}"; do
  version=$("$py" -c 'import torch; print(torch.__version__)') ||
    { echo "python-instructions.sh: $py cannot import torch" >&2; exit 2; }
  for model in $models; do
    for mode in off on; do
      flag=()
      [[ $mode == off ]] && flag=(--no-instrument)
      for steps in $s1 $s2; do
        run=$work/$version-$model-$mode-$steps
        rc=0
        "$build/launcher/ddprun" --profile "${flag[@]}" --output rank:0 --log-level error --run-dir "$run" \
          -np 2 -- valgrind --tool=callgrind --callgrind-out-file="$run.%q{RANK}.callgrind" "$py" \
          "$root/bench/python_step.py" "$model" "$steps" >"$run.out" 2>&1 || rc=$?
        # A run that printed its result and then failed at exit (torch 2.13 aborts at exit now and
        # then) has counted its steps: its output files are written as valgrind exits.
        grep -q '{"model"' "$run.out" && [[ -s $run.0.callgrind && -s $run.1.callgrind ]] ||
          { echo "python-instructions.sh: $version $model ($mode, $steps steps) failed (exit $rc)" >&2
            cat "$run.out" >&2; exit 1; }
        for rank in 0 1; do
          ir=$(summary "$run.$rank.callgrind")
          printf '{"torch": "%s", "model": "%s", "mode": "%s", "steps": %d, "rank": %d, "ir": %d, "exit": %d}\n' \
            "$version" "$model" "$mode" "$steps" "$rank" "$ir" "$rc" | tee -a "$results"
        done
      done
    done
  done
done
: >"$passes"
for n in 10 110; do
  valgrind --tool=callgrind --callgrind-out-file="$work/pass-$n.callgrind" /usr/bin/python3 "$root/bench/grad_pass.py" \
    "$n" >"$work/pass-$n.out" 2>&1 || { echo "python-instructions.sh: grad_pass.py failed" >&2; cat "$work/pass-$n.out" >&2; exit 1; }
  printf '{"passes": %d, "ir": %d}\n' "$n" "$(summary "$work/pass-$n.callgrind")" | tee -a "$passes"
done
/usr/bin/python3 - "$results" "$s1" "$s2" "$passes" <<'PY' | /usr/bin/python3 "$root/bench/update_section.py" "$root/docs/benchmarks.md" python-instructions
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
s1, s2 = int(sys.argv[2]), int(sys.argv[3])
def per_step(torch, model, mode, rank):
    ir = {r["steps"]: r["ir"] for r in rows if (r["torch"], r["model"], r["mode"], r["rank"]) == (torch, model, mode, rank)}
    return (ir[s2] - ir[s1]) / (s2 - s1)
print("## Python instrumentation overhead in instructions (`bench/python-instructions.sh`)\n")
print(f"`bench/python_step.py` (plain DDP over Gloo, a DataLoader, SGD, batch 32 per rank, one intra-op thread) on "
      "2 ranks under `ddprun --profile`, each rank under `valgrind --tool=callgrind`, with ddprun's automatic "
      f"instrumentation and with `--no-instrument`, for {s1} and for {s2} steps; a step's instructions are the "
      f"difference of the two runs' counts over the {s2 - s1} steps between them, every thread of the rank counted, "
      "start-up and exit cancelled out. Unlike the wall-time ratios above, the count does not move with the host's "
      "load; it weighs an instruction of Python bookkeeping the same as one of a vectorised matrix product, and "
      "the package's flusher thread, which wakes every quarter second, wakes many times as often per step under "
      "valgrind's slowdown: both make it an upper bound of the time the instrumentation adds, not an estimate.\n")
exits = [r for r in rows if r["exit"] != 0 and r["rank"] == 0]
if exits:
    print(f"{len(exits)} of {len(rows) // 2} runs failed at exit after their last step (torch's own abort, exit "
          + ", ".join(str(r["exit"]) for r in exits) + "); their counts are whole.\n")
print("| torch | model | rank | instructions a step, not instrumented | instrumented | added | instrumented / not |")
print("|---|---|---:|---:|---:|---:|---:|")
worst = 0.0
for torch in dict.fromkeys(r["torch"] for r in rows):
    for model in dict.fromkeys(r["model"] for r in rows):
        for rank in (0, 1):
            off, on = per_step(torch, model, "off", rank), per_step(torch, model, "on", rank)
            worst = max(worst, on / off)
            print(f"| {torch} | {model} | {rank} | {off / 1e6:.2f} M | {on / 1e6:.2f} M | {(on - off) / 1e3:.0f} k | "
                  f"**{on / off:.4f}×** |")
ir = {r["passes"]: r["ir"] for r in (json.loads(l) for l in open(sys.argv[4]) if l.strip())}
grad_pass = (ir[110] - ir[10]) / 100
print(f"\nOf what is added, one pass over the MLP's gradients (2.68 MB) is {grad_pass / 1e3:.0f} k instructions "
      "(`bench/grad_pass.py`, torch 1.13: the difference of 10 and 110 in-place multiplies): the timing hook "
      "receives each bucket undivided and scales it itself, where DDP without a hook divides while copying into the "
      "bucket. Timed, that pass is a smaller share of the step than its share of the instructions here "
      "(python-overhead.sh's in-process tables give its time); the rest is the wrappers' Python.")
print(f"\nTarget: the instrumentation ≤ 2 % of the step on both torches — "
      f"{'met' if worst <= 1.02 else 'missed'} (at most {100 * (worst - 1):+.2f} %).")
PY
