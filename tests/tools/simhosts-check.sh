#!/usr/bin/env bash
# simhosts-check.sh: train as 2 hosts x 2 ranks over Gloo across real TCP between network
# namespaces (scripts/simulate-hosts), first on unlimited links, then with host sim1 limited to
# 10 Mbit/s (tc tbf). DDPRUN, TRAIN and DDPROF in the environment.
#   - both runs train correctly (--verify: parameters bitwise identical on the 4 ranks), with
#     ranks 0-1 on sim0 and 2-3 on sim1;
#   - the slow-link run has the comm_bound finding and lower throughput; the fast one has neither;
#   - `ddprof compare` of the two says which is faster and shows the exposed communication;
#   - the ranks' samples measured the links between the hosts (their TCP connections): sim0 → sim1
#     at 50 Mbit/s or more unlimited, under 50 limited;
#   - 3 hosts x 1 rank with sim1 limited: comm_bound names host sim1.
# Exits 77 (skipped, with the reason) where network namespaces cannot be made.
set -euo pipefail
. "$(dirname "$0")/simhosts-lib.sh"
cd "$work"

job() {  # job NAME: 2 hosts x 2 ranks, launched from sim0
  "$sim" exec sim0 -- "$DDPRUN" --profile --output rank:0 --run-dir "$work/$1" -H sim0:2,sim1:2 \
    "$TRAIN" --backend gloo --model cnn --batch-size 128 --steps 30 --log-every 100 --verify 2>&1 | tee "$1.txt"
  grep -q "verify: parameters bitwise identical on 4 ranks" "$1.txt" || fail "$1: the ranks disagree"
  for r in 0 1 2 3; do
    [[ $(field "$work/$1/ranks/rank-0000$r.exit.json" host) == sim$((r / 2)) ]] || fail "$1: rank $r not on sim$((r / 2))"
  done
}
kinds() { /usr/bin/python3 -c 'import json,sys; print(" ".join(f["kind"] for f in json.load(open(sys.argv[1]))["findings"]))' "$1"; }
rate() { field "$1" scaling samples_per_s; }

"$sim" up 2
job fast
"$sim" up 2 --rate sim1=10mbit
job slow
fast_kinds=$(kinds fast/report.json) slow_kinds=$(kinds slow/report.json)
echo "fast: $(rate fast/report.json) samples/s, findings: ${fast_kinds:-none}"
echo "slow: $(rate slow/report.json) samples/s, findings: ${slow_kinds:-none}"
[[ " $slow_kinds " == *" comm_bound "* ]] || fail "the slow-link run has no comm_bound finding"
[[ " $fast_kinds " != *" comm_bound "* ]] || fail "the fast-link run is comm_bound too"
"$DDPROF" compare fast slow --label-a unlimited --label-b 10mbit --price-a 1 --price-b 1 | tee compare.txt
grep -Eq "^unlimited trains [0-9.]+x faster" compare.txt || fail "compare does not find the fast link faster"
grep -Eq "^Exposed communication: unlimited [0-9.]+ %, 10mbit [0-9.]+ % of the step" compare.txt || fail "compare: exposure"
grep -q "^hosts .*2 (sim0, sim1)" compare.txt || fail "compare: hosts"
link_rate() {  # link_rate REPORT FROM TO: the measured rate (Mbit/s) of that link, or "none"
  /usr/bin/python3 -c 'import json,sys
links = json.load(open(sys.argv[1]))["communication"]["links"]
print(next(("%.0f" % l["mbit_per_s"] for l in links if l["from"] == sys.argv[2] and l["to"] == sys.argv[3] and l["measured"]), "none"))' "$@"
}
fast_link=$(link_rate fast/report.json sim0 sim1) slow_link=$(link_rate slow/report.json sim0 sim1)
echo "sim0 → sim1: $fast_link Mbit/s unlimited, $slow_link Mbit/s limited"
[[ $fast_link != none && $fast_link -ge 50 ]] || fail "the unlimited link was not measured at 50 Mbit/s or more: $fast_link"
[[ $slow_link != none && $slow_link -lt 50 ]] || fail "the limited link was not measured under 50 Mbit/s: $slow_link"
"$sim" up 3 --rate sim1=10mbit
"$sim" exec sim0 -- "$DDPRUN" --profile --output quiet --run-dir "$work/three" -H sim0:1,sim1:1,sim2:1 \
  "$TRAIN" --backend gloo --model cnn --batch-size 128 --steps 30 --log-every 100 >three.txt 2>&1 || fail "3 hosts: $(tail -3 three.txt)"
first=$(/usr/bin/python3 -c 'import json,sys; f = json.load(open(sys.argv[1]))["findings"][0]; print(f["kind"], *f["hosts"])' three/report.json)
echo "3 hosts, sim1 limited: $first"
[[ $first == "comm_bound sim1" ]] || fail "3 hosts, sim1 limited: the first finding is '$first', not comm_bound naming sim1"
"$sim" down
if ip netns list | grep -q ddpsim; then fail "namespaces left after down"; fi
echo ok
