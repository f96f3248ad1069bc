#!/usr/bin/env bash
# diagnosis-scenarios.sh [--repeat N] [--smoke] [--doc] [SCENARIO...]: real causes, made from
# outside the program (pinned ranks, ordinary busy processes, CPU quotas, SIGSTOP/SIGCONT, a slow
# link between simulated hosts, a real NCCL log), each run under `ddprun --profile`; the report's
# first finding is compared with the cause. Every scenario runs N times (default 3; the healthy shapes at least 5): the answer
# must not flip from run to run. --smoke: one run of the quick scenarios (CTest). --doc: appends
# the runs to bench/diagnosis-scenarios.jsonl (with the commit) and writes the table into
# docs/diagnosis.md from the latest N runs of every scenario recorded there, so that a rerun of
# some scenarios keeps the others' rows. Exits 1 when a run's first finding is not the expected one.
# A pinned scenario where no rank is at fault whose first finding names one rank instead gets a
# control run with each rank on the other's core. The finding is the machine's when it follows the
# core (a vCPU the hypervisor or another process slows: on this machine one vCPU at times runs the
# same work 40 % slower, steal 0), or does not recur in the control nor in a recheck placed as
# first: each run, without the one-rank finding on the slow core, must then give the expected first
# finding. It fails when the control or the recheck names the same rank again (the finding stays
# with the rank: the job or the profiler). The table shows the control's answer beside the run's.
# A run also fails when the accounting's parts are more than 2 % of a step off it (worst_sum_error).
# Needs DDP_BUILD_DIR (default build/), root for the quota and slow-link scenarios.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DDP_BUILD_DIR:-$root/build}
ddprun=$build/launcher/ddprun train=$build/examples/train ddprof=$build/profiler/ddprof
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
repeat=3 doc=0 smoke=0 chosen=()
all=(healthy nice-busy-core-1 busy-core-1 busy-core-0 shared-core quota-1 sigstop-1 oversubscribed small-batch
  python-worker-core python-data python-slow-shard socket-fallback slow-link healthy-wide healthy-tokens variable-work
  slow-backward-1 intermittent-1 own-threads slow-storage slow-host-3 slow-host-4)
# one rank per core, none at fault
swappable=(healthy nice-busy-core-1 python-worker-core socket-fallback healthy-wide healthy-tokens variable-work own-threads
  slow-storage)
# the healthy shapes run at least 5 times each: no warning on any of them
declare -A least=([healthy]=5 [healthy-wide]=5 [healthy-tokens]=5)
quick=(healthy busy-core-1 busy-core-0 sigstop-1 oversubscribed python-data socket-fallback)
while [ $# -gt 0 ]; do
  case $1 in
    --repeat) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || { echo "diagnosis-scenarios.sh: --repeat needs a count" >&2; exit 2; }
              repeat=$2; shift 2 ;;
    --smoke) smoke=1 repeat=1; shift ;;
    --doc) doc=1; shift ;;
    -*) echo "diagnosis-scenarios.sh: unknown option '$1'" >&2; exit 2 ;;
    *) [[ " ${all[*]} " == *" $1 "* ]] || { echo "diagnosis-scenarios.sh: unknown scenario '$1' (known: ${all[*]})" >&2; exit 2; }
       chosen+=("$1"); shift ;;
  esac
