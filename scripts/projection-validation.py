#!/usr/bin/python3
"""projection-validation.py RUNS [--doc] [--fixtures DIR] [--ddprof PATH]: how far `ddprof project` lands from
what was measured (docs/projection.md, "Validation").

RUNS is what scripts/projection-runs.sh wrote: rK/<model>-<link>/ run directories, the same job
on 2 simulated hosts x 2 ranks with the link between them at several rates, ROUNDS times, and
1 host x 2 ranks. This machine's speed drifts from minute to minute, so a projection is judged
against a run of the same round (the configurations run in turn within a round, minutes apart):
in each round every run is projected onto every link (2 hosts x 2 ranks, the link as ddpbench
measured it just before the run there, given as the target's `bench=`), and the 1-host run onto
every 2-host link; a cell is the median over the rounds of the projected step and of its error against
the step measured there in the same round. Prints the tables (Markdown); --doc also writes them into
docs/projection.md between its "validation" markers; --fixtures DIR copies the runs of the most
typical round (the one whose measured steps lie nearest the medians over the rounds) — their
run.json, exit records, timings, utilisation samples and ddpbench result — into DIR/<model>-<link>
for the unit tests (tests/data/projection)."""
import glob
import json
import math
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


def link_bench(rnd, model, link):
    """The ddpbench result of the run a projection onto (model, link) is judged against: the link
    as measured just before that run (scripts/projection-runs.sh)."""
    return os.path.join(rnd, f"{model}-{link}", "ddpbench-link.json")


def shape(rnd, model, link):
    """2 hosts x 2 ranks, the link between them as ddpbench measured it (`bench=`: ddprof reads the
    link's bandwidth from it, and each bucket's allreduce where its size is off that line)."""
    return f"hosts=2,gpus=2,intra=loopback,inter=socket,bench={link_bench(rnd, model, link)}"


