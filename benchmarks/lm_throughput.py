"""DP-SGD vs non-DP training throughput of the byte-level language model, CPU or GPU.

    python benchmarks/lm_throughput.py [--device auto] [--steps 60] [--repeats 3]
        [--width 256] [--layers 4] [--heads 4] [--context 128] [--batch-size 256]
        [--modes nondp,dp,opacus] [--threads 1] [--json out.json]

Each run is a fresh process that trains the same network (GPT-style, byte vocabulary,
``safeshare.train.language_model``) on the SMS collection's texts for the same expected
number of steps at the same (expected) batch size:

* ``nondp``: ``train_language_model(epsilon=None)``: shuffled batches, no clipping, no noise;
* ``dp``: ``train_language_model(epsilon=8)``: Poisson sampling, Opacus's ghost clipping of
  each text's whole gradient, noise (RDP calibration, under a second, inside the timing);
* ``opacus``: the peer: the same network made private by Opacus's ``PrivacyEngine`` as its
  tutorials do (its DP data loader collating records, ghost clipping, the same noise
  multiplier), timed on the same steps.

Before the timing each process trains a few steps (CUDA's context and kernels, allocator).
The time is the whole training call (the model is handed back on the CPU, which waits for
the GPU).  Runs are interleaved (nondp, dp, opacus, nondp, ...) so load changes hit every
mode alike.  Printed: median seconds, steps/s, tokens/s (the texts' bytes, padding
excluded) and the DP / non-DP ratio with its per-round range.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

SHARED = Path(os.environ.get("SAFESHARE_SHARED", Path(__file__).resolve().parents[2] / "shared"))
SMS = SHARED / "datasets" / "text" / "sms_spam_collection.tsv"

CHILD = """
import json, math, sys, time, warnings
import pandas as pd, torch
mode, device, threads, steps, path = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
width, layers, heads, context, batch = (int(v) for v in sys.argv[6:11])
torch.set_num_threads(threads)
warnings.filterwarnings("ignore")
from safeshare.train.accounting import calibrate_noise
from safeshare.train.device import describe_device, resolve_device
from safeshare.train.language_model import (
    LanguageModelSettings, build_network, sequences, train_language_model,
)
texts = pd.read_csv(path, sep="\\t", header=None, names=["label", "text"], quoting=3)["text"]
texts = [str(t) for t in texts]
place = resolve_device(device)
tokens = sum(min(len(t.encode("utf-8")), context) for t in texts)

def settings(run_steps):
    return LanguageModelSettings(context=context, width=width, layers=layers, heads=heads,
        epochs=run_steps * batch / len(texts), batch_size=batch, accountant="rdp")

def ours(run_steps, epsilon):
    train_language_model(texts, epsilon=epsilon, settings=settings(run_steps), seed=0,
                         device=place)

def opacus(run_steps):
    from opacus import PrivacyEngine
    s = settings(run_steps)
    q = batch / len(texts)
    sigma = calibrate_noise(8.0, 1 / (10 * len(texts)), q, run_steps, accountant="rdp")
    generator = torch.Generator().manual_seed(0)
    module = build_network(s, generator).to(place)
    ids, labels, _ = sequences(texts, context)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(ids, labels),
                                         batch_size=batch)
    engine = PrivacyEngine()
    model, optimizer, criterion, loader = engine.make_private(
        module=module, optimizer=torch.optim.Adam(module.parameters(), lr=s.learning_rate),
        criterion=torch.nn.CrossEntropyLoss(ignore_index=-100), data_loader=loader,
        noise_multiplier=sigma, max_grad_norm=1.0, poisson_sampling=True,
        grad_sample_mode="ghost")
    model.train()
    taken = 0
    while taken < run_steps:
        for x, y in loader:
            if taken == run_steps:
                break
            x, y = x.to(place), y.to(place)
            optimizer.zero_grad()
            out = model(x)
            loss = criterion(out.flatten(0, 1), y.flatten(), shape=out.shape)
            loss.backward()
            optimizer.step()
            taken += 1
    module.to("cpu")

