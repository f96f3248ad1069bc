#!/usr/bin/env bash
# python-check.sh MODE: PyTorch scripts written for torchrun, run unchanged under
# `ddprun --profile -np N PY SCRIPT` (DDPRUN and PY in the environment, PY /usr/bin/python3 with
# Debian's torch 1.13 by default; the scripts are in tests/python/scripts). PYTHONUNBUFFERED is
# unset, as in a user's shell. Every mode but torch2 runs on either torch with the same checks.
#   parity     toy_ddp (2 and 3 ranks), mnist_sampler (DistributedSampler, DataLoader workers, epochs,
#              evaluation), accumulate_unused (no_sync accumulation, unused parameters): every rank's
#              output bitwise the same as with --no-instrument; the reports have steps, phases,
#              samples per step and the bucket allreduces (overlap), from the Python instrumentation
#   torch2     (PY a torch 2 Python) torch2_train.py with each feature of torch 2 that DDP scripts
#              use: torch.compile, bf16 autocast, GradScaler, static_graph, gradient_as_bucket_view
#              on 3 ranks, param groups and a second optimizer; followed as in parity; the script's
#              own optimizer step hooks and module hooks all still run, once a step
#   diagnosis  heavy_transform (num_workers=0, a heavy transform) is dataloader_starved;
#              mnist_sampler with rank 1's dataset slowed names rank 1 the straggler, and says its
#              time goes to data
#   torchrun   what torchrun gives a rank: live output (a rank killed by SIGKILL keeps its last
#              lines), OMP_NUM_THREADS by default and the user's kept, the TORCHELASTIC_* and
#              ROLE_* variables (is_torchelastic_launched), @record's error file in the failure
#              report, every rank's own exit code, a hung rank's Python stacks (py-spy) beside its
#              native ones, no port lock left in /tmp; and the same losses
#              as torchrun itself gives toy_ddp
#   bad        a script that crashes before DDP, one without an optimizer, one without DDP, one
#              without torch, two optimizers, two DDP models, a torch that fails to import: the
#              same exit code and output as with --no-instrument, no traceback of ddprun's, and
#              the report says what it could not measure; one that forks workers before it
#              imports torch is followed
#   api        a loop without DDP marked with ddprun.step()/phase(): timed as python-api; the same
#              script without ddprun runs, the marks doing nothing
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
scripts=$(cd "$here/../python/scripts" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
unset PYTHONUNBUFFERED
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fail() { echo "FAIL: $*"; exit 1; }
py=${PY:-/usr/bin/python3}  # the Python, and so the torch, the scripts run on
# json FILE EXPR: EXPR evaluated with the file's JSON as r.
json() { "$py" -c 'import json, sys; r = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
# profiled NAME [ddprun options] -- SCRIPT ARGS: a profiled run into run-NAME; its exit code in rc-NAME.
# Run once more if a rank was aborted at exit by torch 2.13 itself: after the script's last line,
# "terminate called without an active exception" (SIGABRT, exit 134), a thread of c10d's left
# joinable as the interpreter shuts down. It happens now and then with --no-instrument as well, in
# a script that never imports ddprun; twice in a row fails.
profiled() {
  local name=$1
  shift
  local opts=() attempt rc
  while [[ $1 != -- ]]; do opts+=("$1"); shift; done
  shift
  for attempt in 1 2; do
    rc=0
    ((attempt == 1)) || rm -rf "run-$name"
    "$DDPRUN" --profile --output quiet --log-level error "${opts[@]}" --run-dir "run-$name" -- "$py" "$@" \
      >"out-$name.txt" 2>&1 || rc=$?
    [[ $rc == 134 ]] && grep -q '^terminate called without an active exception' run-"$name"/ranks/*.log 2>/dev/null &&
      ((attempt == 1)) || break
    echo "note: $name: a rank aborted at exit in torch's own shutdown (exit 134); run once more"
  done
  echo "$rc" >"rc-$name"
}
# A rank's output without the lines that differ from run to run anyway: torch's log lines, which
# carry the time (glog's in 1.13; in 2.x "[rank0]:[W1204 03:53:10.478961470 file:line]" from C++
# and "[rank0]:W1204 04:00:41.135000 3362 file:line]" from Python's logging).
output() { grep -Ev '^(\[rank[0-9]+\]:)?(\[?[IWEF][0-9]{8}|\[?[IWEF][0-9]{4}) [0-9:.]+ ' "run-$1/ranks/rank-0000$2.log" || true; }
same_output() {  # same_output A B NP: every rank's output identical
  for ((r = 0; r < $3; r++)); do
    diff <(output "$1" "$r") <(output "$2" "$r") >/dev/null ||
      fail "rank $r's output differs between $1 and $2: $(diff <(output "$1" "$r") <(output "$2" "$r") | head -5)"
  done
}
no_traceback_of_ours() {
  if grep -l "python/ddprun\|ddprun/_" run-"$1"/ranks/*.log out-"$1".txt 2>/dev/null; then
    fail "$1: a traceback from ddprun's Python package"
  fi
}
first_finding() { json "run-$1/report.json" '[f["kind"] for f in r["findings"] if f["severity"] != "info"][:1]'; }

# followed NAME NP SCRIPT ARGS: the script run with and without the instrumentation (--timeout: a
# rank that hangs, at exit say, is named with its stacks, shown here): every rank's output the
# same, and the report has steps, every phase and the bucket allreduces, from the instrumentation.
followed() {
  local name=$1 np=$2
  shift 2
  profiled "$name-off" --no-instrument --timeout 120 --oversubscribe -np "$np" -- "$@"
  profiled "$name" --timeout 120 --oversubscribe -np "$np" -- "$@"
  [[ $(cat "rc-$name") == 0 && $(cat "rc-$name-off") == 0 ]] ||
    { tail -n 40 "out-$name.txt" "out-$name-off.txt"; cat run-"$name"*/ranks/*.stacks.txt 2>/dev/null | head -n 150
      fail "$name: exit $(cat "rc-$name") / $(cat "rc-$name-off")"; }
  same_output "$name-off" "$name" "$np"
  [[ -z $(ls "run-$name-off/timings/" 2>/dev/null) ]] || fail "$name: --no-instrument left timings"
  local steps
  steps=$(json "run-$name/report.json" 'r["steps"]["analysed"]')
  [[ $steps -ge 10 ]] || fail "$name: $steps steps analysed"
  json "run-$name/report.json" 'all(r["phases"][p] > 0 for p in ("forward", "backward", "comm_wait", "optimizer"))' |
    grep -qx True || fail "$name: a phase is missing: $(json "run-$name/report.json" 'r["phases"]')"
  json "run-$name/report.json" 'r["communication"]["comm_ms_mean"] > 0 and r["communication"]["overlap_fraction"] is not None' |
    grep -qx True || fail "$name: no bucket allreduces timed: $(json "run-$name/report.json" 'r["communication"]'); $(grep note "run-$name/report.txt")"
  json "run-$name/report.json" '{s["source"] for s in r["timings_sources"] if s["instrumented"]}' | grep -qx "{'python-auto'}" ||
    fail "$name: the timings' source: $(json "run-$name/report.json" 'r["timings_sources"]')"
  grep -q "timings: ddprun's automatic PyTorch instrumentation, torch $torch_version " "run-$name/report.txt" ||
    fail "$name: the report does not name the source and torch $torch_version: $(grep timings: "run-$name/report.txt")"
  echo "ok: $name: same output on $np ranks with and without the instrumentation; $steps steps analysed"
}
torch_version=$("$py" -c 'import torch; print(torch.__version__)' 2>/dev/null) || fail "$py cannot import torch"

case ${1:-} in
  parity)
    followed toy2 2 "$scripts/toy_ddp.py"
    followed toy3 3 "$scripts/toy_ddp.py"
    followed mnist 2 "$scripts/mnist_sampler.py" --epochs 2 --samples 1024
    followed accumulate 2 "$scripts/accumulate_unused.py"
    [[ $(json run-mnist/report.json 'r["scaling"]["samples_per_step"]') == 64 ]] ||
      fail "mnist: samples per step $(json run-mnist/report.json 'r["scaling"]')"
    [[ $(json run-accumulate/report.json 'r["scaling"]["samples_per_step"]') == 128 ]] ||
      fail "accumulate: 4 micro-batches of 16 on 2 ranks are not 128 samples a step"
    [[ $(json run-mnist/report.json 'r["steps"]["max_recorded"]') == 32 ]] ||
      fail "mnist: 2 epochs of 16 batches are not 32 steps (evaluation counted?): $(json run-mnist/report.json 'r["steps"]')"
    ;;
  torch2)
    [[ $torch_version == 2.* ]] || fail "torch2 needs a torch 2 Python in PY ($py has torch $torch_version)"
    # Each with init_process_group() and no backend named.
    followed compile 2 "$scripts/torch2_train.py" --feature compile
    followed bf16 2 "$scripts/torch2_train.py" --feature bf16
    followed scaler 2 "$scripts/torch2_train.py" --feature scaler
    followed static 2 "$scripts/torch2_train.py" --feature static
    followed bucket_view 3 "$scripts/torch2_train.py" --feature bucket_view
    followed groups 2 "$scripts/torch2_train.py" --feature groups
    followed hooks 2 "$scripts/torch2_train.py" --feature hooks
    grep -q "2 or more optimizers update the DDP models' parameters" run-groups/report.txt ||
      fail "groups: the report does not say a second optimizer updates the DDP parameters"
    ;;
  diagnosis)
    profiled heavy -np 2 -- "$scripts/heavy_transform.py"
    [[ $(first_finding heavy) == "['dataloader_starved']" ]] || fail "heavy_transform: $(first_finding heavy)"
    grep -q "num_workers=0" run-heavy/report.txt || fail "heavy_transform: the report does not name num_workers=0"
    SLOW_RANK=1 SLOW_MS=0.25 profiled slow -np 2 -- "$scripts/mnist_sampler.py" --epochs 1 --workers 0 --samples 4096
    first=$(first_finding slow)
    if [[ $first != "['straggler']" ]]; then
      # CPU contention goes before a straggler (docs/diagnosis.md, "Order"); it is right here only
      # when this run measured it: the hypervisor's steal, or a rank waiting for a CPU.
      measured=$(json run-slow/report.json 'any((u.get("steal_pct_mean") or 0) >= 10 or (u.get("run_delay_pct_mean") or 0) >= 20 for u in r["utilisation"])')
      json run-slow/report.json '[(f["kind"], f["ranks"], f["evidence"]) for f in r["findings"]]'
      [[ $first == "['cpu_contention']" && $measured == True ]] || fail "slowed rank 1: $first"
      echo "note: this run measured CPU contention too, reported ahead of the straggler"
    fi
    [[ $(json run-slow/report.json '[f["ranks"] for f in r["findings"] if f["kind"] == "straggler"][0]') == "[1]" ]] ||
      fail "the straggler is not rank 1"
    grep -q "its extra time is in data" run-slow/report.txt || fail "the straggler's data is not named"
    echo "ok: heavy transform -> dataloader_starved; slowed rank 1 -> straggler (rank 1), its data"
    ;;
  torchrun)
    cat >killed.py <<'EOF'
import os, signal
for i in range(3):
    print(f"line {i} before the kill")
if os.environ["RANK"] == "1":
    os.kill(os.getpid(), signal.SIGKILL)
EOF
    locks_before=$(find /tmp -maxdepth 1 -name "ddprun-port-*.lock" | wc -l)
    profiled killed -np 2 -- killed.py
    [[ $(cat rc-killed) == 137 ]] || fail "killed: exit $(cat rc-killed)"
    grep -q "line 2 before the kill" run-killed/ranks/rank-00001.log || fail "a killed rank lost its buffered output"
    cat >env.py <<'EOF'
import os
import torch.distributed as dist
keys = ["OMP_NUM_THREADS", "TORCHELASTIC_RUN_ID", "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS",
        "ROLE_NAME", "ROLE_RANK", "ROLE_WORLD_SIZE", "GROUP_RANK", "LOCAL_WORLD_SIZE", "TORCHELASTIC_ERROR_FILE"]
print(" ".join(f"{k}={os.environ.get(k)}" for k in keys), "elastic", dist.is_torchelastic_launched())
EOF
    profiled env --max-restarts 2 -np 2 -- env.py
    log=run-env/ranks/rank-00001.log
    for want in "OMP_NUM_THREADS=$(($(nproc) / 2 > 0 ? $(nproc) / 2 : 1))" TORCHELASTIC_RUN_ID=run-env TORCHELASTIC_RESTART_COUNT=0 \
                TORCHELASTIC_MAX_RESTARTS=2 ROLE_NAME=default ROLE_RANK=1 ROLE_WORLD_SIZE=2 GROUP_RANK=0 \
                "TORCHELASTIC_ERROR_FILE=$work/run-env/ranks/rank-00001.error.json" "elastic True"; do
      grep -q "$want" "$log" || fail "rank 1's environment lacks $want: $(cat "$log")"
    done
    OMP_NUM_THREADS=3 profiled env3 -np 2 -- env.py
    grep -q "OMP_NUM_THREADS=3 " run-env3/ranks/rank-00000.log || fail "the user's OMP_NUM_THREADS was not kept"
    FAIL_AT_END=1 STEPS=3 profiled record -np 2 -- "$scripts/accumulate_unused.py"
    [[ $(cat rc-record) == 1 ]] || fail "record: exit $(cat rc-record)"
    [[ -s run-record/ranks/rank-00001.error.json ]] || fail "@record wrote no error file"
    grep -q "RuntimeError: rank 1 was told to fail" out-record.txt || fail "the failure report lacks the exception"
    # Both ranks fail at the same moment (a wall-clock deadline), each with its own code.
    cat >both.py <<'EOF'
import os, time
rank = int(os.environ["RANK"])
if rank == 0:
    with open("deadline.tmp", "w") as f:
        f.write(str(time.time() + 1.0))
    os.rename("deadline.tmp", "deadline")
while not os.path.exists("deadline"):
    time.sleep(0.001)
deadline = float(open("deadline").read())
time.sleep(max(0.0, deadline - time.time()))
os._exit(3 + rank)
EOF
    profiled both -np 2 -- both.py
    statuses=$(json run-both/run.json 'sorted((x["status"], x["exit_code"]) for x in r["ranks"])')
    [[ $statuses == "[('culprit', 3), ('failed', 4)]" || $statuses == "[('culprit', 4), ('failed', 3)]" ]] ||
      fail "two ranks failing by themselves: $(json run-both/run.json 'r["ranks"]')"
    grep -q "also failed by itself" out-both.txt || fail "ddprun does not name the second failure: $(cat out-both.txt)"
    # A rank hung in the script's own Python code: its report has its Python stacks (py-spy).
    cat >hang.py <<'EOF'
import time
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
dist.init_process_group("gloo")
model = DDP(torch.nn.Linear(4, 4))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
def stuck_in_user_code():
    while True:
        time.sleep(0.05)
for step in range(100000):
    if dist.get_rank() == 1 and step == 20:
        stuck_in_user_code()
    optimizer.zero_grad()
    model(torch.randn(8, 4)).sum().backward()
    optimizer.step()
EOF
    profiled hang --timeout 10 --grace 2 -np 2 -- hang.py
    [[ $(cat rc-hang) == 124 ]] || fail "hang: exit $(cat rc-hang): $(tail -5 out-hang.txt)"
    stacks=run-hang/ranks/rank-00001.stacks.txt
    grep -q "py-spy dump (Python stacks)" "$stacks" || fail "hang: no Python stacks: $(head -5 "$stacks")"
    grep -q "stuck_in_user_code (hang.py:[0-9]*)" "$stacks" || fail "hang: the Python stack lacks the function: $(head -20 "$stacks")"
    grep -Eq "gdb thread apply all bt|/proc/[0-9]+/task" "$stacks" || fail "hang: no native stacks beside the Python ones"
    grep -q "^verdict: fix first: rank_hung (rank 1), high confidence: look at stuck_in_user_code (hang.py:" run-hang/report.txt ||
      fail "hang: the verdict: $(grep verdict run-hang/report.txt)"
    # The 20 steps before the hang were written, though no later step came to carry them.
    [[ $(json run-hang/report.json 'r["steps"]["max_recorded"]') -ge 19 ]] ||
      fail "hang: the steps before the hang: $(json run-hang/report.json 'r["steps"]')"
    locks_after=$(find /tmp -maxdepth 1 -name "ddprun-port-*.lock" | wc -l)
    [[ $locks_after -le $locks_before ]] || fail "port lock files left in /tmp ($locks_before before, $locks_after after)"
    # The same losses as torchrun gives the same script (OMP_NUM_THREADS=1 as torchrun sets it).
    OMP_NUM_THREADS=1 TOY_STEPS=20 profiled toy -np 2 -- "$scripts/toy_ddp.py"
    OMP_NUM_THREADS=1 TOY_STEPS=20 "$py" -m torch.distributed.run --nproc_per_node 2 --log_dir torchrun-logs \
      --redirects 1 --tee 1 "$scripts/toy_ddp.py" >/dev/null 2>&1 || fail "torchrun itself failed"
    for r in 0 1; do
      diff <(grep "^rank $r step" run-toy/ranks/rank-0000$r.log) \
           <(grep -h "^rank $r step" torchrun-logs/*/attempt_0/$r/stdout.log) >/dev/null ||
        fail "rank $r's losses differ from torchrun's"
    done
    echo "ok: live output, OMP_NUM_THREADS, torchelastic variables, @record, own exit codes, a hung rank's Python stacks, no locks, torchrun's losses"
    ;;
  bad)
    for s in crash_early no_optimizer no_ddp no_torch two_optimizers ddp_twice; do
      profiled "$s-off" --no-instrument -np 2 -- "$scripts/bad/$s.py"
      profiled "$s" -np 2 -- "$scripts/bad/$s.py"
      [[ $(cat "rc-$s") == "$(cat "rc-$s-off")" ]] || fail "$s: exit $(cat "rc-$s") with the instrumentation, $(cat "rc-$s-off") without"
      same_output "$s-off" "$s" 2
      no_traceback_of_ours "$s"
    done
    grep -q "no DistributedDataParallel model was built" run-crash_early/report.txt || fail "crash_early: not measured why?"
    grep -q "no optimizer step() over the DDP model's parameters" run-no_optimizer/report.txt || fail "no_optimizer: why?"
    grep -q "no DistributedDataParallel model was built" run-no_ddp/report.txt || fail "no_ddp: why?"
    grep -q "the program never imported torch" run-no_torch/report.txt || fail "no_torch: why?"
    grep -q "2 or more optimizers" run-two_optimizers/report.txt || fail "two_optimizers: no note"
    grep -q "2 or more DistributedDataParallel models" run-ddp_twice/report.txt || fail "ddp_twice: no note"
    [[ $(json run-ddp_twice/report.json 'r["scaling"]["samples_per_step"]') == 32 ]] ||
      fail "ddp_twice: the samples are the generator's 16 a rank"
    # Workers forked before torch was imported, importing it themselves: the script is followed.
    followed fork_first 2 "$scripts/bad/fork_first.py"
    # A torch that fails to import: its own error and exit, no frame of ours, and the report says so
    # (one rank: with two, which one fails first, the other stopped as collateral, is a race).
    mkdir -p broken/torch
    echo 'raise ImportError("libtorch_cpu.so: cannot open shared object file: No such file or directory")' >broken/torch/__init__.py
    printf 'print("before torch")\nimport torch\n' >uses_torch.py
    PYTHONPATH=$PWD/broken profiled broken-off --no-instrument -np 1 -- uses_torch.py
    PYTHONPATH=$PWD/broken profiled broken -np 1 -- uses_torch.py
    [[ $(cat rc-broken) == 1 && $(cat rc-broken-off) == 1 ]] || fail "broken torch: exit $(cat rc-broken) / $(cat rc-broken-off)"
    same_output broken-off broken 1
    no_traceback_of_ours broken
    grep -q "torch could not be imported (ImportError: libtorch_cpu.so" run-broken/report.txt || fail "broken torch: why?"
    echo "ok: six scripts the instrumentation cannot follow fully behave as without it, and the reports say why"
    ;;
  api)
    profiled api -np 2 -- "$scripts/api_loop.py"
    [[ $(cat rc-api) == 0 ]] || fail "api: exit $(cat rc-api): $(cat out-api.txt)"
    json run-api/report.json '[s["source"] for s in r["timings_sources"] if s["instrumented"]]' | grep -qx "\['python-api', 'python-api'\]" ||
      fail "api: $(json run-api/report.json 'r["timings_sources"]')"
    [[ $(json run-api/report.json 'r["steps"]["analysed"]') -ge 20 ]] || fail "api: too few steps"
    # Records are written in batches (a quarter second at most apart): the last batch at exit, with
    # the automatic instrumentation on and with the explicit API alone.
    profiled api-only --no-instrument -np 2 -- "$scripts/api_loop.py"
    for run in api api-only; do
      for r in 0 1; do
        [[ $(wc -l <run-$run/timings/rank-0000$r.jsonl) == 30 ]] ||
          fail "$run: rank $r wrote $(wc -l <run-$run/timings/rank-0000$r.jsonl) step records for its 30 steps"
      done
    done
    grep -q "timed True" run-api/ranks/rank-00000.log || fail "api: ddprun.active() is False under ddprun"
    DDPRUN_RUN_DIR= RANK=0 WORLD_SIZE=1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$((20000 + RANDOM % 20000)) STEPS=2 \
      PYTHONPATH="$here/../../python" "$py" "$scripts/api_loop.py" | grep -q "step 1 loss .* timed False" ||
      fail "api: the script does not run without ddprun"
    echo "ok: ddprun.step()/phase() timings as python-api; a no-op without ddprun"
    ;;
  *) echo "usage: python-check.sh parity|diagnosis|torchrun|bad|api" >&2; exit 2 ;;
esac
