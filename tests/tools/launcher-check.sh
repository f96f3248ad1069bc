#!/usr/bin/env bash
# launcher-check.sh MODE: ddprun end to end, with real processes under mpirun (DDPRUN in the
# environment; TRAIN for the train mode).
#   env      every rank once with the right RANK/WORLD_SIZE/LOCAL_RANK/NODE_RANK/MASTER_*, and
#            arguments with spaces, quotes, ';' and '$' reach the program unchanged
#   torch    a PyTorch DDP script (gloo, init_method="env://") runs unchanged
#   fail     rank 2 of 4 exits 7: exit 7 within seconds, rank 2 the culprit, the rest
#            collateral, no process of the job left
#   signals  a rank killed by SIGKILL and one by SIGSEGV are reported as signals (137, 139)
#   sigint   SIGINT to ddprun mid-run: exit 130, every rank stopped, no process left (a rank that
#            ignores SIGTERM is killed after the grace period)
#   train    train under ddprun -np 4 --profile writes its timings and the report into the run dir
#   restart  rank 1 of 2 crashes at step 20 of 40 (--fault-once); --max-restarts 1 runs the job again,
#            train --resume continues from the step-10... checkpoint: the final parameters are
#            bitwise those of an uninterrupted run; attempt 0's logs are kept (PARAM_DIFF needed)
#   hang     rank 1 of 3 hangs at step 5 (train --fault 1:5:hang), --timeout 8: ddprun names rank 1 as
#            stalled in forward while the others wait in comm_wait, takes its stacks, exits 124 and
#            leaves no process; a program that writes no timings is judged by wall time
#   doctor   ddprun doctor --json: every check present; the GPU verdict matches /dev/nvidia*; the
#            test allreduce passes on the mpi backend
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*"; exit 1; }
field() { /usr/bin/python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); [v := v[k if not k.isdigit() else int(k)] for k in sys.argv[2:]]; print(v)' "$@"; }
# No process of the run is left: neither a program pid from the exit records nor any member of
# its process group (zombies waiting for init to reap them are dead and do not count).
alive_in_group() { ps -eo pgid=,stat= | awk -v g="$1" '$1 == g && $2 !~ /^Z/' | grep -q .; }
nothing_left() {
  local run=$1 pid
  for rec in "$run"/ranks/*.exit.json; do
    pid=$(field "$rec" pid)
    [[ $pid -gt 0 ]] || continue
    if ps -o stat= -p "$pid" | grep -qv '^Z'; then fail "program pid $pid of $(basename "$rec") is still alive"; fi
    if alive_in_group "$pid"; then fail "process group $pid of $(basename "$rec") still has members"; fi
  done
}

case $1 in
  env)
    "$DDPRUN" --run-dir "$work/run" -np 4 -- sh -c 'echo "rank $RANK $WORLD_SIZE $LOCAL_RANK $LOCAL_WORLD_SIZE $NODE_RANK $MASTER_ADDR $MASTER_PORT"; printf "<%s>" "$@"; echo' \
      sh "a b" "it's" '"dq"' 'x;y' '$HOME' '' >out.txt
    cat out.txt
    port=$(field "$work/run/run.json" master_port)
    for r in 0 1 2 3; do
      [[ $(grep -c "^\[[^]]*:$r\] rank $r 4 $r 4 0 127.0.0.1 $port\$" out.txt) == 1 ]] || fail "rank $r's line is missing or wrong"
      grep -qx "<a b><it's><\"dq\"><x;y><\$HOME><>" "$work/run/ranks/rank-0000$r.log" || fail "rank $r got other arguments"
    done
    [[ $(grep -c '^\[' out.txt) == 8 ]] || fail "expected 8 tagged lines"
    [[ $(field "$work/run/run.json" status) == succeeded ]] || fail "run.json status" ;;
  torch)
    "$DDPRUN" --run-dir "$work/run" -np 2 /usr/bin/python3 "$here/torch_ddp_env.py" | tee out.txt
    for r in 0 1; do grep -q "torch-ddp rank $r/2 local_rank $r parameters identical: True" out.txt || fail "rank $r"; done ;;
  fail)
    start=$(date +%s%N)
    set +e
    "$DDPRUN" --run-dir "$work/run" -np 4 -- sh -c 'if [ "$RANK" = 2 ]; then sleep 1; echo "rank 2 gives up" >&2; exit 7; fi; exec sleep 60' 2>err.txt
    code=$?
    set -e
    cat err.txt
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    echo "exit $code after $ms ms"
    [[ $code == 7 ]] || fail "ddprun exited $code, not 7"
    ((ms < 10000)) || fail "took $ms ms"
    grep -q "rank 2 on .* failed first: exit code 7" err.txt || fail "culprit line"
    grep -q "rank 2 gives up" err.txt || fail "the culprit's last log lines"
    grep -q "rank(s) 0, 1, 3 were stopped because of it (collateral" err.txt || fail "collateral line"
    [[ $(field "$work/run/run.json" culprit) == 2 ]] || fail "run.json culprit"
    [[ $(field "$work/run/ranks/rank-00002.exit.json" status) == culprit ]] || fail "rank 2 status"
    for r in 0 1 3; do [[ $(field "$work/run/ranks/rank-0000$r.exit.json" status) == collateral ]] || fail "rank $r status"; done
    nothing_left "$work/run" ;;
  signals)
    set +e
    "$DDPRUN" --run-dir "$work/kill" -np 3 -- sh -c 'if [ "$RANK" = 1 ]; then kill -KILL $$; fi; exec sleep 60' 2>err1.txt
    c1=$?
    "$DDPRUN" --run-dir "$work/segv" -np 2 -- sh -c 'if [ "$RANK" = 0 ]; then sleep 0.5; kill -SEGV $$; fi; exec sleep 60' 2>err2.txt
    c2=$?
    set -e
    cat err1.txt err2.txt
    [[ $c1 == 137 && $c2 == 139 ]] || fail "exit codes $c1 $c2, not 137 139"
    grep -q "rank 1 on .* failed first: killed by SIGKILL: out of memory?" err1.txt || fail "SIGKILL report"
    grep -q "rank 0 on .* failed first: killed by SIGSEGV" err2.txt || fail "SIGSEGV report"
    [[ $(field "$work/kill/ranks/rank-00001.exit.json" signal) == 9 ]] || fail "rank 1 signal"
    [[ $(field "$work/segv/ranks/rank-00000.exit.json" signal) == 11 ]] || fail "rank 0 signal"
    nothing_left "$work/kill"
    nothing_left "$work/segv" ;;
  sigint)
    set +e
    "$DDPRUN" --run-dir "$work/run" --grace 1 -np 3 -- sh -c 'trap "" TERM; echo ready; sleep 60; sleep 60' 2>err.txt &
    ddprun=$!
    for _ in $(seq 100); do
      [[ $(cat "$work"/run/ranks/*.log 2>/dev/null | grep -c ready) == 3 ]] && break
      sleep 0.1
    done
    kill -INT $ddprun
    wait $ddprun
    code=$?
    set -e
    cat err.txt
    [[ $code == 130 ]] || fail "ddprun exited $code after SIGINT, not 130"
    [[ $(field "$work/run/run.json" status) == interrupted ]] || fail "run.json status"
    for r in 0 1 2; do [[ $(field "$work/run/ranks/rank-0000$r.exit.json" signal) == 9 ]] || fail "rank $r was not killed after the grace period"; done
    nothing_left "$work/run" ;;
  train)
    "$DDPRUN" --profile --output rank:0 --run-dir "$work/run" -np 4 "$TRAIN" --model mlp --steps 20 --log-every 10 | tee out.txt
    for r in 0 1 2 3; do
      [[ $(wc -l <"$work/run/timings/rank-0000$r.jsonl") == 20 ]] || fail "rank $r's timings"
    done
    [[ $(grep -c '^\[' out.txt) -ge 3 ]] && ! grep -q '^\[[^]]*:[123]\]' out.txt || fail "--output rank:0 showed other ranks"
    grep -q "^ddprof report: $work/run" out.txt || fail "no report printed"
    test -s "$work/run/report.json"
    [[ $(field "$work/run/run.json" np) == 4 ]] || fail "run.json np" ;;
  restart)
    common=(--model cnn --batch-size 4 --steps 40 --checkpoint-every 10 --log-every 100)
    "$DDPRUN" --log-level warn --run-dir "$work/straight" -np 2 "$TRAIN" "${common[@]}" --checkpoint "$work/ckpt-a" \
      --resume --dump-params "$work/straight.bin" >/dev/null
    "$DDPRUN" --profile --run-dir "$work/run" --max-restarts 1 -np 2 "$TRAIN" "${common[@]}" --checkpoint "$work/ckpt-b" --resume \
      --fault 1:20:exit:3 --fault-once --dump-params "$work/restarted.bin" 2>err.txt | tee out.txt
    cat err.txt
    grep -q "attempt 1 of 2 failed (rank 1 failed: exit code 3); its logs are in attempts/0; restarting" err.txt || fail "restart line"
    grep -q "resumed from step 20" out.txt || fail "the second attempt did not resume from step 20"
    [[ $(field "$work/run/attempts/0/ranks/rank-00001.exit.json" exit_code) == 3 ]] || fail "attempt 0's record"
    [[ $(field "$work/run/run.json" attempt) == 1 && $(field "$work/run/run.json" status) == succeeded ]] || fail "run.json"
    [[ $(field "$work/run/run.json" earlier_attempts 0 exit_code) == 3 ]] || fail "run.json earlier_attempts"
    # The report says what the restart cost: the fault fired in step 20, the checkpoint was at 20.
    grep -q "attempt 0 failed after step 19; attempt 1 resumed from the checkpoint at step 20: 0 step(s)" \
      "$work/run/report.txt" || fail "the report's restart finding"
    "$PARAM_DIFF" "$work/straight.bin" "$work/restarted.bin" 0 ;;
  hang)
    set +e
    start=$(date +%s%N)
    # --timeout counts from the ranks' start until the first heartbeat: under ASan, three train
    # ranks on two cores take about 4 s to reach their first step, so 4 would judge the startup.
    "$DDPRUN" --run-dir "$work/run" --timeout 8 --grace 2 -np 3 "$TRAIN" --model mlp --steps 200 --log-every 1000 \
      --fault 1:5:hang 2>err.txt
    code=$?
    ms=$(( ($(date +%s%N) - start) / 1000000 ))
    "$DDPRUN" --run-dir "$work/wall" --timeout 2 --grace 1 -np 2 -- sh -c 'exec sleep 60' 2>err2.txt
    code2=$?
    set -e
    cat err.txt err2.txt
    echo "exit $code after $ms ms"
    [[ $code == 124 && $code2 == 124 ]] || fail "exit codes $code $code2, not 124"
    ((ms < 60000)) || fail "took $ms ms"
    grep -q "rank 1 in forward of step 5 while rank(s) 0, 2 wait in the gradient allreduce (comm_wait) of step 5" err.txt ||
      fail "the stalled rank and the collective of the others"
    [[ $(field "$work/run/ranks/rank-00001.exit.json" status) == hung ]] || fail "rank 1 status"
    for r in 0 2; do [[ $(field "$work/run/ranks/rank-0000$r.exit.json" status) == collateral ]] || fail "rank $r status"; done
    grep -Eq "gdb thread apply all bt|/proc/[0-9]+/task" "$work/run/ranks/rank-00001.stacks.txt" || fail "no stacks"
    [[ $(field "$work/run/run.json" status) == hung ]] || fail "run.json status"
    grep -q "no rank wrote step timings .* judged by its wall time alone" err2.txt || fail "wall-time verdict"
    nothing_left "$work/run"
    nothing_left "$work/wall" ;;
  doctor)
    set +e
    "$DDPRUN" doctor --json >doctor.json
    code=$?
    set -e
    cat doctor.json
    /usr/bin/python3 - doctor.json "$code" <<'PY' || fail "doctor's verdicts"
import glob, json, re, sys
checks = {c["name"]: c for c in json.load(open(sys.argv[1]))}
code = int(sys.argv[2])
for name in ["GPUs and driver", "NCCL", "LibTorch", "Open MPI", "network interfaces", "RDMA devices", "/dev/shm",
             "ulimit -l", "allreduce mpi, 2 ranks"]:
    assert name in checks, f"missing check {name}"
gpus = [d for d in glob.glob("/dev/nvidia*") if re.fullmatch(r"/dev/nvidia\d+", d)]
assert (checks["GPUs and driver"]["status"] == "pass") == bool(gpus), checks["GPUs and driver"]
if not gpus:
    assert "no NVIDIA GPU" in checks["GPUs and driver"]["detail"]
assert checks["allreduce mpi, 2 ranks"]["status"] == "pass", checks["allreduce mpi, 2 ranks"]
assert checks["Open MPI"]["status"] == "pass"
assert code == (1 if any(c["status"] == "fail" for c in checks.values()) else 0)
PY
    ;;
  *) echo "unknown mode $1"; exit 2 ;;
esac
echo "launcher-check $1: ok"
