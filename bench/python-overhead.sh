#!/usr/bin/env bash
# python-overhead.sh [OUT_DIR] [RUNS]: what the automatic Python instrumentation costs a step. The
# same plain DDP script (bench/python_step.py over Gloo, a DataLoader, SGD; it times its own
# iterations, data included, and the CPU time of its process) under `ddprun --profile` with the
# instrumentation and with --no-instrument, one after the other (which one first alternates from
# pair to pair, so a drift of the host's speed does not favour either), RUNS pairs (default 21):
# an MLP and a small CNN on 2 ranks (each pinned to its own core), as the ratio of each pair's
# median steps and of its CPU time per step, the median over pairs and their quartiles. Then,
# inside one process (bench/python_ab.py), the cost without the run-to-run drift: the fixed cost
# per step, from one linear layer on 1 rank (a step so short that it shows in microseconds), and
# the pass over the MLP's gradients that a timing hook adds. PY (default /usr/bin/python3, Debian's
# torch 1.13) is the Python the ranks run: PY=.venv-torch2/bin/python measures torch 2.13. Writes its
# section of docs/benchmarks.md, one per torch major version.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DDP_BUILD_DIR:-$root/build}
out=${1:-$root/bench/results}
runs=${2:-21}
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "python-overhead.sh: RUNS must be a positive count, not '$runs'" >&2; exit 2; }
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset PYTHONUNBUFFERED
py=${PY:-/usr/bin/python3}
torch_version=$("$py" -c 'import torch; print(torch.__version__)') ||
  { echo "python-overhead.sh: $py cannot import torch" >&2; exit 2; }
section=python-overhead
[[ $torch_version == 1.* ]] || section=python-overhead-torch${torch_version%%.*}
results=$out/$section.jsonl
: >"$results"
steps=300
for i in $(seq "$runs"); do
  for model in mlp cnn; do
    order=(off on)
    ((i % 2 == 0)) && order=(on off)
    for mode in "${order[@]}"; do
      flag=()
      [[ $mode == off ]] && flag=(--no-instrument)
      run=$work/$model-$mode-$i
      rc=0
      "$build/launcher/ddprun" --profile "${flag[@]}" --output rank:0 --log-level error --run-dir "$run" -np 2 -- \
        sh -c 'exec taskset -c $RANK "$0" "$@"' "$py" "$root/bench/python_step.py" "$model" "$steps" \
        >"$run.out" 2>&1 || rc=$?
      # A run that printed its result and then failed at exit still measured its steps (torch
      # 2.13 aborts at exit now and then: "terminate called without an active exception"); the
      # page counts those.
      # (the first: a failure report quotes the rank's last lines again)
      line=$(grep -m1 -o '{"model".*}' "$run.out") ||
        { echo "python-overhead.sh: $model ($mode) failed (exit $rc); see $run" >&2; cat "$run.out" >&2; exit 1; }
      /usr/bin/python3 -c 'import json, sys; r = json.loads(sys.argv[1]); r.update(mode=sys.argv[2], run=int(sys.argv[3]), exit=int(sys.argv[4])); print(json.dumps(r))' \
        "$line" "$mode" "$i" "$rc" | tee -a "$results"
    done
  done
done
# Inside one process: an instrumented and an uninstrumented model in alternating blocks.
inproc=$out/$section-inproc.jsonl
: >"$inproc"
for spec in "tiny 1" "mlp 2"; do
  read -r model np <<<"$spec"
  run=$work/ab-$model
  "$build/launcher/ddprun" --profile --output rank:0 --log-level error --run-dir "$run" -np "$np" -- \
    sh -c 'exec taskset -c $RANK "$0" "$@"' "$py" "$root/bench/python_ab.py" "$model" 20 100 >"$run.out" 2>&1 ||
    { echo "python-overhead.sh: python_ab.py $model failed; see $run" >&2; cat "$run.out" >&2; exit 1; }
  grep -o '{"model".*}' "$run.out" | tee -a "$inproc"
done
/usr/bin/python3 - "$results" "$steps" "$torch_version" "$inproc" <<'PY' | /usr/bin/python3 "$root/bench/update_section.py" "$root/docs/benchmarks.md" "$section"
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
steps, torch_version = int(sys.argv[2]), sys.argv[3]
runs = len([r for r in rows if r["model"] == "mlp" and r["mode"] == "on"])
def ms(model, mode, run, key="step_ms_median"):
    return next(r[key] for r in rows if (r["model"], r["mode"], r["run"]) == (model, mode, run))
