#!/usr/bin/env bash
# host-restart-check.sh: `--max-restarts` after a whole host is lost, on 2 simulated hosts
# (scripts/simulate-hosts). `ddprun -H sim0:2,sim1:2 --max-restarts 1 train --backend gloo
# --checkpoint DIR --resume` runs from sim0 (checkpoints every 10 steps), and every process of
# sim1 is killed after step 35:
#   shrink    with --min-np 2: attempt 1 runs ranks 0-1 on sim0 only, resumes from the checkpoint
#             (step 30 or later), finishes the 200 steps and exits 0; run.json says np 2, and its
#             earlier attempt np 4 with lost_host sim1; nothing left on either host;
#   refuse    without --min-np: no restart; ddprun says why (2 of the 4 ranks left) and how to
#             allow it, exit 1, one attempt only; the report's verdict is host_lost (ranks 2, 3).
# With FAULT_TABLE=FILE, appends one JSON row per scenario to FILE (scripts/host-fault-table.sh).
# DDPRUN, TRAIN and DDPROF in the environment. Exits 77 (skipped, with the reason) where network
# namespaces cannot be made.
set -euo pipefail
. "$(dirname "$0")/simhosts-lib.sh"

# run_killing NAME [ddprun options]: the job from sim0; sim1 killed once rank 0 finished step 35.
run_killing() {
  local name=$1
  shift
  "$sim" up 2 >/dev/null
  "$sim" exec sim0 -- "$DDPRUN" --output quiet --run-dir "$work/$name" --max-restarts 1 "$@" -H sim0:2,sim1:2 \
    "$TRAIN" --backend gloo --steps 200 --checkpoint "$work/$name-ckpt" --checkpoint-every 10 --resume \
    >"$work/$name.txt" 2>&1 &
  local job=$! timings="$work/$name/timings/rank-00000.jsonl"
  for _ in $(seq 1 600); do
    [ -s "$timings" ] && [ "$(wc -l <"$timings")" -ge 35 ] && break
    kill -0 "$job" 2>/dev/null || { cat "$work/$name.txt"; fail "$name: the job ended before the kill"; }
    sleep 0.05
  done
  kill -9 $(ip netns pids ddpsim-sim1)
  rc=0
  wait "$job" || rc=$?
  for h in sim0 sim1; do
    left=$(ip netns pids "ddpsim-$h")
    [ -z "$left" ] || fail "$name: processes left on $h: $(echo $left)"
  done
}

run_killing shrink --min-np 2
[ $rc -eq 0 ] || { cat "$work/shrink.txt"; fail "shrink: exit $rc, not 0"; }
grep -q "ddprun: warning: host sim1 was lost: the job restarts on the hosts left with 2 of its 4 ranks (--min-np 2)" \
  "$work/shrink.txt" || { cat "$work/shrink.txt"; fail "shrink: the restart on fewer hosts not said"; }
"$DDPROF" report "$work/shrink" >"$work/shrink-report.txt"
grep -q "restart: attempt 0 lost host sim1 after step [0-9]*; attempt 1 resumed from the checkpoint at step [0-9]* with 2 ranks instead of 4" \
  "$work/shrink-report.txt" || { cat "$work/shrink-report.txt"; fail "shrink: the report's restart finding"; }
[ "$(field "$work/shrink/run.json" np)" = 2 ] || fail "shrink: run.json np is not 2"
[ "$(field "$work/shrink/run.json" attempt)" = 1 ] || fail "shrink: run.json attempt is not 1"
hosts=$(/usr/bin/python3 -c 'import json,sys; print(",".join(h["host"] for h in json.load(open(sys.argv[1]))["hosts"]))' "$work/shrink/run.json")
[ "$hosts" = sim0 ] || fail "shrink: the last attempt ran on $hosts, not sim0 alone"
[ "$(field "$work/shrink/run.json" earlier_attempts 0 lost_host)" = sim1 ] || fail "shrink: earlier attempt's lost_host"
[ "$(field "$work/shrink/run.json" earlier_attempts 0 np)" = 4 ] || fail "shrink: earlier attempt's np"
resumed=$(sed -n 's/.*train: resumed from step \([0-9]*\) .*/\1/p' "$work/shrink/ranks/rank-00000.log")
[ -n "$resumed" ] && [ "$resumed" -ge 30 ] || { cat "$work/shrink/ranks/rank-00000.log"; fail "shrink: not resumed from step 30 or later"; }
last=$(tail -1 "$work/shrink/timings/rank-00000.jsonl" | /usr/bin/python3 -c 'import json,sys; print(json.load(sys.stdin)["step"])')
[ "$last" = 199 ] || fail "shrink: the last step is $last, not 199"
row "a host killed under --max-restarts 1 --min-np 2" null "host sim1 (ranks 2, 3); resumed on sim0 with 2 ranks" 0
echo "shrink: sim1 lost after step 35, attempt 1 resumed from step $resumed with 2 ranks on sim0, exit 0, nothing left"

run_killing refuse
[ $rc -eq 1 ] || { cat "$work/refuse.txt"; fail "refuse: exit $rc, not 1"; }
grep -q "not restarting: host sim1 was lost, and the hosts left hold 2 of the 4 ranks; to resume on them with a smaller world, allow it with --min-np 2" \
  "$work/refuse.txt" || { cat "$work/refuse.txt"; fail "refuse: why it did not restart not said"; }
[ "$(field "$work/refuse/run.json" attempt)" = 0 ] || fail "refuse: a restart happened"
"$DDPROF" report "$work/refuse" >"$work/refuse-report.txt"
grep -q "^verdict: fix first: host_lost (ranks 2, 3), high confidence: check that host" "$work/refuse-report.txt" ||
  { cat "$work/refuse-report.txt"; fail "refuse: the report's verdict is not the lost host"; }
row "a host killed under --max-restarts 1, no --min-np" null "host sim1 (ranks 2, 3); not restarted, the reason said" 1
echo "refuse: without --min-np, exit 1, the reason said, nothing left"
echo ok
