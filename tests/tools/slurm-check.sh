#!/usr/bin/env bash
# slurm-check.sh: ddprun inside a real 2-node Slurm cluster (scripts/slurm-local: nodes n1, n2).
# DDPRUN and TRAIN in the environment.
#   - salloc -N2 -n4 ddprun --profile train (mpirun) and --launcher srun: trains (bitwise check),
#     ranks 0-1 on n1 and 2-3 on n2 by their exit records, the rank environment from the MPI job
#     (not from mpirun's helper step), a report;
#   - an sbatch script that calls ddprun;
#   - a rank that fails under either launcher: named the culprit, exit code kept, no process left;
#   - node n2 dying or freezing (SIGSTOP) under either launcher: the host and its ranks named, exit 1,
#     nothing left; n2 down from the start: named under srun, mpirun's own failure under mpirun;
#   - n2 lost under --max-restarts 1 --min-np 2 (salloc --no-kill): the job resumes on n1 alone;
#   - SIGINT and SIGTERM to ddprun mid-run, 10 times each per launcher: exit 130/143, no process
#     of the job left on either node, no job step left in Slurm;
#   - --launcher srun outside an allocation: one line, exit 2; `slurm-local down` leaves no daemon.
# With FAULT_TABLE=FILE, appends one JSON row per scenario to FILE (scripts/host-fault-table.sh).
# Exits 77 (skipped, with the reason) where the cluster cannot start: not root, or no slurm-wlm.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
cluster=$here/scripts/slurm-local
[ "$(id -u)" -eq 0 ] || { echo "SKIP: the Slurm cluster needs root (munged, slurmctld, slurmd)"; exit 77; }
command -v slurmctld >/dev/null || { echo "SKIP: slurm-wlm is not installed (scripts/install-deps.sh installs it)"; exit 77; }
work=$(mktemp -d)
trap '"$cluster" down >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
"$cluster" up >"$work/up.txt" 2>&1 || { cat "$work/up.txt"; echo "SKIP: scripts/slurm-local up failed here"; exit 77; }
eval "$("$cluster" env)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
field() { /usr/bin/python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); [v := v[k] for k in sys.argv[2:]]; print(v)' "$@"; }
left() { pgrep -f "$1" | grep -v "^$$\$" || true; }  # processes whose command line has $1
row() {  # row SCENARIO LAUNCHER DETECTED_MS CULPRIT EXIT: nothing was left on n1 or n2 when it is written
  [ -z "${FAULT_TABLE:-}" ] || printf '{"scenario": "%s", "launcher": "%s", "where": "Slurm nodes", "ms": %s, "culprit": "%s", "exit": %s, "left": "n1 0, n2 0"}\n' \
    "$1" "$2" "$3" "$4" "$5" >>"$FAULT_TABLE"
}

# The ranks of a 2 x 2 run directory: where each ran, and that all succeeded.
placed() {
  for r in 0 1 2 3; do
    [[ $(field "$1/ranks/rank-0000$r.exit.json" host) == n$((r / 2 + 1)) ]] || fail "$1: rank $r not on n$((r / 2 + 1))"
  done
}

