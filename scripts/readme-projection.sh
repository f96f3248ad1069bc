#!/usr/bin/env bash
# readme-projection.sh [RUN]: projects the main job's run (default ddprun-runs/main-job, written
# by scripts/main-job.sh) onto one NVLink host with 8 GPUs (ecs.gn7e-c16g1.32xlarge) and onto two
# eRDMA hosts (ecs.ebmgn7ex.32xlarge x 2), after what `ddprof instances` says of both, and writes
# the commands and what ddprof said into README.md (section projection), so the README's example
# is this machine's real output.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DDP_BUILD_DIR:-$root/build}
run=${1:-$root/ddprun-runs/main-job}
[ -f "$run/run.json" ] || { echo "readme-projection.sh: $run holds no run (run scripts/main-job.sh first)" >&2; exit 2; }
instances=(ecs.gn7e-c16g1.32xlarge ecs.ebmgn7ex.32xlarge)
targets=(--to "${instances[0]}" --to "hosts=2,instance=${instances[1]}")
listed=$("$build/profiler/ddprof" instances "${instances[@]}")
out=$("$build/profiler/ddprof" project "$run" "${targets[@]}")
{
  echo '```'
  echo "\$ ddprof instances ${instances[*]}"
  echo "$listed"
  echo
  echo "\$ ddprof project ddprun-runs/main-job ${targets[*]}"
  # The table and the verdict; the assumptions are in the full output.
  sed -e '1d' -e '/^assumptions/,$d' <<<"$out" | sed -e '/./,$!d' | head -n -1  # the blank line before them
  echo '```'
} | /usr/bin/python3 "$root/bench/update_section.py" "$root/README.md" projection
