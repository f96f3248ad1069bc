#!/usr/bin/env bash
# report-html-check.sh: `ddprun --profile -np 4 train` leaves report.html and trace.json that
# work (DDPRUN, TRAIN and DDPROF in the environment):
#   - report.html opens in headless Chromium without a console message, its screenshot is not
#     blank, its DOM has the findings and the SVG charts carry report.json's numbers;
#   - trace.json is Trace Event Format: one pid per rank, phase and bucket events inside their steps;
#   - util/ has utilisation samples for every rank, and report.json summarises them;
#   - the live progress printed a line with steps/s and the ETA (not a terminal: plain lines);
#   - `ddprof compare --format html` of two runs opens the same way.
# The checks that need no browser (live progress, trace.json, utilisation, report.json) run first;
# then, where chromium is not installed, it exits 77 (skipped, which CI does not accept).
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
fail() { echo "FAIL: $*"; exit 1; }

# Not a terminal: a progress line every 10 s, the first as soon as every rank has a step, before
# the laggard can be judged. 400 steps (16 s of rank 2's sleeps alone) outlast the second line;
# 220 (13 s in all) raced it and lost once.
"$DDPRUN" --profile --output quiet --run-dir "$work/run" -np 4 "$TRAIN" --model mlp --steps 400 --fault 2:0:slow:40 \
  2>err.txt >out.txt || { cat err.txt; fail "ddprun"; }
cat err.txt
grep -Eq "^ddprun: step [0-9]+/400 \([0-9]+ %\), [0-9.]+ steps/s, ETA [0-9]+:[0-9]{2}; the others wait for rank 2 \(it waits" err.txt ||
  fail "no live progress line naming rank 2 (slowed by 40 ms a step)"
for f in report.html trace.json report.json; do [[ -s run/$f ]] || fail "run/$f missing"; done

# Without a browser: report.json's utilisation, and trace.json in Trace Event Format.
/usr/bin/python3 - "$work/run/report.json" "$work/run/trace.json" <<'PYEOF'
import json, sys
report, trace = sys.argv[1:3]
r = json.load(open(report))
assert len(r["utilisation"]) == 4 and all(u["samples"] >= 2 for u in r["utilisation"]), r["utilisation"]
print(f"report.json: utilisation of {len(r['utilisation'])} ranks, {len(r['findings'])} findings")

t = json.load(open(trace))
events = t["traceEvents"]
pids = {e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
assert pids == {0, 1, 2, 3}, pids
steps = {(e["pid"], int(e["name"].split()[1])): (e["ts"], e["ts"] + e["dur"]) for e in events if e.get("cat") == "step"}
inside = 0
for e in events:
    if e["ph"] != "X" or e["cat"] == "step":
        continue
    assert e["cat"] in ("phase", "collective"), e
    start, end = steps[(e["pid"], e["args"]["step"])]
    # Timestamps are microseconds with sub-microsecond rounding in the records: 2 us of slack.
    assert start - 2 <= e["ts"] and e["ts"] + e["dur"] <= end + 2, (e, start, end)
    inside += 1
assert all(e["ph"] in ("M", "X") and "ts" in e or e["ph"] == "M" for e in events)
print(f"trace.json: {len(events)} events, {len(steps)} steps on {len(pids)} ranks, {inside} phase/bucket events inside their steps")
PYEOF

command -v chromium >/dev/null || { echo "SKIP: chromium is not installed (scripts/install-deps.sh installs it)"; exit 77; }

# Chromium: headless, no sandbox (root), no GPU. A console message of any kind is a failure.
browse() {  # browse FILE.html PNG: screenshot + DOM; prints the DOM
  timeout 120 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1000,2400 \
    --enable-logging=stderr --v=0 --screenshot="$2" "file://$1" 2>"$2.log" >/dev/null || fail "chromium could not screenshot $1"
  if grep -q ":CONSOLE" "$2.log"; then grep ":CONSOLE" "$2.log"; fail "console messages on $1"; fi
  timeout 120 chromium --headless --no-sandbox --disable-gpu --dump-dom "file://$1" 2>/dev/null
}
browse "$work/run/report.html" "$work/report.png" >dom.html
/usr/bin/python3 - "$work/report.png" "$work/run/report.json" dom.html <<'PYEOF'
import json, struct, sys, zlib
png, report, dom = sys.argv[1:4]
# Not blank: the decompressed image rows hold many different byte values (a blank page, filtered
# or not, holds one or two).
data = open(png, "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat = 8, b""
while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    if kind == b"IDAT":
        idat += data[pos + 8:pos + 8 + length]
    pos += 12 + length
raw = zlib.decompress(idat)
distinct = len(set(raw))
busy = sum(1 for b in raw[::7] if b not in (0, 255)) / len(raw[::7])
print(f"screenshot: {len(raw)} bytes of pixels, {distinct} distinct values, {100 * busy:.1f} % not black or white")
assert distinct > 40 and busy > 0.005, "the screenshot is blank"

r = json.load(open(report))
page = open(dom).read()
assert "<svg" in page and "Step phases per rank" in page, "charts missing from the DOM"
for f in r["findings"]:
    assert f["kind"] in page, f"finding {f['kind']} not on the page"
checked = 0
for rank in r["ranks"]:
    for phase, ms in rank["phases_ms_mean"].items():
        if ms > 0:
            assert f'data-v="{ms:.2f}"' in page, f"rank {rank['rank']} {phase} {ms:.2f} ms not in the SVG"
            checked += 1
assert f'{r["steps"]["step_ms_median"]:.2f}' in page
print(f"report.html: {checked} phase numbers of report.json found in the SVG; {len(r['findings'])} findings")
PYEOF

# Two runs compared, as HTML.
"$DDPRUN" --output quiet --log-level warn --run-dir "$work/run2" -np 2 "$TRAIN" --model mlp --steps 40 >/dev/null
"$DDPROF" compare "$work/run" "$work/run2" --price-a 8 --price-b 3 --format html >compare.html
browse "$work/compare.html" "$work/compare.png" >compare-dom.html
grep -q "cost per 1 M samples" compare-dom.html || fail "compare.html has no cost row"
grep -q "cheaper per sample" compare-dom.html || fail "compare.html has no verdict"
echo "ok"