for launcher in mpirun srun; do
  salloc -N2 -n4 "$DDPRUN" --launcher $launcher --profile --output rank:0 --run-dir "$work/train-$launcher" \
    "$TRAIN" --steps 12 --verify >"train-$launcher.txt" 2>&1 || { cat "train-$launcher.txt"; fail "$launcher: train failed"; }
  grep -q "verify: parameters bitwise identical on 4 ranks" "train-$launcher.txt" || fail "$launcher: the ranks disagree"
  placed "$work/train-$launcher"
  [[ $(field "$work/train-$launcher/run.json" launcher) == "$launcher" ]] || fail "$launcher: run.json's launcher"
  [ -s "$work/train-$launcher/report.txt" ] || fail "$launcher: no report"
  # The rank contract on both nodes: the MPI job's ranks, not mpirun's one-task-per-node helper step.
  salloc -N2 -n4 "$DDPRUN" --launcher $launcher --run-dir "$work/env-$launcher" -- sh -c \
    'echo "contract $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $NODE_RANK $GROUP_WORLD_SIZE $MASTER_ADDR $(hostname)"' \
    >"env-$launcher.txt" 2>&1
  got=$(grep -o "contract .*" "env-$launcher.txt" | sort | tr '\n' ';')
  want="contract 0 4 0 2 0 2 n1 n1;contract 1 4 1 2 0 2 n1 n1;contract 2 4 0 2 1 2 n1 n2;contract 3 4 1 2 1 2 n1 n2;"
  [ "$got" = "$want" ] || fail "$launcher: rank environment: $got"
  echo "$launcher: trained on n1 and n2, rank environment right"

  set +e
  salloc -N2 -n4 "$DDPRUN" --launcher $launcher --output quiet --run-dir "$work/fault-$launcher" \
    "$TRAIN" --backend gloo --steps 50 --fault 3:4:exit:7 >"fault-$launcher.txt" 2>&1
  rc=$?
  set -e
  [ $rc -eq 7 ] || { cat "fault-$launcher.txt"; fail "$launcher: a rank exiting 7 gave exit $rc"; }
  grep -q "rank 3 on n2 (pid [0-9]*) failed first: exit code 7" "fault-$launcher.txt" || fail "$launcher: culprit not named"
  # The others were stopped (collateral), or failed in the same breath when their collective with
  # the dead rank broke before ddprun's stop reached them (each is then named as failing after it).
  for r in 0 1 2; do
    status=$(field "$work/fault-$launcher/ranks/rank-0000$r.exit.json" status)
    [[ $status == collateral || $status == failed ]] || { cat "fault-$launcher.txt"; fail "$launcher: rank $r is $status"; }
  done
  sleep 0.5
  [ -z "$(left "$work/fault-$launcher")" ] || fail "$launcher: processes left after the failure"
  echo "$launcher: rank 3's failure named, exit 7, nothing left"
  row "a rank exits 7 (at step 4)" $launcher null "rank 3 on n2" 7
done

# Node n2 fails under each launcher while the job trains: it dies (every process in its UTS
# namespace, slurmd included, SIGKILL at once), or it freezes (the same processes SIGSTOPped: no
# RST comes, as when its link goes down). ddprun names it and its ranks, exits 1 and leaves nothing
# on n1; a frozen n2, once resumed, cleans up after itself (its workers stop their programs). The
# cluster is started again for what follows.
n2_processes() {
  local uts
  uts=$(readlink "/proc/$(cat /run/slurm-local/slurmd-n2.pid)/ns/uts")
  for p in /proc/[0-9]*; do [ "$(readlink "$p/ns/uts" 2>/dev/null)" = "$uts" ] && basename "$p"; done || true
}
for mode in dies freezes; do
  for launcher in mpirun srun; do
    name=$mode-$launcher
    salloc -N2 -n4 "$DDPRUN" --launcher $launcher --output quiet --run-dir "$work/$name" \
      "$TRAIN" --backend gloo --steps 100000 >"$name.txt" 2>&1 &
    salloc_pid=$!
    for _ in $(seq 1 200); do [ -s "$work/$name/timings/rank-00003.jsonl" ] && break; sleep 0.1; done
    [ -s "$work/$name/timings/rank-00003.jsonl" ] || { cat "$name.txt"; fail "$name: not training"; }
    victims=$(n2_processes)
    start=$(date +%s%N)
    kill -$([ $mode = dies ] && echo KILL || echo STOP) $victims
    set +e
    wait $salloc_pid
    rc=$?
    set -e
    took=$(( ($(date +%s%N) - start) / 1000000 ))
    [ $rc -eq 1 ] || { cat "$name.txt"; fail "$name: exit $rc, not 1"; }
    grep -q "ddprun: host n2 was lost: ranks 2, 3 there stopped answering ddprun together" "$name.txt" ||
      { cat "$name.txt"; fail "$name: node n2 not named"; }
    # Dies: at once (srun: the grace period + 5 s); freezes: 10 s of silence, then the teardown.
    bound=$([ $mode = dies ] && echo 15000 || echo 30000)
    [ $took -le $bound ] || fail "$name: ddprun took $took ms (bound $bound ms)"
    [ $mode = dies ] || kill -CONT $victims
    for _ in $(seq 1 300); do [ -z "$(left "train --backend gloo --steps 100000")" ] && break; sleep 0.1; done
    [ -z "$(left "train --backend gloo --steps 100000")" ] || fail "$name: ranks left after n2 $mode"
    echo "$launcher: node n2 $mode: named in $took ms, exit 1, nothing left"
    if [ $mode = dies ]; then
      row "every process of a node killed (slurmd too)" $launcher "$took" "host n2 (ranks 2, 3)" 1
    else
      row "every process of a node frozen (SIGSTOP: silent, as a link down), then resumed" $launcher "$took" \
        "host n2 (ranks 2, 3)" 1
    fi
    "$cluster" up >/dev/null
  done
