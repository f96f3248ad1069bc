#!/usr/bin/env bash
# readme-projection.sh [RUN]: projects the main job's run (default ddprun-runs/main-job, written
# by scripts/main-job.sh) onto one NVLink instance with 8 GPUs and onto 2 such hosts over eRDMA,
# and writes the command and what ddprof said into README.md (section projection), so the
# README's example is this machine's real output.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DDP_BUILD_DIR:-$root/build}
run=${1:-$root/ddprun-runs/main-job}
[ -f "$run/run.json" ] || { echo "readme-projection.sh: $run holds no run (run scripts/main-job.sh first)" >&2; exit 2; }
targets=(--to hosts=1,gpus=8,instance=ebmgn7e --to hosts=2,gpus=8,instance=ebmgn7e,inter=erdma:25gbit)
out=$("$build/profiler/ddprof" project "$run" "${targets[@]}")
{
  echo '```'
  echo "\$ ddprof project ddprun-runs/main-job ${targets[*]}"
  # The table and the verdict; the assumptions are in the full output.
  sed -e '1d' -e '/^assumptions/,$d' <<<"$out" | sed -e '/./,$!d' | head -n -1  # the blank line before them
  echo '```'
} | /usr/bin/python3 "$root/bench/update_section.py" "$root/README.md" projection