done
((${#chosen[@]})) || { ((smoke)) && chosen=("${quick[@]}") || chosen=("${all[@]}"); }
work=$(mktemp -d)
busy_pids=()
core_swap=""  # 'DDP_CORE=$((1 - RANK));' in a control run: each pinned rank on the other's core
cleanup() {
  for p in "${busy_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rmdir /sys/fs/cgroup/cpu/ddpscen 2>/dev/null || true
  "$root/scripts/simulate-hosts" down >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
results=$work/results.jsonl
recorded=$root/bench/diagnosis-scenarios.jsonl
commit=$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)
# "+": the code had changes not committed (the table and these results are not code)
git -C "$root" diff --quiet HEAD -- . ':!docs' ':!bench/diagnosis-scenarios.jsonl' 2>/dev/null || commit+="+"

# The expected first finding of each scenario ("none": no warning or critical finding at all),
# what makes it, and the program each rank runs: train on a core of its own (taskset -c RANK).
declare -A expect=([healthy]=none [nice-busy-core-1]=none [busy-core-1]="cpu_contention 1" [busy-core-0]="cpu_contention 0"
  [shared-core]="cpu_contention 0,1" [quota-1]="cpu_contention 1" [sigstop-1]="stalls 1"
  [oversubscribed]="cpu_contention 0,1,2,3" [small-batch]="small_batch|comm_bound" [socket-fallback]=socket_fallback
  [python-worker-core]="dataloader_starved|comm_bound" [python-data]=dataloader_starved [python-slow-shard]="straggler 1"
  [slow-link]=comm_bound [healthy-wide]=none [healthy-tokens]=none [variable-work]=variable_work
  [slow-backward-1]="note:straggler 1|straggler 1" [intermittent-1]="cpu_contention 1" [own-threads]=threads_oversubscribed
  [slow-storage]=dataloader_starved [slow-host-3]="comm_bound sim1" [slow-host-4]="comm_bound sim2")
declare -A made=(
  [healthy]="2 ranks of train --model resnet18 --batch-size 8 (compute-bound), each pinned to its own core, nothing else running"
  [nice-busy-core-1]="the same, with a busy loop at nice 19 on rank 1's core: the scheduler gives the rank almost all of it"
  [busy-core-1]="2 pinned ranks of train --model cnn, with an ordinary busy loop (taskset -c 1 sh -c 'while :; do :; done') on rank 1's core"
  [busy-core-0]="the same, with the busy loop on rank 0's core"
  [shared-core]="a wrong affinity: both ranks pinned to core 0 (taskset -c 0), core 1 idle"
  [quota-1]="rank 1 in a cgroup with a CPU quota of 0.4 cores (cpu.cfs_quota_us), each rank on its own core"
  [sigstop-1]="rank 1's process stopped for 0.5 s and continued, 8 times 0.4 s apart (kill -STOP / -CONT)"
  [oversubscribed]="the README's main job: 4 ranks of train --model mlp on this 2-core machine"
  [small-batch]="2 pinned ranks of train --backend gloo --model mlp --batch-size 2: 2.7 MB of gradients for 2 samples a step (right: small_batch, or comm_bound with its larger-batch fix once the transfer alone is 25 % of the step)"
  [python-worker-core]="an unchanged PyTorch DDP script (tests/python/scripts/mnist_sampler.py: DistributedSampler, a DataLoader worker, evaluation each epoch), 2 ranks each pinned to one core that its DataLoader worker shares (right: the starved loader, or comm_bound: Gloo's transfer needs the same core; each costs about a fifth of the run)"
  [python-data]="an unchanged PyTorch DDP script (tests/python/scripts/heavy_transform.py): a heavy per-sample transform in a DataLoader with num_workers=0, 2 pinned ranks"
  [python-slow-shard]="an unchanged PyTorch DDP script (tests/python/scripts/mnist_sampler.py) whose rank 1 reads a slow dataset (0.25 ms a sample), num_workers=0"
  [socket-fallback]="a healthy run's directory with a real 2-host NCCL log on TCP sockets (fixture 13)"
  [slow-link]="2 simulated hosts x 2 ranks over Gloo, host sim1's link limited to 10 Mbit/s (tc tbf)"
  [healthy-wide]="a second healthy shape: the token model with wide layers and a big batch (--width 256 --layers 2 --batch-size 96), 2 pinned ranks"
  [healthy-tokens]="a third healthy shape: an unchanged PyTorch token model (tests/python/scripts/token_model.py, fixed length 64, --batch-size 128), 2 pinned ranks"
  [variable-work]="the token model at healthy-tokens' batch (128) with each batch's length drawn per rank and step from 16 to 128 (--lengths 16:128: unbucketed NLP batches), 2 pinned ranks (at batch 32 the transfer alone was a quarter of the step, and comm_bound came first in one run of three)"
  [slow-backward-1]="the token model at healthy-tokens' batch (128, 300 steps), rank 1's backward alone about 10 % longer (a gradient hook repeating a matmul: SLOW_BACKWARD_RANK=1 SLOW_BACKWARD_SHARE=0.1), 2 pinned ranks (right: the straggler, a note where the run loses under 15 %, a warning above; at batch 32 the transfer alone was a quarter of the step and comm_bound rightly came first)"
  [intermittent-1]="train --model resnet18 --batch-size 8, 2 pinned ranks, a neighbour on rank 1's core busy a quarter of each second (a Python loop: 0.25 s busy, 0.75 s asleep)"
  [own-threads]="the token model with OMP_NUM_THREADS=4 exported by the user: 2 ranks, 8 compute threads on 2 cores, nothing else running"
  [slow-storage]="the token model on a Dataset whose every sample is a blocking read of 3 ms (--read-ms 3), DataLoader with 2 workers, 2 pinned ranks"
  [slow-host-3]="3 simulated hosts x 1 rank of train --model cnn over Gloo, host sim1's link limited to 10 Mbit/s (tc tbf): the host must be named"
  [slow-host-4]="4 simulated hosts x 1 rank, host sim2's link limited to 10 Mbit/s: the host must be named")

pinned() {  # pinned RUN_DIR PREFIX TRAIN_ARGS...: 2 ranks of train, each on core RANK (or PREFIX's choice)
  local run=$1 prefix=$2
  shift 2
  pinned_program "$run" "$prefix" "$train" "$@"
}

pinned_program() {  # pinned_program RUN_DIR PREFIX PROGRAM ARGS...
  local run=$1 prefix=$2
  shift 2
  "$ddprun" --profile --output quiet --log-level error --run-dir "$run" -np 2 -- sh -c \
    "$core_swap$prefix exec taskset -c \${DDP_CORE:-\$RANK} \"\$0\" \"\$@\"" "$@" >/dev/null
}

busy_loop() {  # busy_loop CORE [NICE]
  nice -n "${2:-0}" taskset -c "$1" sh -c 'while :; do :; done' &
  busy_pids+=($!)
}

stop_busy() {
  for p in "${busy_pids[@]}"; do kill "$p" 2>/dev/null || true; done
  busy_pids=()
}

run_scenario() {  # run_scenario NAME RUN_DIR
  local name=$1 run=$2 cnn=(--model cnn --batch-size 32 --steps 250 --log-every 1000)
  local resnet=(--model resnet18 --batch-size 8 --steps 25 --log-every 1000)
  case $name in
    healthy) pinned "$run" "" "${resnet[@]}" ;;
    nice-busy-core-1) busy_loop 1 19; pinned "$run" "" "${resnet[@]}"; stop_busy ;;
    busy-core-1) busy_loop 1; pinned "$run" "" "${cnn[@]}"; stop_busy ;;
    busy-core-0) busy_loop 0; pinned "$run" "" "${cnn[@]}"; stop_busy ;;
    shared-core) pinned "$run" "DDP_CORE=0;" "${cnn[@]}" ;;
    quota-1)
      mkdir -p /sys/fs/cgroup/cpu/ddpscen
      echo 100000 >/sys/fs/cgroup/cpu/ddpscen/cpu.cfs_period_us
      echo 40000 >/sys/fs/cgroup/cpu/ddpscen/cpu.cfs_quota_us
      pinned "$run" 'if [ "$RANK" = 1 ]; then echo $$ >/sys/fs/cgroup/cpu/ddpscen/cgroup.procs; fi;' "${cnn[@]}" ;;
    sigstop-1)
      pinned "$run" 'echo $$ >"$DDPRUN_RUN_DIR/pid.$RANK";' --model cnn --batch-size 32 --steps 700 --log-every 1000 &
      local job=$! pid=""
      for _ in $(seq 400); do [ -s "$run/timings/rank-00001.jsonl" ] && pid=$(cat "$run/pid.1") && break; sleep 0.05; done
      [ -n "$pid" ] || { echo "diagnosis-scenarios.sh: rank 1 never started" >&2; wait $job; return 1; }
      for _ in $(seq 8); do kill -STOP "$pid"; sleep 0.5; kill -CONT "$pid"; sleep 0.4; done
      wait $job ;;
    oversubscribed) "$ddprun" --profile --output quiet --log-level error --run-dir "$run" -np 4 "$train" --model mlp \
                      --steps 200 --batch-size 32 >/dev/null ;;
    small-batch) pinned "$run" "" --backend gloo --model mlp --batch-size 2 --steps 1500 --log-every 10000 ;;
    python-worker-core) pinned_program "$run" "unset PYTHONUNBUFFERED;" /usr/bin/python3 \
                      "$root/tests/python/scripts/mnist_sampler.py" --epochs 2 --samples 4096 --workers 1 ;;
    python-data) pinned_program "$run" "unset PYTHONUNBUFFERED;" /usr/bin/python3 "$root/tests/python/scripts/heavy_transform.py" ;;
    python-slow-shard)
      pinned_program "$run" "unset PYTHONUNBUFFERED; export SLOW_RANK=1 SLOW_MS=0.25;" /usr/bin/python3 \
        "$root/tests/python/scripts/mnist_sampler.py" --epochs 1 --workers 0 --samples 4096 ;;
    socket-fallback)
      pinned "$run" "" --model resnet18 --batch-size 8 --steps 12 --log-every 1000
      cp "$root/tests/data/nccl-logs/13-nccltests284-table-header-interleaved-init-timings-dash-form.log" "$run/nccl/"
      "$ddprof" report "$run" >/dev/null ;;
    slow-link) on_hosts "$run" 2 sim1 2 ;;
    slow-host-3) on_hosts "$run" 3 sim1 1 ;;
    slow-host-4) on_hosts "$run" 4 sim2 1 ;;
    healthy-wide) tokens "$run" "" --width 256 --layers 2 --batch-size 96 --steps 100 ;;
    healthy-tokens) tokens "$run" "" --batch-size 128 --steps 120 ;;
    variable-work) tokens "$run" "" --lengths 16:128 --batch-size 128 ;;
    slow-backward-1) tokens "$run" "export SLOW_BACKWARD_RANK=1 SLOW_BACKWARD_SHARE=0.1;" --batch-size 128 --steps 300 ;;
    intermittent-1)
      taskset -c 1 /usr/bin/python3 -c $'import time\nwhile True:\n    t = time.time()\n    while time.time() - t < 0.25: pass\n    time.sleep(0.75)' &
      busy_pids+=($!)
      pinned "$run" "" "${resnet[@]}"; stop_busy ;;
    own-threads)  # not pinned: each rank may run on both cores, as a user's job would
      OMP_NUM_THREADS=4 "$ddprun" --profile --output quiet --log-level error --run-dir "$run" -np 2 -- sh -c \
        'unset PYTHONUNBUFFERED; exec "$0" "$@"' /usr/bin/python3 "$root/tests/python/scripts/token_model.py" \
        --steps 150 >/dev/null ;;
    slow-storage) tokens "$run" "" --read-ms 3 --workers 2 --steps 150 ;;
  esac
}

