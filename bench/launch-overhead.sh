#!/usr/bin/env bash
# launch-overhead.sh [OUT_DIR] [RUNS]: the wall time to start and finish 4 ranks of a program that
# does nothing: `ddprun -np 4 /bin/true` against `mpirun -np 4 /bin/true` and against torchrun
# (Debian's python3-torch, `python3 -m torch.distributed.run --nproc_per_node 4` on a script that
# only imports nothing and exits), interleaved, RUNS times each (default 15), median. Also ddprun
# with the worker that is its own binary (`ddprun worker`: a copy of ddprun alone in a directory,
# without ddprun-worker beside it), to show what the lean worker binary saves; ddprun with its
# versions cache empty; and mpirun with the hwloc setting ddprun gives it. Two more rows split
# ddprun's cost, both with that hwloc setting: mpirun starting each rank through bench/spawn_floor
# (the least any per-rank supervisor adds: one more process), and through ddprun-worker without
# ddprun (the worker on its own: its start, the rank log, the exit record). Writes its section of
# docs/benchmarks.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DDP_BUILD_DIR:-$root/build}
out=${1:-$root/bench/results}
runs=${2:-15}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
echo 'pass' >"$work/trivial.py"
mkdir "$work/solo" && cp "$build/launcher/ddprun" "$work/solo/ddprun"
results=$out/launch-overhead.jsonl
: >"$results"
seconds() { local s e; s=$(date +%s%N); "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; exit 1; }; e=$(date +%s%N); echo "$(( (e - s) / 1000 ))"; }
# ddprun's versions cache (docs/launcher.md, run.json) in a directory of this run's own: filled
# once before the timed runs; the cold row gives each run an empty one.
export XDG_CACHE_HOME=$work/cache
"$build/launcher/ddprun" --log-level error --run-dir "$work/warm-up" -np 4 /bin/true >/dev/null 2>&1
no_plugins=hwloc_gl,hwloc_opencl,hwloc_xml_libxml
mpirun4() { seconds mpirun -np 4 --oversubscribe --bind-to none "$@"; }  # 4 ranks, as ddprun starts them
for i in $(seq "$runs"); do
  m=$(mpirun4 /bin/true)
  d=$(seconds "$build/launcher/ddprun" --log-level error --run-dir "$work/run-$i" -np 4 /bin/true)
  h=$(HWLOC_PLUGINS_BLACKLIST=$no_plugins mpirun4 /bin/true)
  c=$(XDG_CACHE_HOME=$work/cold-$i seconds "$build/launcher/ddprun" --log-level error --run-dir "$work/cold-run-$i" \
        -np 4 /bin/true)
  s=$(seconds "$work/solo/ddprun" --log-level error --run-dir "$work/solo-$i" -np 4 /bin/true)
  f=$(HWLOC_PLUGINS_BLACKLIST=$no_plugins mpirun4 "$build/bench/spawn_floor" /bin/true)
  mkdir -p "$work/alone-$i/ranks"
  a=$(HWLOC_PLUGINS_BLACKLIST=$no_plugins DDPRUN_RUN_DIR=$work/alone-$i mpirun4 -x DDPRUN_RUN_DIR \
        "$build/launcher/ddprun-worker" -- /bin/true)
  t=$(seconds /usr/bin/python3 -m torch.distributed.run --nproc_per_node 4 --log_dir "$work/torchrun-$i" \
        --redirects 1 --tee 1 "$work/trivial.py")
  echo "{\"run\": $i, \"mpirun_us\": $m, \"ddprun_us\": $d, \"mpirun_no_plugins_us\": $h, \"ddprun_cold_us\": $c, \"ddprun_self_worker_us\": $s, \"spawn_floor_us\": $f, \"worker_alone_us\": $a, \"torchrun_us\": $t}" | tee -a "$results"
done
torch_version=$(/usr/bin/python3 -c 'import torch; print(torch.__version__)')
/usr/bin/python3 - "$results" "$torch_version" <<'PY' | /usr/bin/python3 "$root/bench/update_section.py" "$root/docs/benchmarks.md" launch-overhead
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
med = {k: statistics.median(r[k] for r in rows) / 1000 for k in rows[0] if k.endswith("_us")}
# Each launcher against the mpirun run just before it: the machine's speed drifts between runs (whole
# stretches of runs slower by a tenth), and a ratio of two medians can take them from different stretches.
paired = {k: statistics.median(r[k] / r["mpirun_us"] for r in rows) for k in med}
ratio = paired["ddprun_us"]
print("## Launch overhead (`bench/launch-overhead.sh`)\n")
print(f"4 ranks of a program that does nothing, started and finished; {len(rows)} interleaved runs of each, median wall time;")
print("\"vs mpirun\" is the median over the runs of each run's ratio to the `mpirun` of the same run.")
print("ddprun adds its worker per rank, the control-socket rendezvous, the rank logs and exit records, and run.json")
print("on top of the mpirun it starts. run.json's versions come from ddprun's cache, filled by the first run with an")
print("installation (docs/launcher.md, run.json); the cold row empties it before each run, so each probes them (`mpirun")
print("--version`, libnccl loaded) at idle priority while the job runs. The mpirun ddprun starts loads no hwloc plugin")
print("for OpenGL, OpenCL or libxml2 (`HWLOC_PLUGINS_BLACKLIST`, docs/launcher.md); the row below plain mpirun is")
print("mpirun with that setting. ddprun loads libc and libm alone, and its worker, `ddprun-worker`, is linked static; one row")
print("runs `ddprun worker` instead (the ddprun binary: the dynamic loader, and its whole command line table read first;")
print("docs/launcher.md, \"The binaries\"). spawn_floor is linked static too.\n")
print("| launcher | median | vs mpirun |")
print("|---|---:|---:|")
def row(label, key, bold=False):
    r = paired[key]
    print(f"| {label} | {med[key]:.0f} ms | {'**' if bold else ''}{r:.2f}×{'**' if bold else ''} |")
row("`mpirun -np 4 /bin/true`", "mpirun_us")
row("the same, `HWLOC_PLUGINS_BLACKLIST=hwloc_gl,hwloc_opencl,hwloc_xml_libxml`", "mpirun_no_plugins_us")
row("`ddprun -np 4 /bin/true`", "ddprun_us", True)
row("the same, versions cache empty", "ddprun_cold_us")
row("the same, each rank's worker `ddprun worker`", "ddprun_self_worker_us")
row("`mpirun -np 4 spawn_floor /bin/true` (the hwloc setting; spawn_floor only starts and waits: bench/spawn_floor.cpp)",
    "spawn_floor_us")
row("`mpirun -np 4 ddprun-worker -- /bin/true` (the hwloc setting; the worker without ddprun)", "worker_alone_us")
row(f"`torchrun --nproc_per_node 4 trivial.py` (PyTorch {sys.argv[2]})", "torchrun_us")
def diff(a, b):  # ms: the median over the runs of a - b in the same run
    return statistics.median(r[a] - r[b] for r in rows) / 1000
print(f"\nWhere ddprun's {diff('ddprun_us', 'mpirun_no_plugins_us'):.0f} ms over the mpirun it starts go (the rows with the "
      f"hwloc setting, medians of each run's differences, which need not add up exactly): one more process per rank, "
      f"the least a supervisor of each rank costs, {diff('spawn_floor_us', 'mpirun_no_plugins_us'):+.0f} ms; the worker's "
      f"own start and files over that, {diff('worker_alone_us', 'spawn_floor_us'):+.0f} ms; ddprun itself (its start "
      f"before mpirun, the control connections and the rendezvous, the verdict and the records after), "
      f"{diff('ddprun_us', 'worker_alone_us'):+.0f} ms.")
print(f"\nTarget: ddprun ≤ 1.10× mpirun — {'met' if ratio <= 1.10 else 'missed'} ({ratio:.2f}×), "
      f"{diff('ddprun_us', 'mpirun_us'):+.0f} ms per launch, a fixed cost that does not grow with the job.")
PY