done

# n2 dies mid-run in an allocation made with --no-kill (else Slurm ends the whole allocation when a
# node fails), under --max-restarts 1 --min-np 2: the job restarts on n1 alone with 2 ranks, resumes
# from its checkpoint and succeeds.
for launcher in mpirun srun; do
  name=restart-$launcher
  salloc --no-kill -N2 -n4 "$DDPRUN" --launcher $launcher --max-restarts 1 --min-np 2 --output quiet \
    --run-dir "$work/$name" "$TRAIN" --backend gloo --steps 200 --checkpoint "$work/$name-ckpt" --checkpoint-every 10 \
    --resume >"$name.txt" 2>&1 &
  salloc_pid=$!
  timings="$work/$name/timings/rank-00000.jsonl"
  for _ in $(seq 1 400); do [ -s "$timings" ] && [ "$(wc -l <"$timings")" -ge 35 ] && break; sleep 0.05; done
  kill -9 $(n2_processes)
  set +e
  wait $salloc_pid
  rc=$?
  set -e
  [ $rc -eq 0 ] || { cat "$name.txt"; fail "$name: exit $rc after the restart on n1"; }
  grep -q "host n2 was lost: the job restarts on the hosts left with 2 of its 4 ranks (--min-np 2)" "$name.txt" ||
    { cat "$name.txt"; fail "$name: no restart on the hosts left"; }
  [[ $(field "$work/$name/run.json" np) == 2 && $(field "$work/$name/run.json" status) == succeeded ]] ||
    fail "$name: run.json does not show 2 ranks that succeeded"
  grep -q "train: resumed from step [1-9]" "$work/$name/ranks/rank-00000.log" || fail "$name: not resumed"
  echo "$launcher: n2 lost mid-run, restarted on n1 with 2 ranks (--min-np 2), resumed, exit 0"
  row "a node killed under --max-restarts 1 --min-np 2 (salloc --no-kill)" $launcher null \
    "host n2 (ranks 2, 3); resumed on n1 with 2 ranks" 0
  "$cluster" up >/dev/null
done

# n2 dies after salloc granted it and before ddprun starts: ddprun names it as the host that never
# came up. Under srun n1's ranks arrive and srun then ends them (collateral); mpirun fails before
# any rank starts, and ddprun's probe (mpirun on each node alone) finds n2. Nothing is left.
{
  echo '#!/bin/bash'
  declare -f n2_processes
  echo 'kill -9 $(n2_processes)'
  echo 'exec "$@"'
} >never.sh
chmod +x never.sh
for launcher in mpirun srun; do
  start=$(date +%s%N)
  set +e
  salloc -N2 -n4 ./never.sh "$DDPRUN" --launcher $launcher --output quiet --run-dir "$work/never-$launcher" \
    "$TRAIN" --backend gloo --steps 20 >"never-$launcher.txt" 2>&1
  rc=$?
  set -e
  took=$(( ($(date +%s%N) - start) / 1000000 ))
  [ $rc -ne 0 ] || fail "never-$launcher: the job succeeded without n2"
  grep -q "ddprun: host n2 never came up: none of its ranks (2, 3) reached ddprun" "never-$launcher.txt" ||
    { cat "never-$launcher.txt"; fail "never-$launcher: n2 not named"; }
  culprit="host n2 (ranks 2, 3)"
  for _ in $(seq 1 50); do [ -z "$(left "train --backend gloo --steps 20")" ] && break; sleep 0.1; done
  [ -z "$(left "train --backend gloo --steps 20")" ] || fail "never-$launcher: ranks left"
  echo "$launcher: node n2 down from the start: exit $rc in $took ms, nothing left"
  row "a node down from the start (killed once salloc granted it)" $launcher "$took" "$culprit" $rc
  "$cluster" up >/dev/null
