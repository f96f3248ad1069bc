#!/usr/bin/env bash
# sampler-overhead.sh [OUT_DIR] [RUNS]: what `--profile`'s utilisation sampling costs.
# 1. The CPU time of one sample, as the worker takes it (bench/sampler_poll: /proc scanned, the
#    rank's threads, its cgroup, the host, a line written), and what that is of one core at the
#    default interval.
# 2. The same 2-rank job (train --model cnn, each rank pinned to its own core) under
#    `ddprun --profile` with --sample-ms 500 (the default) and 0 (no sampling), interleaved, RUNS
#    times each (default 7): the median step time of each run, and their medians' ratio.
# Writes its section of docs/benchmarks.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DDP_BUILD_DIR:-$root/build}
out=${1:-$root/bench/results}
runs=${2:-7}
[[ $runs =~ ^[1-9][0-9]*$ ]] || { echo "sampler-overhead.sh: RUNS must be a positive count, not '$runs'" >&2; exit 2; }
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
poll=$("$build/bench/sampler_poll" 2000)
echo "$poll"
results=$out/sampler-overhead.jsonl
: >"$results"
steps=600
for i in $(seq "$runs"); do
  for ms in 0 500; do
    run=$work/run-$i-$ms
    "$build/launcher/ddprun" --profile --sample-ms "$ms" --output quiet --log-level error --run-dir "$run" -np 2 -- \
      sh -c 'exec taskset -c $RANK "$0" "$@"' "$build/examples/train" --model cnn --batch-size 32 --steps "$steps" \
      --log-every 100000 >/dev/null 2>&1 || { echo "sampler-overhead.sh: the run with --sample-ms $ms failed ($run)" >&2; exit 1; }
    /usr/bin/python3 - "$run" "$ms" "$i" <<'PY' | tee -a "$results"
import glob, json, sys
run, ms, i = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
r = json.load(open(f"{run}/report.json"))
samples = sum(sum(1 for l in open(f) if l.strip()) for f in glob.glob(f"{run}/util/*.jsonl"))
print(json.dumps({"run": i, "sample_ms": ms, "step_ms_median": r["steps"]["step_ms_median"], "samples": samples}))
PY
  done
done
/usr/bin/python3 - "$results" "$steps" "$poll" <<'PY' | /usr/bin/python3 "$root/bench/update_section.py" "$root/docs/benchmarks.md" sampler-overhead
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
steps, poll = int(sys.argv[2]), json.loads(sys.argv[3])
on = [r for r in rows if r["sample_ms"] == 500]
off = [r for r in rows if r["sample_ms"] == 0]
step_on = statistics.median(r["step_ms_median"] for r in on)
step_off = statistics.median(r["step_ms_median"] for r in off)
print("## Utilisation sampling (`bench/sampler-overhead.sh`)\n")
print(f"One sample, as ddprun's worker takes it for a rank (`bench/sampler_poll`, {poll['polls']} samples of a real "
      f"process group with {poll['processes']} processes in /proc): **{poll['cpu_us_per_sample'] / 1000:.2f} ms** of CPU, "
      f"{poll['wall_us_per_sample'] / 1000:.2f} ms wall; at the default 500 ms interval that is "
      f"**{100 * poll['cpu_us_per_sample'] / 500e3:.2f} %** of one core per rank.\n")
print(f"End to end: 2 ranks of `train --model cnn` ({steps} steps, each rank pinned to its own core) under "
      f"`ddprun --profile`, {len(on)} interleaved runs with and without sampling, the median of the runs' median step "
      "time.\n")
print("| `--sample-ms` | samples per run (both ranks) | step time | vs unsampled |")
print("|---:|---:|---:|---:|")
print(f"| 0 (off) | 0 | {step_off:.2f} ms | 1.000× |")
print(f"| 500 | {statistics.median(r['samples'] for r in on):.0f} | {step_on:.2f} ms | **{step_on / step_off:.3f}×** |")
PY