def run(run_steps):
    if mode == "opacus":
        opacus(run_steps)
    else:
        ours(run_steps, None if mode == "nondp" else 8.0)

run(3)  # warm-up: CUDA context and kernels, the allocator, imports
start, cpu = time.perf_counter(), time.process_time()
run(steps)
seconds = time.perf_counter() - start
print(json.dumps({"seconds": seconds, "cpu": time.process_time() - cpu,
                  "device": describe_device(place),
                  "tokens": tokens * steps * batch / len(texts)}))
"""


def run(mode: str, args: argparse.Namespace) -> dict[str, float | str]:
    """One timed training call in a fresh process."""
    shape = [args.width, args.layers, args.heads, args.context, args.batch_size]
    done = subprocess.run(
        [sys.executable, "-c", CHILD, mode, args.device, str(args.threads), str(args.steps)]
        + [str(SMS)]
        + [str(v) for v in shape],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode:
        sys.exit(f"the {mode} run failed:\n{done.stderr[-3000:]}")
    measured: dict[str, float | str] = json.loads(done.stdout.strip().splitlines()[-1])
    return measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--device", default="auto", help="auto, cpu, cuda or cuda:N")
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--context", type=int, default=128)
    parser.add_argument("--batch-size", type=int, default=256)
    parser.add_argument("--modes", default="nondp,dp,opacus")
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads per run")
    parser.add_argument("--json", type=Path, help="write every run and the summary here")
    args = parser.parse_args()
    if not SMS.is_file():
        print(f"no SMS collection at {SMS} (set SAFESHARE_SHARED); nothing measured")
        return
    modes = [m.strip() for m in args.modes.split(",") if m.strip()]
    unknown = sorted(set(modes) - {"nondp", "dp", "opacus"})
    if unknown or "nondp" not in modes:
        sys.exit(f"--modes takes nondp (required), dp and opacus; got {args.modes!r}")
    runs: dict[str, list[dict[str, float | str]]] = {m: [] for m in modes}
    for round_ in range(args.repeats):
        for mode in modes:
            runs[mode].append(run(mode, args))
            last = runs[mode][-1]
            print(f"round {round_ + 1} {mode:>6}: {float(last['seconds']):.2f} s", flush=True)
    device = str(runs["nondp"][0]["device"])
    print(
        f"\nbyte-level LM, width {args.width}, {args.layers} block(s), {args.heads} heads, "
        f"context {args.context}, expected batch {args.batch_size}, {args.steps} steps, "
        f"on {device} ({args.threads} CPU thread(s))"
    )
    summary: dict[str, dict[str, float]] = {}
    base = [float(r["seconds"]) for r in runs["nondp"]]
    for mode in modes:
        seconds = [float(r["seconds"]) for r in runs[mode]]
        median = statistics.median(seconds)
        tokens = float(runs[mode][0]["tokens"])
        ratios = sorted(s / b for s, b in zip(seconds, base, strict=True))
        summary[mode] = {
            "median_seconds": median,
            "steps_per_second": args.steps / median,
            "tokens_per_second": tokens / median,
            "ratio_to_nondp": median / statistics.median(base),
        }
        line = (
            f"{mode:>6}: median {median:.2f} s  {args.steps / median:.2f} steps/s  "
            f"{tokens / median:,.0f} tokens/s"
        )
        if mode != "nondp":
            line += (
                f"  / non-DP {summary[mode]['ratio_to_nondp']:.2f} "
                f"(per round {ratios[0]:.2f}-{ratios[-1]:.2f})"
            )
        print(line)
    if "dp" in summary and "opacus" in summary:
        ours, peer = summary["dp"]["median_seconds"], summary["opacus"]["median_seconds"]
        print(f"safeshare DP / Opacus's own loop: {ours / peer:.2f}")
    if args.json:
        record = {"args": vars(args) | {"json": str(args.json)}, "device": device}
        args.json.write_text(json.dumps(record | {"runs": runs, "summary": summary}, indent=2))


if __name__ == "__main__":
    main()
