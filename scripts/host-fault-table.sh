#!/usr/bin/env bash
# host-fault-table.sh: the multi-host fault table of docs/reliability.md ("Whole hosts"): runs
# tests/tools/host-loss-check.sh and host-restart-check.sh (simulated hosts) and
# tests/tools/slurm-check.sh (the local Slurm cluster) with FAULT_TABLE set, and writes their rows —
# scenario, launcher, where, how long ddprun took after the cause, the culprit it named, its exit
# code, processes left per host — into the doc. Any check failing fails this script. Needs root;
# built binaries in build/.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DDP_BUILD_DIR:-$root/build}
export FAULT_TABLE
FAULT_TABLE=$(mktemp)
trap 'rm -f "$FAULT_TABLE"' EXIT
export DDPRUN=$build/launcher/ddprun TRAIN=$build/examples/train
"$root/tests/tools/host-loss-check.sh"
DDPROF=$build/profiler/ddprof "$root/tests/tools/host-restart-check.sh"
"$root/tests/tools/slurm-check.sh"
/usr/bin/python3 - "$FAULT_TABLE" <<'PY' | /usr/bin/python3 "$root/bench/update_section.py" "$root/docs/reliability.md" host-faults
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
print("Written by `scripts/host-fault-table.sh` (the checks `simhosts.e2e.host_loss`, `simhosts.e2e.host_restart`")
print("and `slurm.e2e.cluster` run in CTest). \"After the cause\": from the kill, the freeze or the link going down")
print("to ddprun's exit (\"-\" where the job went on). \"Left\": processes of the job on each host once")
print("ddprun has exited (the checks fail otherwise).\n")
print("| scenario | launcher | where | after the cause | culprit named | exit | left |")
print("|---|---|---|---:|---|---:|---|")
for r in rows:
    after = "-" if r["ms"] is None else f"{r['ms'] / 1000:.2f} s"
    print(f"| {r['scenario']} | {r['launcher']} | {r['where']} | {after} | {r['culprit']} | {r['exit']} | {r['left']} |")
PY
