#!/usr/bin/python3
"""projection-validation.py RUNS [--doc] [--fixtures DIR] [--ddprof PATH]: how far `ddprof project` lands from
what was measured (docs/projection.md, "Validation").

RUNS is what scripts/projection-runs.sh wrote: rK/<model>-<link>/ run directories, the same job
on 2 simulated hosts x 2 ranks with the link between them at several rates, ROUNDS times, and
1 host x 2 ranks. For each model and link, the measured step is the median over the rounds; the
source of a projection is that link's median run. Every source is projected onto every link
(the target's shape: 2 hosts x 2 ranks, the link at the bandwidth ddpbench measured on it, the
median over the rounds), and the 1-host run onto every 2-host link. Prints the tables (Markdown);
--doc also writes them into docs/projection.md between its "validation" markers; --fixtures DIR
copies each source run (its run.json, exit records, timings and ddpbench result) into
DIR/<model>-<link> for the unit tests (tests/data/projection)."""
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
args = sys.argv[1:]
doc = "--doc" in args
ddprof = os.path.join(root, "build/profiler/ddprof")
fixtures = None
if "--ddprof" in args:
    ddprof = args[args.index("--ddprof") + 1]
if "--fixtures" in args:
    fixtures = args[args.index("--fixtures") + 1]
runs = [a for a in args if not a.startswith("--") and a not in (ddprof, fixtures)]
if len(runs) != 1 or not os.path.isdir(runs[0]):
    sys.exit("usage: projection-validation.py RUNS [--doc] [--fixtures DIR] [--ddprof PATH]")
runs = runs[0]
LINKS = ["unlimited", "1gbit", "200mbit", "50mbit"]
MODELS = ["mlp", "cnn"]
rounds = sorted(glob.glob(os.path.join(runs, "r*")))
if not rounds:
    sys.exit(f"projection-validation.py: no rK/ directories in {runs} (run scripts/projection-runs.sh first)")


def busbw(bench_file):
    rows = json.load(open(bench_file))["rows"]
    largest = max(r["bytes"] for r in rows if r["op"] == "allreduce")
    return max(r["busbw_gbps"] for r in rows if r["op"] == "allreduce" and r["bytes"] == largest)


link_gbps = {l: statistics.median(busbw(os.path.join(r, f"ddpbench-{l}.json")) for r in rounds) for l in LINKS}


def shape(link):
    return f"hosts=2,gpus=2,intra=loopback,inter=socket:{link_gbps[link]:.6f}GB/s"


def project(run, targets):
    cmd = [ddprof, "project", run, "--format", "json"] + [x for t in targets for x in ("--to", t)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"projection-validation.py: {' '.join(cmd)} failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def keep(run, name):
    """The files of a run the projection reads, as a fixture."""
    if not fixtures:
        return
    dest = os.path.join(fixtures, name)
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(os.path.join(dest, "timings"))
    os.makedirs(os.path.join(dest, "ranks"))
    for f in ["run.json"] + [f for f in os.listdir(run) if f.startswith("ddpbench")]:
        shutil.copy(os.path.join(run, f), dest)
    for sub, suffix in (("timings", ".jsonl"), ("ranks", ".exit.json")):
        for f in os.listdir(os.path.join(run, sub)):
            if f.endswith(suffix):
                shutil.copy(os.path.join(run, sub, f), os.path.join(dest, sub))


def pct(x):
    return f"{100 * x:+.1f} %"


lines = []
errors, self_errors, pairs, right = [], [], 0, 0
one_host = []
for model in MODELS:
    measured, source, spread = {}, {}, {}
    for link in LINKS:
        steps = []
        for r in rounds:
            run = os.path.join(r, f"{model}-{link}")
            steps.append((project(run, [shape(link)])["measured"]["step_ms"], run))
        values = sorted(s for s, _ in steps)
        measured[link] = statistics.median(values)
        source[link] = min(steps, key=lambda s: abs(s[0] - measured[link]))[1]
        spread[link] = (values[-1] - values[0]) / measured[link]
        keep(source[link], f"{model}-{link}")
    lines.append(f"**{model}** (train --model {model}): projected step (error against the measured median)\n")
    lines.append("| from \\ onto | " + " | ".join(LINKS) + " |")
    lines.append("|---|" + "---:|" * len(LINKS))
    lines.append("| measured (median of rounds) | " + " | ".join(f"{measured[l]:.1f} ms" for l in LINKS) + " |")
    lines.append("| spread over rounds (max-min)/median | " + " | ".join(f"{100 * spread[l]:.0f} %" for l in LINKS) + " |")
    for link in LINKS:
        projected = [t["step_ms"] for t in project(source[link], [shape(t) for t in LINKS])["targets"]]
        cells = []
        for target, p in zip(LINKS, projected):
            e = (p - measured[target]) / measured[target]
            (self_errors if target == link else errors).append(abs(e))
            cells.append(f"{p:.1f} ms ({pct(e)})")
        lines.append(f"| {link} | " + " | ".join(cells) + " |")
        # The order of the targets, where the measured steps differ by more than 5 %.
        for i in range(len(LINKS)):
            for j in range(i + 1, len(LINKS)):
                a, b = measured[LINKS[i]], measured[LINKS[j]]
                if abs(a - b) / min(a, b) <= 0.05:
                    continue
                pairs += 1
                right += (projected[i] < projected[j]) == (a < b)
    ones = []
    for r in rounds:
        ones.append((project(os.path.join(r, f"{model}-1host"), [shape("unlimited")])["measured"]["step_ms"], r))
    one_median = statistics.median(s for s, _ in ones)
    one_run = os.path.join(min(ones, key=lambda s: abs(s[0] - one_median))[1], f"{model}-1host")
    keep(one_run, f"{model}-1host")
    projected = [t["step_ms"] for t in project(one_run, [shape(t) for t in LINKS])["targets"]]
    cells = []
    for target, p in zip(LINKS, projected):
        e = (p - measured[target]) / measured[target]
        one_host.append(abs(e))
        cells.append(f"{p:.1f} ms ({pct(e)})")
    lines.append(f"| 1 host x 2 ranks ({one_median:.1f} ms) | " + " | ".join(cells) + " |")
    lines.append("")

summary = [
    f"Measured with scripts/projection-runs.sh ({len(rounds)} rounds), tabulated by "
    "scripts/projection-validation.py. Links as ddpbench measured them (bus bandwidth of a Gloo "
    "allreduce of 2 MiB over the 2 x 2 ranks, median of rounds): "
    + ", ".join(f"{l} {link_gbps[l]:.3g} GB/s" for l in LINKS) + ".",
    "",
    f"- across link speeds (2 hosts x 2 ranks onto another link, {len(errors)} projections): median absolute "
    f"error **{100 * statistics.median(errors):.1f} %**, worst **{100 * max(errors):.1f} %**",
    f"- onto the run's own link: worst {100 * max(self_errors):.1f} % (the median run against the median of "
    "the rounds)",
    f"- the order of configurations whose measured steps differ by more than 5 %: {right} of {pairs} pairs right",
    f"- 1 host x 2 ranks onto 2 hosts x 2 ranks ({len(one_host)} projections): median absolute error "
    f"{100 * statistics.median(one_host):.1f} %, worst {100 * max(one_host):.1f} %",
    "",
]
text = "\n".join(summary + lines).rstrip() + "\n"
print(text)
if doc:
    subprocess.run(["/usr/bin/python3", os.path.join(root, "bench/update_section.py"),
                    os.path.join(root, "docs/projection.md"), "validation"], input=text, text=True, check=True)