on_hosts() {  # on_hosts RUN_DIR HOSTS SLOW_HOST RANKS_PER_HOST: train over Gloo, SLOW_HOST's link at 10 Mbit/s
  local run=$1 n=$2 slow=$3 per=$4 spec="" h
  for ((h = 0; h < n; h++)); do spec+="${spec:+,}sim$h:$per"; done
  "$root/scripts/simulate-hosts" up "$n" --rate "$slow=10mbit" >/dev/null
  "$root/scripts/simulate-hosts" exec sim0 -- "$ddprun" --profile --output quiet --log-level error --run-dir "$run" \
    -H "$spec" "$train" --backend gloo --model cnn --batch-size 128 --steps 30 --log-every 100 >/dev/null
  "$root/scripts/simulate-hosts" down >/dev/null
}

tokens() {  # tokens RUN_DIR PREFIX ARGS...: 2 pinned ranks of the token model
  local run=$1 prefix=$2
  shift 2
  pinned_program "$run" "unset PYTHONUNBUFFERED; $prefix" /usr/bin/python3 "$root/tests/python/scripts/token_model.py" "$@"
}

# first_finding RUN_DIR [RANK]: the report's first finding that is a warning or worse (leaving out
# those that name RANK alone): "KIND WHO CONFIDENCE DELAY"; without one, its first note (info) as
# "note:KIND ...", or "none - - DELAY"; WHO: the hosts it names, else its ranks; DELAY: the ranks'
# run-queue wait (lowest-highest mean %, "-" unsampled); then the accounting's worst sum error (how
# far its parts were from a rank's step, a share of it). A WANT of none takes a note too.
first_finding() {
  /usr/bin/python3 - "$1/report.json" "${2:--}" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
delays = [u["run_delay_pct_mean"] for u in r.get("utilisation", []) if u.get("run_delay_pct_mean") is not None]
delay = f"{min(delays):.0f}-{max(delays):.0f}" if delays else "-"
sum_error = f"{r['lost_time']['worst_sum_error']:.1e}" if r.get("lost_time") else "-"
left_out = None if sys.argv[2] == "-" else [int(sys.argv[2])]
problems = [f for f in r["findings"] if f["severity"] != "info" and f["ranks"] != left_out]
notes = [f for f in r["findings"] if f["severity"] == "info"]
if not problems and not notes:
    print("none - -", delay, sum_error)
else:
    f = problems[0] if problems else notes[0]
    print(("" if problems else "note:") + f["kind"], ",".join(f.get("hosts") or []) or ",".join(map(str, f["ranks"])) or "-",
          f["confidence"], delay, sum_error)
PY
}

