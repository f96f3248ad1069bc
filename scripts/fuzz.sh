#!/usr/bin/env bash
# fuzz.sh: builds the libFuzzer targets (fuzz/, clang with ASan + UBSan) and runs each one from
# its seed corpus (fuzz/corpus/TARGET), printing runs, time and the verdict per target.
#   scripts/fuzz.sh --runs 10000000              every target, 10 M executions each (the benchmark)
#   scripts/fuzz.sh --seconds 600 nccl_log       one target for 10 minutes
#   scripts/fuzz.sh --smoke                      10 s each (CI)
# New inputs go to BUILD/corpus/TARGET (the seeds in the repository are left alone); a crash, leak,
# sanitizer report or timeout leaves BUILD/artifacts/TARGET-* and makes the script exit 1.
# With --runs or --seconds and every target, it writes its table into docs/reliability.md.
# BUILD is $DDP_FUZZ_BUILD, default build-fuzz.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DDP_FUZZ_BUILD:-$root/build-fuzz}
limit=(-max_total_time=60) what="60 s"
targets=()
write_doc=1
invocation="scripts/fuzz.sh $*"
while [ $# -gt 0 ]; do
  case $1 in
    --smoke) limit=(-max_total_time=10) what="10 s"; write_doc=0; shift ;;
    --seconds) [[ ${2:-} =~ ^[0-9]+$ ]] || { echo "fuzz.sh: --seconds needs a number" >&2; exit 2; }
               limit=(-max_total_time="$2") what="$2 s"; shift 2 ;;
    --runs) [[ ${2:-} =~ ^[0-9]+$ ]] || { echo "fuzz.sh: --runs needs a number" >&2; exit 2; }
            limit=(-runs="$2") what="$2 runs"; shift 2 ;;
    nccl_log|hostfile|slurm|timings) targets+=("$1"); shift ;;
    *) echo "fuzz.sh: unknown argument '$1' (targets: nccl_log hostfile slurm timings)" >&2; exit 2 ;;
  esac
done
if [ ${#targets[@]} -gt 0 ]; then write_doc=0; else targets=(nccl_log hostfile slurm timings); fi
command -v clang++ >/dev/null || { echo "fuzz.sh: clang++ not found (scripts/install-deps.sh installs clang)" >&2; exit 2; }

CXX=clang++ cmake -S "$root/fuzz" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
ninja -C "$build" -j2 >/dev/null
declare -A max_len=([nccl_log]=1024 [hostfile]=256 [slurm]=128 [timings]=1024)
mkdir -p "$build/artifacts"
status=0
declare -A what_checks=(
  [nccl_log]="the NCCL log parser, line by line; the facts as JSON and as the summary (on the quarter of inputs whose first byte is a multiple of 4)"
  [hostfile]="hostfiles and \`-H\` lists: parsed with named hosts and positive slots, or a ConfigError"
  [slurm]="Slurm node and tasks-per-node lists (node cap 1000: the grammar, not size)"
  [timings]="timings lines: a ConfigError, or a record that survives format → parse unchanged")
rows=()
printf '%-10s %12s %9s %10s  %s\n' target runs seconds "runs/s" result
for t in "${targets[@]}"; do
  mkdir -p "$build/corpus/$t"
  log="$build/$t.log"
  set +e
  "$build/fuzz_$t" "${limit[@]}" -max_len="${max_len[$t]}" -timeout=30 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$t-" "$build/corpus/$t" "$root/fuzz/corpus/$t" >"$log" 2>&1
  rc=$?
  set -e
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -1)
  result=clean
  if [ $rc -ne 0 ] || grep -q "^SUMMARY:" "$log"; then
    result="FAILED: $(grep -m1 -E '^SUMMARY:|ERROR:' "$log" || echo "exit $rc") (see $log)"
    status=1
  fi
  rate=-
  [ -n "${secs:-}" ] && [ "${secs:-0}" -gt 0 ] && rate=$(( ${runs:-0} / secs ))
  printf '%-10s %12s %9s %10s  %s\n' "$t" "${runs:--}" "${secs:--}" "$rate" "$result"
  rows+=("| \`$t\` | ${what_checks[$t]} | $((max_len[$t] >= 1024 ? max_len[$t] / 1024 : max_len[$t]))$( ((max_len[$t] >= 1024)) && echo " KiB" || echo " B") | ${runs:--} | ${secs:--} s | ${rate} | ${result%% (see*} |")
done
echo "fuzz.sh: $what per target, ASan + UBSan + libFuzzer (clang $(clang++ -dumpversion))"
if ((write_doc)); then
  {
    echo "## Fuzzing (\`fuzz/\`, \`scripts/fuzz.sh\`)"
    echo
    echo "libFuzzer targets built with clang $(clang++ -dumpversion), \`-fsanitize=fuzzer,address,undefined\` (UBSan without"
    echo "recovery; LeakSanitizer on), from the seed corpus in \`fuzz/corpus/\` (our own H200 NCCL logs and"
    echo "synthetic multi-host ones, hostfiles, Slurm lists, timings lines, and every input that once"
    echo "failed). Written by \`$invocation\` ($what per target, one after the other, on"
    echo "this machine's $(nproc) cores, $(date -u +%Y-%m-%d)); CTest \`fuzz.smoke\` runs 10 s of each."
    echo "\"clean\": no crash, no sanitizer report, no leak, no timeout, no escaping exception."
    echo
    echo "| target | what it checks | max input | runs | time | runs/s | result |"
    echo "|---|---|---:|---:|---:|---:|---|"
    printf '%s\n' "${rows[@]}"
  } | /usr/bin/python3 "$root/bench/update_section.py" "$root/docs/reliability.md" fuzz
fi
exit $status
