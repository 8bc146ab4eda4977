"""Memorization of the byte-level LM on SMS texts: non-private vs DP-SGD, extraction + exposure.

    .venv/bin/python benchmarks/lm_memorization.py [--texts 200] [--epochs 100]

Trains on the first ``--texts`` SMS texts plus 10 inserted canaries ("my number is d d d d",
10 more never inserted), then reports prefix(16) -> suffix(16) extraction on training texts
against as many held-out ones, and each group's mean canary exposure (exact ranks, 10^4
candidates).  One thread (the machine is shared).
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from safeshare.train.extraction import canary_exposure, extraction_rates, make_digit_canaries
from safeshare.train.language_model import LanguageModelSettings, train_language_model

SHARED = Path(os.environ.get("SAFESHARE_SHARED", Path(__file__).parents[2] / "shared"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=200)
    parser.add_argument("--epochs", type=float, default=100.0)
    parser.add_argument("--epsilons", default="none,8,3")
    args = parser.parse_args()
    torch.set_num_threads(1)
    path = SHARED / "datasets" / "text" / "sms_spam_collection.tsv"
    frame = pd.read_csv(path, sep="\t", header=None, names=["label", "text"], quoting=3)
    texts = [str(t) for t in frame["text"]]
    members, held_out = texts[: args.texts], texts[args.texts : 2 * args.texts]
    canaries = make_digit_canaries(10, 10, digits=4, rng=np.random.default_rng(0))
    for name in args.epsilons.split(","):
        epsilon = None if name == "none" else float(name)
        settings = LanguageModelSettings(
            context=64, width=64, layers=2, heads=2, epochs=args.epochs, batch_size=50
        )
        start = time.process_time()
        model = train_language_model(
            members + canaries.training_texts(), epsilon=epsilon, settings=settings, seed=1
        )
        seconds = time.process_time() - start
        extraction = extraction_rates(model, members, held_out, prefix=16, suffix=16)
        exposure = canary_exposure(model, canaries, rng=np.random.default_rng(2))
        loss_in = float(np.mean(model.losses(members)))
        loss_out = float(np.mean(model.losses(held_out)))
        print(f"== epsilon {name}: {model.card['privacy']['guarantee']}, {seconds:.0f} CPU s")
        print(f"   nats/byte: train {loss_in:.3f}, held-out {loss_out:.3f}")
        for line in extraction.readings() + exposure.readings():
            print("  ", line)


if __name__ == "__main__":
    main()
