#!/usr/bin/env bash
# slurm-launch.sh [OUT_DIR] [RUNS]: inside one allocation of the local 2-node Slurm cluster
# (scripts/slurm-local, -N2 -n4), the wall time to start and finish 4 ranks of /bin/true across
# both nodes: `srun -n4`, `mpirun -np 4` (Open MPI starts its daemons with srun), `ddprun -np 4`
# (through mpirun) and `ddprun --launcher srun` (and the `srun --mpi=pmix` it runs), interleaved, RUNS times each (default 15),
# median. Writes its section of docs/benchmarks.md. Needs root (it starts the cluster and stops it).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DDP_BUILD_DIR:-$root/build}
out=${1:-$root/bench/results}
runs=${2:-15}
mkdir -p "$out"
out=$(cd "$out" && pwd)
cluster=$root/scripts/slurm-local
trap '"$cluster" down >/dev/null 2>&1 || true' EXIT
"$cluster" up >/dev/null
eval "$("$cluster" env)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
results=$out/slurm-launch.jsonl
: >"$results"
# Everything below runs inside the allocation, on the launching host as salloc leaves it.
salloc -N2 -n4 bash -s "$build" "$runs" "$results" <<'IN'
set -euo pipefail
build=$1 runs=$2 results=$3
work=$(mktemp -d)
seconds() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }; e=$(date +%s%N); echo "$(( (e - s) / 1000 ))"; }
for i in $(seq "$runs"); do
  s=$(seconds srun -n4 /bin/true)
  p=$(seconds srun --mpi=pmix -n4 /bin/true)
  m=$(seconds mpirun -np 4 /bin/true)
  d=$(seconds "$build/launcher/ddprun" --log-level error --run-dir "$work/m-$i" -np 4 /bin/true)
  r=$(seconds "$build/launcher/ddprun" --log-level error --launcher srun --run-dir "$work/s-$i" -np 4 /bin/true)
  echo "{\"run\": $i, \"srun_us\": $s, \"srun_pmix_us\": $p, \"mpirun_us\": $m, \"ddprun_us\": $d, \"ddprun_srun_us\": $r}" | tee -a "$results"
done
rm -rf "$work"
IN
/usr/bin/python3 - "$results" <<'PY' | /usr/bin/python3 "$root/bench/update_section.py" "$root/docs/benchmarks.md" slurm-launch
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
keys = ("srun_us", "srun_pmix_us", "mpirun_us", "ddprun_us", "ddprun_srun_us")
med = {k: statistics.median(r[k] for r in rows) / 1000 for k in keys}
best = min(med["srun_us"], med["mpirun_us"])
print("## Launch in a Slurm allocation (`bench/slurm-launch.sh`)\n")
print(f"4 ranks of /bin/true across the 2 nodes of `scripts/slurm-local` (`salloc -N2 -n4`), started and finished;")
print(f"{len(rows)} interleaved runs of each inside one allocation, median wall time, against the faster of srun and mpirun.\n")
print("| launcher | median | vs the faster of srun and mpirun |")
print("|---|---:|---:|")
for key, name in (("srun_us", "`srun -n4 /bin/true`"),
                  ("srun_pmix_us", "`srun --mpi=pmix -n4 /bin/true` (what `--launcher srun` starts)"),
                  ("mpirun_us", "`mpirun -np 4 /bin/true`"),
                  ("ddprun_us", "`ddprun -np 4 /bin/true` (mpirun)"),
                  ("ddprun_srun_us", "`ddprun --launcher srun -np 4 /bin/true`")):
    bold = "**" if key.startswith("ddprun") else ""
    print(f"| {name} | {med[key]:.0f} ms | {bold}{med[key] / best:.2f}×{bold} |")
print(f"\nAgainst the launch each one wraps: ddprun through mpirun {med['ddprun_us'] / med['mpirun_us']:.2f}× mpirun, "
      f"ddprun --launcher srun {med['ddprun_srun_us'] / med['srun_pmix_us']:.2f}× `srun --mpi=pmix`.")
PY