done

# sbatch: a batch script (on n1) that calls ddprun across the allocation.
cat >job.sh <<EOF
#!/bin/bash
#SBATCH -N2 --ntasks-per-node=2 -o $work/sbatch.out
"$DDPRUN" --output rank:0 --run-dir "$work/sbatch" "$TRAIN" --steps 6 --verify
EOF
sbatch --wait job.sh >/dev/null || { cat sbatch.out; fail "sbatch job failed"; }
placed "$work/sbatch"
[[ $(field "$work/sbatch/run.json" status) == succeeded ]] || fail "sbatch: run.json status"
echo "sbatch: ddprun ran across n1 and n2"

# Ctrl-C and SIGTERM mid-run: the job stops everywhere.
for launcher in mpirun srun; do
  for sig in INT TERM; do
    for try in $(seq 1 10); do
      marker="$work/sig-$launcher-$sig-$try"
      salloc -N2 -n4 "$DDPRUN" --launcher $launcher --output quiet --run-dir "$marker" -- sh -c 'exec sleep 31.5' \
        >"$marker.txt" 2>&1 &
      salloc_pid=$!
      for _ in $(seq 1 100); do [ "$(left "^sleep 31.5\$" | wc -l)" -ge 4 ] && break; sleep 0.05; done
      ddprun_pid=$(pgrep -P $salloc_pid -f -- "--run-dir $marker" || true)  # salloc's child, not salloc
      [ -n "$ddprun_pid" ] || fail "$launcher SIG$sig try $try: ddprun not found"
      kill -$sig "$ddprun_pid"
      set +e
      wait $salloc_pid
      rc=$?
      set -e
      want=$([ $sig = INT ] && echo 130 || echo 143)
      [ $rc -eq "$want" ] || { cat "$marker.txt"; fail "$launcher SIG$sig try $try: exit $rc, not $want"; }
      for _ in $(seq 1 40); do [ -z "$(left "^sleep 31.5\$")" ] && break; sleep 0.05; done
      [ -z "$(left "^sleep 31.5\$")" ] || fail "$launcher SIG$sig try $try: ranks left: $(left "^sleep 31.5\$")"
      for _ in $(seq 1 40); do [ -z "$(squeue -h)" ] && break; sleep 0.05; done
      [ -z "$(squeue -h)" ] || fail "$launcher SIG$sig try $try: Slurm still has the job: $(squeue -h)"
    done
    echo "$launcher: SIG$sig x10: exit $want, no rank left on n1 or n2"
    row "SIG$sig to ddprun, 10 times" $launcher null "none (interrupted)" "$want"
  done
done

out=$("$DDPRUN" --launcher srun -np 2 /bin/true 2>&1) && fail "--launcher srun outside an allocation succeeded"
[[ $out == *"--launcher srun starts the ranks in a Slurm allocation, and there is none here"* ]] || fail "outside: $out"

"$cluster" down
# A zombie is gone (PID 1 reaps late here); anything else is a daemon left running.
daemons=$(ps -eo stat=,comm= | awk '$1 !~ /^Z/ && $2 ~ /^(munged|slurmctld|slurmd)$/ {print $2}')
[ -z "$daemons" ] || fail "still running after down: $daemons"
echo ok