# judge_by_control NAME RUN_DIR RANK WANT: RUN_DIR's first finding named RANK alone where WANT
# names no rank at fault. Sets status and control from a second run with the cores swapped, or,
# when that names nothing, as first placed again (a finding that did not recur is the machine's
# only if it does not come back where it was): a second run that names RANK alone fails; otherwise
# each run, leaving out the one-rank finding on the slow core, must give WANT.
judge_by_control() {
  local name=$1 run=$2 rank=$3 want=$4 second=$2-control skip=$((1 - $3)) kind ranks rest rest_ranks
  echo "== $name, run $i: control, each rank on the other's core" >&2
  core_swap='DDP_CORE=$((1 - RANK));'
  run_scenario "$name" "$second" || true
  core_swap=""
  read -r kind ranks _ _ < <(first_finding "$second" 2>/dev/null || echo "no-report - - -")
  control=$kind${ranks/#/ }
  if [[ $kind == none || $kind == note:* ]]; then
    echo "== $name, run $i: recheck, each rank on its own core again" >&2
    second=$run-recheck skip=-
    run_scenario "$name" "$second" || true
    read -r kind ranks _ _ < <(first_finding "$second" 2>/dev/null || echo "no-report - - -")
    control+="; recheck: $kind${ranks/#/ }"
  fi
  control=${control// -/}
  if [[ $kind == no-report || $ranks == "$rank" ]]; then
    sed -n '/^findings/,/^per rank/p' "$second/report.txt" >&2 2>/dev/null || true
    status="expected $want; it stayed with rank $rank ($control)"
    return
  fi
  read -r rest rest_ranks _ _ < <(first_finding "$run" "$rank")
  read -r kind ranks _ _ < <(first_finding "$second" "$skip")
  if matches "$want" "$rest" "$rest_ranks" && matches "$want" "$kind" "$ranks"; then
    status=ok
  else
    status="expected $want; leaving out the one-rank finding on the slow core: $rest, then $kind"
  fi
}

matches() {  # matches WANT KIND RANKS: WANT may be alternatives (a|b), with ranks when it names them
  local got=$2
  [[ $1 == none && $2 == note:* ]] && return 0
  [[ $1 == *" "* ]] && got="$2 $3"
  [[ "|$1|" == *"|$got|"* ]]
}

for name in "${chosen[@]}"; do
  times=$repeat
  ((smoke == 0 && ${least[$name]:-0} > times)) && times=${least[$name]}
  for i in $(seq "$times"); do
    run=$work/$name-$i
    echo "== $name, run $i of $times" >&2
    status=ok
    run_scenario "$name" "$run" || status="the run failed"
    read -r kind ranks confidence delay sum_error < <(first_finding "$run" 2>/dev/null || echo "no-report - - - -")
    want=${expect[$name]}
    control=-
    if ! matches "$want" "$kind" "$ranks"; then
      [ "$status" = ok ] && status="expected $want" || status+="; expected $want"
      sed -n '/^findings/,/^per rank/p' "$run/report.txt" >&2 2>/dev/null || true
      if [[ $status == "expected $want" && $ranks =~ ^[01]$ && " ${swappable[*]} " == *" $name "* ]]; then
        judge_by_control "$name" "$run" "$ranks" "$want"
      fi
    fi
    if [[ $sum_error != - ]] && /usr/bin/python3 -c 'import sys; sys.exit(float(sys.argv[1]) <= 0.02)' "$sum_error"; then
      [ "$status" = ok ] && status="the accounting's parts are $sum_error of a step off it (over 2 %)" ||
        status+="; the accounting's parts are $sum_error of a step off it"
    fi
    echo "{\"scenario\": \"$name\", \"commit\": \"$commit\", \"run\": $i, \"kind\": \"$kind\", \"ranks\": \"$ranks\", \"confidence\": \"$confidence\", \"run_delay_pct\": \"$delay\", \"control\": \"$control\", \"sum_error\": \"$sum_error\", \"status\": \"${status}\"}" | tee -a "$results"
  done
done

meta=$work/meta.tsv
for name in "${all[@]}"; do
  printf '%s\t%s\t%s\t%s\n' "$name" "${expect[$name]}" "${made[$name]}" "$((${least[$name]:-0} > repeat ? ${least[$name]:-0} : repeat))"
done >"$meta"
((doc)) && mkdir -p "$(dirname "$recorded")" && cat "$results" >>"$recorded"
/usr/bin/python3 - "$results" "$doc" "$root" "$repeat" "$meta" "$recorded" <<'PY'
import json, subprocess, sys, collections
results, doc, root, repeat = sys.argv[1], sys.argv[2] == "1", sys.argv[3], int(sys.argv[4])
meta = [line.rstrip("\n").split("\t") for line in open(sys.argv[5])]
expect = {m[0]: m[1] for m in meta}
made = {m[0]: m[2] for m in meta}
times = {m[0]: int(m[3]) for m in meta}
rows = [json.loads(l) for l in open(results) if l.strip()]
failed = [r for r in rows if r["status"] != "ok"]
print(f"{len(rows) - len(failed)} of {len(rows)} runs found the expected first finding")
if doc:
    # The latest `repeat` runs of every scenario known today, of all that were recorded.
    recorded = collections.OrderedDict((m[0], []) for m in meta)
    for line in open(sys.argv[6]):
        if line.strip() and json.loads(line)["scenario"] in recorded:
            recorded[json.loads(line)["scenario"]].append(json.loads(line))
    by = collections.OrderedDict((k, v[-times[k]:]) for k, v in recorded.items() if v)
    lines = ["## Scenarios (`scripts/diagnosis-scenarios.sh`)", "",
             f"Each cause made from outside the program, each scenario run {repeat} times (the healthy shapes "
             f"{max(repeat, 5)}) under `ddprun --profile` on this "
             "2-core machine; the first finding that is a warning or worse is compared with the cause, or, where there is "
             "none, the first note (`note:KIND`; `none`: the report must have no warning at all, notes allowed).", "",
             "| scenario | how it was made | expected first finding | what the reports said | ranks' run-queue wait, % of their time (lowest–highest rank, each run) | | commit |",
             "|---|---|---|---|---|---|---|"]
    for name, rs in by.items():
        said = "; ".join(f"{r['kind']}" + (f" ({('host' if r['ranks'][0].isalpha() else 'rank') + ('s' if ',' in r['ranks'] else '')} "
                                            f"{r['ranks'].replace(',', ', ')})" if r["ranks"] != "-" else "") +
                         (f", {r['confidence']}" if r["confidence"] != "-" else "") +
                         (f" (control, each rank on the other's core: {r['control']})" if r.get("control", "-") != "-" else "")
                         for r in rs)
        ok = all(r["status"] == "ok" for r in rs)
        waits = "; ".join(r["run_delay_pct"].replace("-", "–") if r["run_delay_pct"] != "-" else "–" for r in rs)
        lines.append(f"| `{name}` | {made.get(name, '')} | {expect.get(name, '').replace('|', ' or ')} | {said} | {waits} | "
                     f"{'pass' if ok else 'FAIL'} | {', '.join(sorted({r.get('commit', '?') for r in rs}))} |")
    lines += ["", f"{sum(all(r['status'] == 'ok' for r in rs) for rs in by.values())} of {len(by)} scenarios pass in every run."]
    errors = [float(r["sum_error"]) for rs in by.values() for r in rs if r.get("sum_error", "-") not in ("-", "")]
    if errors:
        lines += [f"The accounting's parts added up to every rank's every step within {max(errors):.1e} of the step in "
                  f"the {len(errors)} runs that recorded it (a run fails above 2 %)."]
    subprocess.run(["/usr/bin/python3", f"{root}/bench/update_section.py", f"{root}/docs/diagnosis.md", "scenarios"],
                   input="\n".join(lines), text=True, check=True)
for r in failed:
    print("FAILED:", json.dumps(r))
sys.exit(1 if failed else 0)
PY
