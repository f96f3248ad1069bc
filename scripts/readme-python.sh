#!/usr/bin/env bash
# readme-python.sh: runs an unchanged PyTorch DDP script under `ddprun --profile -np 2`
# (tests/python/scripts/heavy_transform.py: a DataLoader with num_workers=0 and a heavy per-sample
# transform) and writes the head of its report into README.md (section python-report), so the
# README's Python example shows what the profiler really said on this machine.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DDP_BUILD_DIR:-$root/build}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
unset PYTHONUNBUFFERED
"$build/launcher/ddprun" --profile --output quiet --log-level error --run-dir "$work/run" -np 2 \
  /usr/bin/python3 "$root/tests/python/scripts/heavy_transform.py" >/dev/null
report=$work/run/report.txt
{
  echo '```'
  echo "\$ ddprun --profile -np 2 /usr/bin/python3 heavy_transform.py   # tests/python/scripts/, unchanged"
  # The summary up to the findings' first entry, with its fix.
  /usr/bin/python3 - "$report" <<'PY'
import sys
lines = open(sys.argv[1]).read().splitlines()
out, in_findings = [], False
for line in lines:
    if line.startswith("ddprof report:"):
        continue  # the temporary run directory
    if line.startswith("findings"):
        in_findings = True
        out.append(line)
        continue
    if in_findings:
        if line.startswith("  [") and any(l.startswith("  [") for l in out):
            break
        if not line.strip():
            break
    out.append(line)
print("\n".join(out).rstrip())
PY
  echo '```'
} | /usr/bin/python3 "$root/bench/update_section.py" "$root/README.md" python-report
echo "readme-python.sh: README.md's python-report section written from $report"
