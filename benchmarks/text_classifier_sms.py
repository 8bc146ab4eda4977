"""The DP text classifier on the whole SMS Spam Collection: DP-SGD against the same training
without DP, accuracy on a held-out split.

MiniLM's frozen lower layers run once; the top layer and a head train (``train_text``). A
seeded permutation splits the 5,574 texts into 4,574 to train and 1,000 held out; each
epsilon (``none``: without DP) trains on the same split, then prints accuracy against the
majority class and the CPU seconds of the run (encoding included). One torch thread by
default (the machine's cores may be shared).

    HF_HUB_OFFLINE=1 python benchmarks/text_classifier_sms.py [--epsilons 3,1,none]
        [--held-out 1000] [--epochs 3] [--max-length 32]
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from safeshare.train.text import TextSettings, train_text

SHARED = Path(os.environ.get("SAFESHARE_SHARED", Path(__file__).resolve().parents[2] / "shared"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epsilons", default="3,1,none")
    parser.add_argument("--held-out", type=int, default=1000)
    parser.add_argument("--epochs", type=float, default=3.0)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--max-length", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    path = SHARED / "datasets" / "text" / "sms_spam_collection.tsv"
    frame = pd.read_csv(path, sep="\t", header=None, names=["label", "text"], quoting=3)
    order = np.random.default_rng(0).permutation(len(frame))
    test, train = frame.iloc[order[: args.held_out]], frame.iloc[order[args.held_out :]]
    codes = (train["label"] == "spam").to_numpy().astype(np.int64)
    truth = (test["label"] == "spam").to_numpy().astype(np.int64)
    print(
        f"SMS spam: {len(train)} training texts, {len(test)} held out (majority "
        f"{1 - truth.mean():.4f}); {args.max_length} tokens, {args.epochs:g} epochs, batch "
        f"{args.batch_size}, {args.threads} thread(s)",
        flush=True,
    )
    settings = TextSettings(
        max_length=args.max_length,
        epochs=args.epochs,
        batch_size=args.batch_size,
        learning_rate=1e-2,
    )
    for name in args.epsilons.split(","):
        epsilon = None if name == "none" else float(name)
        start = time.process_time()
        model = train_text(
            train["text"].tolist(),
            codes,
            ["ham", "spam"],
            epsilon=epsilon,
            settings=settings,
            seed=0,
        )
        accuracy = model.accuracy(test["text"].tolist(), truth)
        label = "without DP" if epsilon is None else f"epsilon={epsilon:g}"
        print(
            f"{label:<12} accuracy {accuracy:.4f}  {time.process_time() - start:.0f} CPU s",
            flush=True,
        )


if __name__ == "__main__":
    main()
