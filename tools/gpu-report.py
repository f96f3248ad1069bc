#!/usr/bin/python3
"""gpu-report.py [BUILD_DIR] [FIXTURES]: the "What it saw" section of docs/gpu-check.md, written
from the GPU fixtures alone (tests/data/gpu-h200 by default: what tools/gpu-check.sh brought back
from a GPU machine) and from ddprof's reading of them, so that the page says only what the
fixtures hold. Replaces the section between <!-- begin gpu-fixtures --> and <!-- end gpu-fixtures -->."""
import glob
import json
import os
import re
import subprocess
import sys

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(root, "build"))
fixtures = os.path.abspath(sys.argv[2] if len(sys.argv) > 2 else os.path.join(root, "tests/data/gpu-h200"))
ddprof = os.path.join(build, "profiler", "ddprof")


def text(name):
    with open(os.path.join(fixtures, name), errors="replace") as f:
        return f.read()


def ddprof_json(*args):
    out = subprocess.run([ddprof, *args], capture_output=True, text=True)
    return json.loads(out.stdout)


def span(values, fmt):
    lo, hi = min(values), max(values)
    return fmt.format(lo) if fmt.format(lo) == fmt.format(hi) else f"{fmt.format(lo)}–{fmt.format(hi)}"


def machine():
    info = text("info.log")
    gpu = re.search(r"\|\s+\d+\s+(NVIDIA [^|]*?)\s{2,}", info)
    driver = re.search(r"Driver Version: ([\d.]+)\s+CUDA Version: ([\d.]+)", info)
    torch = re.search(r"^torch (\S+) cuda (\S+) nccl \((\d+), (\d+), (\d+)\)", info, re.M)
    return (f"{gpu.group(1) if gpu else '?'}, driver {driver.group(1)} (CUDA {driver.group(2)}), "
            f"PyTorch {torch.group(1)} with NCCL {'.'.join(torch.group(3, 4, 5))}") if driver and torch else "?"


def bench_rows():
    rows = []
    large = json.load(open(os.path.join(fixtures, "ddpbench-nccl-np1-large.json")))
    biggest = max((r for r in large["rows"] if not r["in_place"]), key=lambda r: r["bytes"])
    copy_tbs = 2 * biggest["bytes"] / (biggest["time_us"] * 1e-6) / 1e12
    rows.append((f"`ddpbench` allreduce at one rank, {biggest['bytes'] >> 30} GiB out of place",
                 f"{biggest['time_us']:.0f} µs, algbw {biggest['algbw_gbps']:.0f} GB/s: a device copy, "
                 f"{copy_tbs:.2f} TB/s read + written"))
    log = text("bench.log")
    ops = re.findall(r"^# ddpbench (\w+) backend nccl", log, re.M)
    table = [line.split() for line in log.splitlines() if re.match(r"^\s+\d+\s+\d+\s+\w+", line)]
    # #wrong of the out-of-place and in-place runs (N/A where an op has no such run)
    wrong = [int(w) for cols in table for w in (cols[8], cols[12]) if w.isdigit()]
    sizes = [int(cols[0]) for cols in table]
    rows.append((f"`ddpbench --op all -c 1`, {min(sizes)} B to {max(sizes) >> 20} MiB",
                 f"{len(ops)} ops ({', '.join(ops)}), {len(table)} rows, {len(wrong)} results checked, "
                 f"`#wrong` {sum(wrong)}"))
    return rows


def nccl_rows():
    logs = [p for p in glob.glob(os.path.join(fixtures, "**", "*.log"), recursive=True)]
    totals, kernels = [], []
    for p in logs:
        for m in re.finditer(r"Init timings.*? total ([\d.]+) \(kernels ([\d.]+)", open(p, errors="replace").read()):
            totals.append(float(m.group(1)))
            kernels.append(float(m.group(2)))
    duplicate = ddprof_json("nccl", os.path.join(fixtures, "duplicate-gpu.log"), "--json")
    first = duplicate["warnings"][0]
    return [(f"NCCL init (`Init timings`, {len(totals)} communicators)",
             f"{span(totals, '{:.2f}')} s, {span(kernels, '{:.2f}')} s of it loading kernels"),
            ("two ranks on one GPU", f"NCCL `{first['message'].split(':')[0].strip()}` ({first['location']}); "
                                     f"ddprof's failure kinds: {', '.join(duplicate['failure_kinds']) or 'none'}")]


def torch_row():
    runs = [json.loads(line) for line in text("torch.log").splitlines() if line.startswith("{")]
    ms = [r["step_ms_median"] for r in runs]
    r = runs[0]
    return (f"PyTorch DDP, {r['model']}, batch {r['batch']}, {r['np']} rank", f"{span(ms, '{:.1f}')} ms per step "
            f"({len(runs)} run{'s' if len(runs) != 1 else ''})")


def train_rows():
    rows, findings = [], {}
    for run in sorted(glob.glob(os.path.join(fixtures, "runs", "*"))):
        log = open(os.path.join(run, "train.log"), errors="replace").read()
        head = re.search(r"model=(\S+) .*? batch=(\d+)x", log)
        precision = re.search(r"precision=(\S+)", log)
        report = ddprof_json("report", run, "--format", "json", "--no-write")
        phases = report["phases"]
        verified = "; parameters verified" if "verify: parameters bitwise identical" in log else ""
        comm = report["communication"]
        hidden = "" if comm["overlap_fraction"] is None else f", communication {comm['comm_ms_mean']:.1f} ms per step, " \
                                                            f"{100 * comm['overlap_fraction']:.0f} % hidden"
        rows.append((f"`train` {head.group(1)}, batch {head.group(2)}, {precision.group(1)}",
                     f"{report['steps']['step_ms_median']:.1f} ms per step, data {100 * phases['data']:.0f} %, "
                     f"optimizer {100 * phases['optimizer']:.0f} %{hidden}{verified}"))
        findings[os.path.basename(run)] = [f["kind"] for f in report["findings"]]
    return rows, findings


def main():
    rows = bench_rows() + nccl_rows() + [torch_row()]
    train, findings = train_rows()
    rows += train
    print(f"## What it saw ({machine()})\n")
    print("The logs and runs are fixtures in `tests/data/gpu-h200/`, checked by "
          "`tests/profiler/test_gpu_fixtures.cpp`. Written by `tools/gpu-report.py` from those files and ddprof's "
          "reading of them.\n")
    print("| measure | value |")
    print("|---|---|")
    for name, value in rows:
        print(f"| {name} | {value} |")
    print()
    print("ddprof's findings on the train runs: " +
          "; ".join(f"`{run}` {', '.join(kinds) or 'none'}" for run, kinds in findings.items()) + ".")


if __name__ == "__main__":
    main()
