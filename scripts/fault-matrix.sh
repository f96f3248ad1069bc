#!/usr/bin/env bash
# fault-matrix.sh [--smoke] [OUT_DIR]: ddprun under injected faults, measured.
#   The matrix: train --fault R:5:KIND for KIND in {exit:3, segv, kill, hang} x R in {rank 0, a
#   middle rank, the last rank} x np in {2, 4}: detected, the culprit named (the others
#   collateral), torn down within 5 s of the fault (hang: detected within --timeout + 1 s, torn
#   down within 5 s of its stacks being taken), no process of
#   the job left, the exit code kept (3, 139, 137, 124).
#   Interrupts: SIGINT and SIGTERM to ddprun mid-run, 10 times each: exit 130 / 143, nothing
#   left, the partial report written (--profile).
# --smoke runs 4 cases of the matrix and 2 interrupts (the CTest reliability.fault_matrix).
# Without --smoke it writes its sections of docs/reliability.md.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DDP_BUILD_DIR:-$root/build}
smoke=0
[[ ${1:-} == --smoke ]] && { smoke=1; shift; }
out=${1:-$root/bench/results}
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
ddprun=$build/launcher/ddprun train=$build/examples/train
results=$out/fault-matrix.jsonl
: >"$results"
timeout_s=4

