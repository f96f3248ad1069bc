# simhosts-lib.sh, sourced by the checks that run on simulated hosts (scripts/simulate-hosts):
# skips (exit 77, with the reason) where network namespaces cannot be made, then sets `sim` (the
# script), `work` (a scratch directory) and a trap that takes the hosts down and removes it.
here=$(cd "$(dirname "$0")/../.." && pwd)
sim=$here/scripts/simulate-hosts
[ "$(id -u)" -eq 0 ] || { echo "SKIP: simulated hosts need root (network namespaces)"; exit 77; }
probe=ddpsim-probe-$$
if ! ip netns add "$probe" 2>/dev/null; then echo "SKIP: this machine does not allow network namespaces (ip netns add failed)"; exit 77; fi
ip netns del "$probe"
work=$(mktemp -d)
trap '"$sim" down >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
# With FAULT_TABLE=FILE, one JSON row of the multi-host fault table (scripts/host-fault-table.sh).
row() {  # row SCENARIO DETECTED_MS CULPRIT EXIT: nothing was left on sim0 or sim1 when it is written
  [ -z "${FAULT_TABLE:-}" ] || printf '{"scenario": "%s", "launcher": "mpirun", "where": "simulated hosts", "ms": %s, "culprit": "%s", "exit": %s, "left": "sim0 0, sim1 0"}\n' \
    "$1" "$2" "$3" "$4" >>"$FAULT_TABLE"
}
field() { /usr/bin/python3 -c 'import json,sys; v=json.load(open(sys.argv[1])); [v := v[k if not k.isdigit() else int(k)] for k in sys.argv[2:]]; print(v)' "$@"; }
