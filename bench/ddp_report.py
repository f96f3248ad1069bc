#!/usr/bin/python3
"""Writes docs/benchmarks.md from bench/ddp-step.sh's results.

usage: ddp_report.py DDP_STEP_JSONL STEP_TIMER_JSON
"""
import collections
import json
import os
import platform
import statistics
import sys

IMPLS = [("ours-mpi", "ours, mpi, overlap"), ("ours-mpi-no-overlap", "ours, mpi, no overlap"),
         ("ours-gloo", "ours, gloo, overlap"), ("pytorch-ddp-gloo", "PyTorch DDP, gloo")]
PEER = "pytorch-ddp-gloo"
PEER2 = "pytorch2-ddp-gloo"  # the MLP only
TARGET_RATIO = 0.70


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def print_verdicts(against, verdicts):
    """The target line and one line per (model, np, ratio): met or missed."""
    print(f"Target: ours ≤ {TARGET_RATIO:.2f}× {against}.\n")
    for model, n, ratio in verdicts:
        print(f"- {model} np={n}: {ratio:.2f}× — {'met' if ratio <= TARGET_RATIO else 'missed'}")
    print()


def main():
    runs = collections.defaultdict(list)
    by_rep = {}  # (configuration, np, impl, repetition) -> step
    params, torch_version, torch2_version = {}, "?", None
    with open(sys.argv[1]) as f:
        for row in map(json.loads, filter(str.strip, f)):
            # A configuration is a model at a per-rank batch: "mlp (32)".
            key = (f'{row["model"]} ({row["batch"]})', row["np"], row["impl"])
            runs[key].append(row["step_ms_median"])
            by_rep[key + (row["rep"],)] = row["step_ms_median"]
            if "params" in row:
                params[row["model"]] = row["params"]
            if row["impl"] == PEER2:
                torch2_version = row.get("torch", torch2_version)
            else:
                torch_version = row.get("torch", torch_version)
    with open(sys.argv[2]) as f:
        timer = json.load(f)
    ms = {key: statistics.median(values) for key, values in runs.items()}
    models = sorted({m for m, _, _ in ms}, key=lambda m: (not m.startswith("mlp "), m))
    sizes = sorted({n for _, n, _ in ms})
    reps = max(len(v) for v in runs.values())

    print("## DDP training step (`bench/ddp-step.sh`)\n")
    print("Regenerate with `bench/ddp-step.sh` (needs a build in `build/`). Every number on this page")
    print(f"comes from one run of it on this machine: {cpu_model()}, {os.cpu_count()} cores, "
          f"PyTorch {torch_version} (Debian's, the LibTorch of ours too), one thread per rank (`OPENBLAS_NUM_THREADS=1` for both), "
          "`mpirun --oversubscribe --bind-to none`, and for both the allocator settings ddprun gives its ranks "
          "(`MALLOC_MMAP_THRESHOLD_`, `MALLOC_TRIM_THRESHOLD_`: docs/launcher.md, \"Memory reuse\"; with glibc's "
          "default, each step's large tensors are returned to the kernel and faulted in again, on both sides).")
    print(f"Each configuration ran {reps} times, the four runs of a repetition back to back in an order that alternates;")
    print("the tables show the median run's median step time. This machine's speed drifts over minutes by more than")
    print("the differences measured here, so the ratios to PyTorch are taken per repetition, between runs next to each")
    print("other: the median of those ratios, with the lowest and highest in brackets.\n")

    def paired(model, n, impl, peer=PEER):
        """Per repetition: impl's step / the peer's step; the median, and the lowest and highest."""
        ratios = sorted(by_rep[(model, n, impl, rep)] / by_rep[(model, n, peer, rep)]
                        for (m, k, i, rep) in by_rep if (m, k, i) == (model, n, impl) and (model, n, peer, rep) in by_rep)
        return statistics.median(ratios), ratios[0], ratios[-1]

    print("### DDP step time against PyTorch DDP\n")
    print("Same model, synthetic data shape, per-rank batch, SGD with momentum and world size; the step is")
    print("data + forward + backward (with the gradient allreduce) + optimizer. PyTorch DDP is")
    print("`torch.nn.parallel.DistributedDataParallel` over Gloo (`bench/torch_ddp_train.py`), its default")
    print("25 MB buckets, as ours.\n")
    head = " | ".join(label for _, label in IMPLS)
    print(f"| model (batch/rank) | np | {head} | ours mpi / PyTorch | ours gloo / PyTorch |")
    print("|---|---:|" + "---:|" * len(IMPLS) + "---:|---:|")
    verdicts = []
    for model in models:
        for n in sizes:
            cells = [f"{ms[(model, n, impl)]:.2f} ms" if (model, n, impl) in ms else "–" for impl, _ in IMPLS]
            ratio, lo, hi = paired(model, n, "ours-mpi")
            ratio_gloo, lo_gloo, hi_gloo = paired(model, n, "ours-gloo")
            print(f"| {model} | {n} | " + " | ".join(cells) +
                  f" | **{ratio:.2f}×** ({lo:.2f}–{hi:.2f}) | {ratio_gloo:.2f}× ({lo_gloo:.2f}–{hi_gloo:.2f}) |")
            if n > 1:
                verdicts.append((model, n, ratio))
    print()
    print_verdicts(f"PyTorch's step time at np 2 and 4 (the median of the per-repetition ratios)", verdicts)
    if torch2_version is not None:
        print(f"### Against PyTorch {torch2_version}'s DDP\n")
        print(f"The same PyTorch script on torch {torch2_version} (`.venv-torch2/`, pip's CPU build, its own LibTorch and")
        print("oneDNN), in the same repetitions as the runs above; ours is the same binary, built against Debian's")
        print("LibTorch. The ratio is per repetition, as above.\n")
        print(f"| model (batch/rank) | np | PyTorch {torch_version} | PyTorch {torch2_version} | ours, mpi | "
              f"ours mpi / PyTorch {torch2_version} |")
        print("|---|---:|---:|---:|---:|---:|")
        verdicts2 = []
        for model in models:
            for n in sizes:
                if (model, n, PEER2) not in ms:
                    continue
                ratio, lo, hi = paired(model, n, "ours-mpi", PEER2)
                print(f"| {model} | {n} | {ms[(model, n, PEER)]:.2f} ms | {ms[(model, n, PEER2)]:.2f} ms | "
                      f"{ms[(model, n, 'ours-mpi')]:.2f} ms | **{ratio:.2f}×** ({lo:.2f}–{hi:.2f}) |")
                if n == 2:
                    verdicts2.append((model, n, ratio))
        print()
        print_verdicts(f"PyTorch {torch2_version}'s step time on the MLP at np 2", verdicts2)
    grads = ", ".join(f"{m} {p * 4 / 1e6:.1f} MB" for m, p in sorted(params.items(), key=lambda i: (i[0] != "mlp", i[0])))
    print("Reading the results. Both sides run the same ATen kernels for forward, backward and SGD;")
    print("what a DDP implementation controls is the gradient communication, its overlap with backward")
    print("and the per-step overhead around the kernels, so the ratio is bounded by the share of the step")
    print(f"they take (gradients per step, float32: {grads}). A step that is mostly convolution kernels on")
    print("a CPU leaves a DDP little to take off; the GPU case (NCCL, ms-scale kernels) is where that share,")
    print("and so the target, matters most.\n")

    print("### Weak scaling efficiency\n")
    print("Per-rank batch fixed, so the ideal is a constant step time: efficiency(np) = step(1) / step(np).")
    print(f"This machine has {os.cpu_count()} cores: at np=4 ranks share cores, so every implementation")
    print("loses about half by oversubscription alone; compare the columns, not the absolute values.\n")
    print(f"| model | np | " + " | ".join(label for _, label in IMPLS) + " |")
    print("|---|---:|" + "---:|" * len(IMPLS))
    scaling = []
    for model in models:
        for n in sizes:
            if n == 1:
                continue
            effs = {impl: ms[(model, 1, impl)] / ms[(model, n, impl)] for impl, _ in IMPLS if (model, n, impl) in ms}
            print(f"| {model} | {n} | " + " | ".join(f"{effs[impl]:.0%}" for impl, _ in IMPLS) + " |")
            scaling.append((model, n, effs["ours-mpi"], effs[PEER]))
    print()
    print("Target: our scaling efficiency at least PyTorch's.\n")
    for model, n, ours, peer in scaling:
        print(f"- {model} np={n}: ours {ours:.0%} vs PyTorch {peer:.0%} — {'met' if ours >= peer else 'missed'}")
    print()

    step = ms[("mlp (32)", 1, "ours-mpi")]
    print("### Step timer overhead\n")
    print("`bench/step_timer_overhead`: a step as `train` times it (five phases, three bucket")
    print("collectives, the loss), formatted with nlohmann/json and written when the step ends (one write,")
    print("so a crashed rank loses only the step under way), with the progress file rewritten at each phase.\n")
    print("| | µs per step | share of the MLP np=1 step |")
    print("|---|---:|---:|")
    for key, label in (("us_per_step_silent", "measuring only"),
                       ("us_per_step_writing", "measuring + writing the JSONL and the progress file")):
        print(f"| {label} | {timer[key]:.2f} | {timer[key] / (step * 1000):.3%} |")
    print(f"\n{timer['bytes_per_step']:.0f} bytes per step. Target ≤ 1 % of step time: "
          f"{'met' if timer['us_per_step_writing'] / (step * 1000) <= 0.01 else 'missed'} on the smallest step measured here ({step:.2f} ms).")


if __name__ == "__main__":
    main()