# Every program pid of the run's exit records and its process group are gone (zombies aside).
leftovers() {
  local n=0 pid
  for rec in "$1"/ranks/*.exit.json; do
    pid=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$rec")
    [[ $pid -gt 0 ]] || continue
    if ps -eo pgid=,stat= | awk -v g="$pid" '$1 == g && $2 !~ /^Z/' | grep -q .; then n=$((n + 1)); fi
  done
  echo $n
}

case_run() {  # case_run KIND RANK NP
  local kind=$1 rank=$2 np=$3 run=$work/$1-$2-$3 code=0
  local spec=$kind extra=()
  [[ $kind == exit ]] && spec=exit:3
  [[ $kind == hang ]] && extra=(--timeout $timeout_s)
  "$ddprun" --log-level error --grace 2 "${extra[@]}" --run-dir "$run" -np "$np" "$train" --model mlp --steps 400 \
    --batch-size 16 --log-every 1000 --fault "$rank:5:$spec" >/dev/null 2>"$run.err" || code=$?
  /usr/bin/python3 - "$run" "$kind" "$rank" "$np" "$code" "$(leftovers "$run")" "$timeout_s" <<'PY' | tee -a "$results"
import glob, json, os, sys
run, kind, rank, np, code, left, timeout = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6]), float(sys.argv[7])
manifest = json.load(open(f"{run}/run.json"))
records = {json.load(open(f))["rank"]: json.load(open(f)) for f in glob.glob(f"{run}/ranks/*.exit.json")}
expected_code = {"exit": 3, "segv": 139, "kill": 137, "hang": 124}[kind]
culprit_status = "hung" if kind == "hang" else "culprit"
named = records.get(rank, {}).get("status") == culprit_status
others = all(r["status"] == "collateral" for k, r in records.items() if k != rank)
# Detection: from the fault (the culprit's end; for a hang, when it entered the phase it never left,
# its progress file's last rewrite) to ddprun noticing; teardown: from then (for a hang, from when
# the stacks were taken) to ddprun's end.
detection = stacks = None  # measured for hangs only: a crash is its own detection
if kind == "hang":
    fault_us = os.path.getmtime(f"{run}/timings/rank-{rank:05d}.progress") * 1e6
    hang = manifest["hang"]
    detection = (hang["detected_unix_us"] - fault_us) / 1e6
    stacks = (hang["stacks_done_unix_us"] - hang["detected_unix_us"]) / 1e6
    teardown = (manifest["end_unix_us"] - hang["stacks_done_unix_us"]) / 1e6
    ok_time = detection <= timeout + 1 and teardown <= 5
else:
    teardown = (manifest["end_unix_us"] - records[rank]["end_unix_us"]) / 1e6
    ok_time = teardown <= 5
ok = code == expected_code and named and others and left == 0 and ok_time
print(json.dumps({"kind": kind, "rank": rank, "np": np, "exit": code, "expected": expected_code, "culprit_named": named,
                  "others_collateral": others,
                  "detection_s": None if detection is None else round(detection, 2),
                  "stacks_s": None if stacks is None else round(stacks, 2),
                  "teardown_s": round(teardown, 2), "left": left, "ok": ok}))
PY
}

interrupt_run() {  # interrupt_run SIGNAL I
  local sig=$1 i=$2 run=$work/int-$1-$2 code=0
  "$ddprun" --log-level error --profile --grace 2 --run-dir "$run" -np 2 "$train" --model mlp --steps 100000 \
    --batch-size 16 --log-every 100000 >/dev/null 2>"$run.err" &
  local pid=$!
  for _ in $(seq 200); do  # until both ranks have written a step
    [[ $(cat "$run"/timings/*.jsonl 2>/dev/null | wc -l) -ge 4 ]] && break
    sleep 0.05
  done
  kill -"$sig" $pid
  wait $pid || code=$?
  local report=0
  [[ -s $run/report.json ]] && report=1
  echo "{\"signal\": \"$sig\", \"run\": $i, \"exit\": $code, \"left\": $(leftovers "$run"), \"report\": $report}" | tee -a "$results"
}

if ((smoke)); then
  case_run exit 0 2
  case_run kill 3 4
  case_run segv 1 4
  case_run hang 1 2
  interrupt_run INT 1
  interrupt_run TERM 1
else
  for kind in exit segv kill hang; do
    for np in 2 4; do
      for rank in $(printf '%s\n' 0 $((np / 2)) $((np - 1)) | sort -un); do  # first, middle, last
        case_run "$kind" "$rank" "$np"
      done
    done
  done
  for i in $(seq 10); do interrupt_run INT "$i"; interrupt_run TERM "$i"; done
fi

/usr/bin/python3 - "$results" "$smoke" "$root" <<'PY'
import json, subprocess, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
smoke, root = sys.argv[2] == "1", sys.argv[3]
seconds = lambda v: "–" if v is None else f"{v:.2f} s"
cases = [r for r in rows if "kind" in r]
ints = [r for r in rows if "signal" in r]
bad = [r for r in cases if not r["ok"]] + [r for r in ints if r["exit"] != {"INT": 130, "TERM": 143}[r["signal"]] or r["left"] or not r["report"]]
if not smoke:
    lines = ["## Fault matrix (`scripts/fault-matrix.sh`)", "",
             "`train --model mlp --fault RANK:5:KIND` under `ddprun --grace 2` (hang: `--timeout 4`) on this 2-core machine.",
             "Teardown: from the failure (a crash: the culprit's end) to ddprun's end, budget 5 s. A hang: detection from",
             "the moment the rank entered the phase it never left (its progress file's last rewrite) to ddprun noticing,",
             "budget timeout + 1 s; then the stacks (gdb, loading LibTorch's symbols, is most of it); then the teardown,",
             "budget 5 s (detection and stacks are measured for hangs only: `–` elsewhere). `left`: members of the",
             "ranks' process groups still alive afterwards.", "",
             "| fault | np | rank | exit (expected) | culprit named | others collateral | detection | stacks | teardown | left | |",
             "|---|---:|---:|---|---|---|---:|---:|---:|---:|---|"]
    for r in cases:
        lines.append(f"| {r['kind']} | {r['np']} | {r['rank']} | {r['exit']} ({r['expected']}) | {'yes' if r['culprit_named'] else 'NO'} | "
                     f"{'yes' if r['others_collateral'] else 'NO'} | {seconds(r['detection_s'])} | {seconds(r['stacks_s'])} | {r['teardown_s']:.2f} s | "
                     f"{r['left']} | {'ok' if r['ok'] else 'FAILED'} |")
    lines += ["", f"{sum(r['ok'] for r in cases)} of {len(cases)} cases pass.", "",
              "### Interrupts", "",
              "SIGINT and SIGTERM to ddprun while 2 ranks train (`--profile`):", "",
              "| signal | runs | exit codes | processes left | partial report written |", "|---|---:|---|---:|---:|"]
    for sig in ("INT", "TERM"):
        rs = [r for r in ints if r["signal"] == sig]
        lines.append(f"| SIG{sig} | {len(rs)} | {', '.join(sorted({str(r['exit']) for r in rs}))} | {sum(r['left'] for r in rs)} | "
                     f"{sum(r['report'] for r in rs)} of {len(rs)} |")
    subprocess.run(["/usr/bin/python3", f"{root}/bench/update_section.py", f"{root}/docs/reliability.md", "fault-matrix"],
                   input="\n".join(lines), text=True, check=True)
for r in bad:
    print("FAILED:", json.dumps(r))
sys.exit(1 if bad else 0)
PY
