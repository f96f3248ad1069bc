#!/usr/bin/env bash
# busy-core.sh [OUT_DIR] [RUNS]: how the comm backends hold up when a rank shares its core with
# an ordinary busy process. Two ranks of `train --model cnn --batch-size 32`, each pinned to its
# own core (`ddprun -np 2 -- sh -c 'exec taskset -c $RANK train …'`), and a shell busy loop pinned
# to one rank's core (rank 1's, then rank 0's), over the mpi backend (the default) and over Gloo;
# and over mpi with Open MPI's yield-when-idle polling (OMPI_MCA_mpi_yield_when_idle=1: its
# progress loop calls sched_yield while it waits); RUNS rounds (default 5), the runs of a round
# back to back in an order that alternates.
# Per run, from rank 0's step records: the median and p95 step and the time of all its steps.
# Targets (issue "Performance pass"): p95 / median ≤ 2, and mpi's steps ≤ 1.0× Gloo's.
# Writes its section of docs/benchmarks.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DDP_BUILD_DIR:-$root/build}
out=${1:-$root/bench/results}
runs=${2:-5}
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "busy-core.sh: RUNS must be a positive count, not '$runs'" >&2; exit 2; }
mkdir -p "$out"
work=$(mktemp -d)
busy=
trap '[[ -n $busy ]] && kill "$busy" 2>/dev/null; rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
results=$out/busy-core.jsonl
: >"$results"
steps=150
for i in $(seq "$runs"); do
  order=(mpi gloo mpi-yield)
  ((i % 2 == 0)) && order=(mpi-yield gloo mpi)
  for core in 1 0; do
    for backend in "${order[@]}"; do
      run=$work/$backend-$core-$i
      taskset -c "$core" sh -c 'while :; do :; done' &
      busy=$!
      yield=()
      [[ $backend == mpi-yield ]] && yield=(OMPI_MCA_mpi_yield_when_idle=1)
      env "${yield[@]}" "$build/launcher/ddprun" --profile --output quiet --log-level error --run-dir "$run" -np 2 -- \
        sh -c 'exec taskset -c $RANK "$0" "$@"' "$build/examples/train" --model cnn --batch-size 32 --steps "$steps" \
        --backend "${backend%-yield}" --log-every 100000 >"$run.out" 2>&1 ||
        { echo "busy-core.sh: the $backend run failed ($run.out)" >&2; cat "$run.out" >&2; exit 1; }
      kill "$busy"
      wait "$busy" 2>/dev/null || true
      busy=
      /usr/bin/python3 - "$run" "$backend" "$core" "$i" <<'PY' | tee -a "$results"
import json, statistics, sys
run, backend, core, i = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
steps = [json.loads(l)["step_ms"] for l in open(f"{run}/timings/rank-00000.jsonl") if l.strip()]
timed = sorted(steps[5:])  # the first steps warm up
print(json.dumps({"run": i, "backend": backend, "busy_core": core, "median_ms": statistics.median(timed),
                  "p95_ms": timed[int(0.95 * (len(timed) - 1))], "max_ms": timed[-1], "total_s": sum(steps) / 1000}))
PY
    done
  done
done
/usr/bin/python3 - "$results" "$steps" "$runs" <<'PY' | /usr/bin/python3 "$root/bench/update_section.py" "$root/docs/benchmarks.md" busy-core
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
steps, runs = int(sys.argv[2]), int(sys.argv[3])
def pick(backend, core):
    return [r for r in rows if r["backend"] == backend and r["busy_core"] == core]
print("## A rank's core shared with a busy process (`bench/busy-core.sh`)\n")
print(f"Two ranks of `train --model cnn --batch-size 32` ({steps} steps), each pinned to its own core, and a shell busy "
      "loop pinned to one rank's core, over the mpi backend (the default), over Gloo, and over mpi with Open MPI's "
      "`OMPI_MCA_mpi_yield_when_idle=1` (its progress loop yields the core while it waits); "
      f"{runs} rounds, the runs of a round back to back in alternating order. Per run, from rank 0's step records "
      "(the first 5 steps left out): median and p95 step, and the time of all its steps; the table gives the medians "
      "over the runs, and the mpi / Gloo ratio of the total time per round.\n")
print("| busy core | backend | median step | p95 step | p95 / median | worst step | steps' total | mpi / Gloo (total) |")
print("|---:|---|---:|---:|---:|---:|---:|---:|")
verdicts = []
for core in (1, 0):
    ratios = [m["total_s"] / g["total_s"] for m, g in zip(pick("mpi", core), pick("gloo", core))]
    for backend in ("mpi", "gloo", "mpi-yield"):
        rs = pick(backend, core)
        med = statistics.median(r["median_ms"] for r in rs)
        p95 = statistics.median(r["p95_ms"] for r in rs)
        tail = max(r["p95_ms"] / r["median_ms"] for r in rs)
        cell = f"**{statistics.median(ratios):.2f}×** ({min(ratios):.2f}–{max(ratios):.2f})" if backend == "mpi" else ""
        print(f"| {core} (rank {core}'s) | {backend} | {med:.1f} ms | {p95:.1f} ms | {p95 / med:.2f} (worst run {tail:.2f}) | "
              f"{max(r['max_ms'] for r in rs):.0f} ms | {statistics.median(r['total_s'] for r in rs):.2f} s | {cell} |")
        verdicts.append(f"{backend}, busy core {core}: p95 / median {p95 / med:.2f} — {'met' if tail <= 2 else 'missed'} "
                        f"(worst run {tail:.2f})")
    verdicts.append(f"mpi / Gloo, busy core {core}: {statistics.median(ratios):.2f}× — "
                    f"{'met' if statistics.median(ratios) <= 1.0 else 'missed'}")
yields, effect = [], []
for core in (1, 0):
    r = statistics.median(y["total_s"] / m["total_s"] for y, m in zip(pick("mpi-yield", core), pick("mpi", core)))
    yields.append(f"{r:.2f}× with rank {core}'s core busy")
    effect.append("helps" if r < 0.95 else "hurts" if r > 1.05 else "same")
verdict = ("it helped in both settings" if effect == ["helps", "helps"] else
           "it hurt in both settings" if effect == ["hurts", "hurts"] else
           "no consistent effect across the two settings")
print(f"\nOpen MPI's yield-when-idle against its default polling, the steps' total per round: {', '.join(yields)}: "
      f"{verdict}. ddprun leaves Open MPI's polling at its default; before each collective over 64 KB the mpi backend "
      "waits for every rank itself (on one host at the shared-memory window's barrier, which sleeps after 20 µs), so "
      "Open MPI polls only once all have arrived (docs/comm.md, \"Polite arrival\").")
print("\nTargets: p95 / median ≤ 2 in every run; mpi's steps take no longer than Gloo's (median over rounds ≤ 1.0×).\n")
for v in verdicts:
    print(f"- {v}")
PY
