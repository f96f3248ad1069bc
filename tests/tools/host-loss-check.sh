#!/usr/bin/env bash
# host-loss-check.sh: whole-host failures on 2 simulated hosts (scripts/simulate-hosts) while
# `ddprun -H sim0:2,sim1:2 train --backend gloo` runs, launched from sim0. DDPRUN and TRAIN in the
# environment.
#   dies      every process of sim1 killed at once (SIGKILL): ddprun names host sim1 and its ranks
#             2-3, ranks 0-1 collateral, exit 1, within 5 s; nothing of the job left on either host;
#   link      sim1's link taken down mid-run (no RST comes): the same, within 10 s of silence
#             (control::kLinkSilenceSeconds) plus the grace period; sim1's workers stop their
#             programs and mpirun's daemon there, so nothing is left on sim1 either;
#   never     sim1's link down before the start: mpirun fails before any rank starts; ddprun probes
#             each host alone and names sim1 and its ranks 2-3, non-zero exit, nothing left;
#   signals   SIGINT and SIGTERM to ddprun, 10 times each: exit 130/143, nothing left on either host.
# With FAULT_TABLE=FILE, appends one JSON row per scenario to FILE (row, scripts/host-fault-table.sh).
# Exits 77 (skipped, with the reason) where network namespaces cannot be made.
set -euo pipefail
. "$(dirname "$0")/simhosts-lib.sh"
ms() { echo $(( $(date +%s%N) / 1000000 )); }
# Nothing of the job on host $1 within $2 seconds.
empty_within() {
  for _ in $(seq 1 $(($2 * 10))); do [ -z "$(ip netns pids "ddpsim-$1")" ] && return 0; sleep 0.1; done
  fail "$3: processes left on $1: $(ip netns pids "ddpsim-$1" | tr '\n' ' ')"
}

start_job() {  # start_job NAME [ddprun options]: in the background, from sim0
  local name=$1
  shift
  "$sim" exec sim0 -- "$DDPRUN" --output quiet --run-dir "$work/$name" "$@" -H sim0:2,sim1:2 \
    "$TRAIN" --backend gloo --steps 100000 >"$work/$name.txt" 2>&1 &
  job_pid=$!
  for _ in $(seq 1 200); do
    [ -s "$work/$name/timings/rank-00003.jsonl" ] && [ -s "$work/$name/timings/rank-00000.jsonl" ] && return 0
    sleep 0.1
  done
  cat "$work/$name.txt"
  fail "$name: the job did not start training"
}

# The job's end after the cause at time $2 (ms): exit 1 within $3 s, host sim1 the culprit.
judged() {
  local name=$1 cause=$2 bound=$3 rc=0
  wait "$job_pid" || rc=$?
  local took=$(( $(ms) - cause ))
  [ $rc -eq 1 ] || { cat "$work/$name.txt"; fail "$name: exit $rc, not 1"; }
  [ $took -le $((bound * 1000)) ] || fail "$name: ddprun took $took ms after the cause (bound $bound s)"
  grep -q "ddprun: host sim1 was lost: ranks 2, 3 there stopped answering ddprun together" "$work/$name.txt" ||
    { cat "$work/$name.txt"; fail "$name: host sim1 not named"; }
  grep -q "rank(s) 0, 1 were stopped because of it (collateral" "$work/$name.txt" ||
    { cat "$work/$name.txt"; fail "$name: collateral"; }
  [[ $(field "$work/$name/run.json" lost_host) == sim1 ]] || fail "$name: run.json lost_host"
  echo "$name: host sim1 named in $took ms, exit 1"
  took_ms=$took
}

"$sim" up 2 >/dev/null
start_job dies
cause=$(ms)
kill -9 $(ip netns pids ddpsim-sim1)
judged dies "$cause" 5
empty_within sim0 5 dies
empty_within sim1 5 dies
row "every process of a host killed" "$took_ms" "host sim1 (ranks 2, 3)" 1

"$sim" up 2 >/dev/null
start_job link
cause=$(ms)
ip netns exec ddpsim-sim1 ip link set eth0 down
judged link "$cause" 25
empty_within sim0 5 link
empty_within sim1 20 link
echo "link: nothing left on sim0 or sim1"
row "a host's link taken down mid-run" "$took_ms" "host sim1 (ranks 2, 3)" 1

"$sim" up 2 >/dev/null
ip netns exec ddpsim-sim1 ip link set eth0 down
rc=0
never_start=$(ms)
"$sim" exec sim0 -- "$DDPRUN" --start-timeout 20 --output quiet --run-dir "$work/never" -H sim0:2,sim1:2 \
  "$TRAIN" --backend gloo --steps 10 >"$work/never.txt" 2>&1 || rc=$?
[ $rc -ne 0 ] || fail "never: a job with an unreachable host succeeded"
never_ms=$(( $(ms) - never_start ))
grep -q "ddprun: host sim1 never came up: none of its ranks (2, 3) reached ddprun, and mpirun could not start" \
  "$work/never.txt" || { cat "$work/never.txt"; fail "never: sim1 not named"; }
empty_within sim0 5 never
empty_within sim1 20 never
echo "never: exit $rc, nothing left"
row "a host unreachable from the start" "$never_ms" "host sim1 (ranks 2, 3)" "$rc"
# Ctrl-C and SIGTERM to ddprun on sim0, 10 times each: exit 130/143, nothing left on either host.
"$sim" up 2 >/dev/null
for sig in INT TERM; do
  for try in $(seq 1 10); do
    name=sig-$sig-$try
    "$sim" exec sim0 -- "$DDPRUN" --output quiet --run-dir "$work/$name" -H sim0:2,sim1:2 -- sh -c 'exec sleep 32.5' \
      >"$work/$name.txt" 2>&1 &
    job_pid=$!
    for _ in $(seq 1 100); do [ "$(pgrep -f "^sleep 32.5\$" | wc -l)" -ge 4 ] && break; sleep 0.05; done
    ddprun_pid=$(pgrep -f -- "ddprun --output quiet --run-dir $work/$name " | head -1)
    [ -n "$ddprun_pid" ] || fail "SIG$sig try $try: ddprun not found"
    kill -$sig "$ddprun_pid"
    rc=0
    wait "$job_pid" || rc=$?
    want=$([ $sig = INT ] && echo 130 || echo 143)
    [ $rc -eq "$want" ] || { cat "$work/$name.txt"; fail "SIG$sig try $try: exit $rc, not $want"; }
    empty_within sim0 5 "SIG$sig try $try"
    empty_within sim1 5 "SIG$sig try $try"
  done
  echo "SIG$sig x10: exit $want, nothing left on sim0 or sim1"
  row "SIG$sig to ddprun, 10 times" null "none (interrupted)" "$want"
done
"$sim" down
echo ok