def project(run, targets):
    cmd = [ddprof, "project", run, "--format", "json"] + [x for t in targets for x in ("--to", t)]
    out = subprocess.run(cmd, capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"projection-validation.py: {' '.join(cmd)} failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def keep(run, name):
    """The files of a run the projection reads, as a fixture."""
    dest = os.path.join(fixtures, name)
    shutil.rmtree(dest, ignore_errors=True)
    for sub in ("timings", "ranks", "util"):
        os.makedirs(os.path.join(dest, sub))
    for f in ["run.json"] + [f for f in os.listdir(run) if f.startswith("ddpbench")]:
        shutil.copy(os.path.join(run, f), dest)
    for sub, suffix in (("timings", ".jsonl"), ("ranks", ".exit.json"), ("util", ".jsonl")):
        for f in os.listdir(os.path.join(run, sub)):
            if f.endswith(suffix):
                shutil.copy(os.path.join(run, sub, f), os.path.join(dest, sub))


def pct(x):
    return f"{100 * x:+.1f} %"


med = statistics.median
SOURCES = LINKS + ["1host"]
# Every run of every round projected onto every link of its round: (model, source, round) ->
# (measured step, [projected step per link]); (model, link, round) -> the link's bus bandwidth.
result, link_busbw = {}, {}
for model in MODELS:
    for r in rounds:
        for source in SOURCES:
            out = project(os.path.join(r, f"{model}-{source}"), [shape(r, model, t) for t in LINKS])
            result[(model, source, r)] = (out["measured"]["step_ms"], [t["step_ms"] for t in out["targets"]])
            if source in LINKS:  # onto its own link: the bus bandwidth ddprof read from its ddpbench
                link_busbw[(model, source, r)] = out["targets"][LINKS.index(source)]["busbw_gbps"]

lines = []
errors, self_errors, one_host, pairs, right = [], [], [], 0, 0
for model in MODELS:
    measured = {l: med(result[(model, l, r)][0] for r in rounds) for l in LINKS}
    spread = {l: (max(result[(model, l, r)][0] for r in rounds) - min(result[(model, l, r)][0] for r in rounds))
              / measured[l] for l in LINKS}
    lines.append(f"**{model}** (train --model {model}): projected step, median over the rounds (median error "
                 "against the step measured in the same round)\n")
    lines.append("| from \\ onto | " + " | ".join(LINKS) + " |")
    lines.append("|---|" + "---:|" * len(LINKS))
    lines.append("| measured (median of rounds) | " + " | ".join(f"{measured[l]:.1f} ms" for l in LINKS) + " |")
    lines.append("| spread over rounds (max-min)/median | " + " | ".join(f"{100 * spread[l]:.0f} %" for l in LINKS) + " |")
    for source in SOURCES:
        cells, projected = [], []
        for i, target in enumerate(LINKS):
            p = med(result[(model, source, r)][1][i] for r in rounds)
            e = med(result[(model, source, r)][1][i] / result[(model, target, r)][0] - 1 for r in rounds)
            (one_host if source == "1host" else self_errors if target == source else errors).append(abs(e))
            projected.append(p)
            cells.append(f"{p:.1f} ms ({pct(e)})")
        name = (f"1 host x 2 ranks ({med(result[(model, source, r)][0] for r in rounds):.1f} ms)"
                if source == "1host" else source)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
        if source == "1host":
            continue
        # The order of the targets, where the measured steps differ by more than 5 %.
        for i in range(len(LINKS)):
            for j in range(i + 1, len(LINKS)):
                a, b = measured[LINKS[i]], measured[LINKS[j]]
                if abs(a - b) / min(a, b) <= 0.05:
                    continue
                pairs += 1
                right += (projected[i] < projected[j]) == (a < b)
    lines.append("")

if fixtures:
    def distance(r):
        return sum(abs(math.log(result[(m, s, r)][0] / med(result[(m, s, q)][0] for q in rounds)))
                   for m in MODELS for s in SOURCES)
    typical = min(rounds, key=distance)
    for model in MODELS:
        for source in SOURCES:
            keep(os.path.join(typical, f"{model}-{source}"), f"{model}-{source}")


def verdict(ok):
    return "met" if ok else "missed"


summary = [
    f"Measured with scripts/projection-runs.sh ({len(rounds)} rounds), tabulated by "
    "scripts/projection-validation.py. Each projection is judged against the run of the same round (this "
    "machine's speed drifts between rounds: see the spread rows), onto the link as ddpbench measured it just "
    "before that run (its Gloo allreduce over the 2 x 2 ranks from 8 bytes to 2 MiB, given to the target as "
    "`bench=`; bus bandwidth at 2 MiB past the latency that its times at a few bytes give, medians over the "
    "rounds and models: "
    + ", ".join(f"{l} {med(link_busbw[(m, l, r)] for r in rounds for m in MODELS):.3g} GB/s" for l in LINKS)
    + ").",
    "",
    f"- across link speeds (2 hosts x 2 ranks onto another link, {len(errors)} projections): median absolute "
    f"error **{100 * med(errors):.1f} %**, worst **{100 * max(errors):.1f} %**",
    f"- onto the run's own link: worst {100 * max(self_errors):.1f} %",
    f"- the order of configurations whose measured steps differ by more than 5 %: {right} of {pairs} pairs right",
    f"- 1 host x 2 ranks onto 2 hosts x 2 ranks ({len(one_host)} projections): median absolute error "
    f"{100 * med(one_host):.1f} %, worst {100 * max(one_host):.1f} %",
    "- targets (judged on the unrounded figures): median across link speeds <= 5 % "
    f"{verdict(med(errors) <= 0.05)} ({100 * med(errors):.2f} %), worst <= 15 % {verdict(max(errors) <= 0.15)} "
    f"({100 * max(errors):.2f} %), the order always right {verdict(right == pairs)}",
    "",
]
text = "\n".join(summary + lines).rstrip() + "\n"
print(text)
if doc:
    subprocess.run(["/usr/bin/python3", os.path.join(root, "bench/update_section.py"),
                    os.path.join(root, "docs/projection.md"), "validation"], input=text, text=True, check=True)