def quartiles(values):
    if len(values) < 2:
        return "one pair"
    q = statistics.quantiles(values, n=4)
    return f"{q[0]:.3f}–{q[2]:.3f}"

print(f"## Python instrumentation overhead, torch {torch_version} (`bench/python-overhead.sh`)\n")
print(f"`bench/python_step.py` (plain DDP over Gloo, torch {torch_version}, a DataLoader, SGD, batch 32 per rank) under "
      f"`ddprun --profile`, with ddprun's automatic instrumentation and with `--no-instrument`, run one after the other "
      f"{runs} times ({steps} steps each, every rank pinned to its own core; which of the two runs first alternates). "
      "The script times its own iterations, the next batch included, and the CPU time its process used per step "
      "(every thread). Per pair the ratio of the two runs' median steps and of their CPU time per step; the table "
      "gives the median over the pairs and, in brackets, their lower and upper quartiles: this machine's step times "
      "move from run to run by more than the difference, so only paired ratios mean anything, and their spread says "
      "how far to trust them.\n")
failed = [r for r in rows if r.get("exit", 0) != 0]
if failed:
    print(f"{len(failed)} of {len(rows)} runs failed at exit after their last step (" +
          ", ".join(f"{r['model']} {'instrumented' if r['mode'] == 'on' else 'not instrumented'} exit {r['exit']}"
                    for r in failed) + "); their steps count.\n")
print("| model | ranks | step, not instrumented | step, instrumented | step: instrumented / not | CPU per step: instrumented / not |")
print("|---|---:|---:|---:|---:|---:|")
for model in ("mlp", "cnn"):
    pairs = [(ms(model, "off", i), ms(model, "on", i)) for i in range(1, runs + 1)]
    cpu = [ms(model, "on", i, "cpu_ms_per_step") / ms(model, "off", i, "cpu_ms_per_step") for i in range(1, runs + 1)]
    off = statistics.median(p[0] for p in pairs)
    on = statistics.median(p[1] for p in pairs)
    ratios = [p[1] / p[0] for p in pairs]
    nranks = next(r["np"] for r in rows if r["model"] == model)
    print(f"| {model} | {nranks} | {off:.3f} ms | {on:.3f} ms | **{statistics.median(ratios):.3f}×** "
          f"({quartiles(ratios)}) | {statistics.median(cpu):.3f}× ({quartiles(cpu)}) |")
inproc = {r["model"]: r for r in (json.loads(l) for l in open(sys.argv[4]) if l.strip())}
print("\nInside one process (`bench/python_ab.py`): two copies of the model, one followed by the instrumentation "
      "and one not, trained in alternating blocks of 100 steps, so both see the host at the same minute; the median "
      "over the blocks of the difference of their medians, with its quartiles.\n")
print("| model | ranks | step, not instrumented | added per step | gradients | one pass scaling them |")
print("|---|---:|---:|---:|---:|---:|")
for model in ("tiny", "mlp"):
    r = inproc[model]
    low, high = r["added_us_quartiles"]
    print(f"| {model} | {r['np']} | {r['step_us_off'] / 1000:.3f} ms | **{r['added_us']:.0f} µs** ({low:.0f}–{high:.0f}) | "
          f"{r['grad_bytes'] / 1e6:.2f} MB | {r['scale_pass_us']:.0f} µs ({100 * r['scale_pass_us'] / r['step_us_off']:.1f} %) |")
tiny, mlp = inproc["tiny"], inproc["mlp"]
print(f"\nThe fixed cost, from the one-layer model: **{tiny['added_us']:.0f} µs** a step: the wrappers of the "
      "DataLoader, forward, backward and optimizer calls, the bucket hook (a Python call per bucket and a Python "
      "callback when its allreduce completes), the heartbeat and the record written at the end of the step. The "
      "cost that grows with the model is one pass over the gradients: without a hook DDP divides each gradient by "
      "the world size while copying it into its bucket; a hook receives the bucket undivided, so the timing hook "
      "scales it itself, bit for bit what DDP computes. On the MLP that pass alone is "
      f"{100 * mlp['scale_pass_us'] / mlp['step_us_off']:.1f} % of the step on this machine's memory bandwidth; on a "
      "GPU it is a kernel at several hundred GB/s.")
print("\nOn CUDA the instrumentation records CUDA events and never synchronises (no `.item()`, no "
      "`torch.cuda.synchronize()`): 0 extra synchronisations by construction; not measured on this machine (no GPU).")
PY
