"""One-run canary audit of the byte-level LM's training: non-private vs DP-SGD.

    .venv/bin/python benchmarks/lm_canary_audit.py [--texts 500] [--canaries 1000] \
        [--epochs 40] [--epsilons none,8,3]

Each procedure trains the LM once on the first ``--texts`` SMS texts plus ``--canaries``
digit canaries ("my number is d d d d d d"), each inserted independently with probability
1/2 (:func:`safeshare.train.lm_audit.audit_language_model`), at the same settings except
epsilon, and scores every canary by its log-likelihood.  Printed per procedure: the one-run
epsilon lower bound (95%, delta = 1 / (10 x records), the same for all), the cap that
perfect guesses would give with these canaries, the loss-threshold AUC, exposure in bits,
and wall and CPU time.  One torch thread (the machine is shared); run one epsilon per
invocation to keep each under ten minutes.  ``--users-of N`` makes it user-level: the texts
fall into synthetic users of N, training is user-level DP-SGD, and each canary is a canary
user holding ``--copies`` copies of its text.
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from safeshare.train.language_model import LanguageModelSettings
from safeshare.train.lm_audit import audit_language_model

SHARED = Path(os.environ.get("SAFESHARE_SHARED", Path(__file__).parents[2] / "shared"))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--texts", type=int, default=500)
    parser.add_argument("--canaries", type=int, default=1000)
    parser.add_argument("--digits", type=int, default=6)
    parser.add_argument("--epochs", type=float, default=40.0)
    parser.add_argument("--batch-size", type=int, default=50)
    parser.add_argument("--context", type=int, default=64)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--layers", type=int, default=1)
    parser.add_argument("--epsilons", default="none,8,3")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--users-of",
        type=int,
        default=0,
        help="user-level: texts per (synthetic) user, and canary users of --copies texts",
    )
    parser.add_argument("--copies", type=int, default=4, help="texts of each canary user")
    args = parser.parse_args()
    torch.set_num_threads(1)
    warnings.filterwarnings("ignore", message=".*were cut to it")
    path = SHARED / "datasets" / "text" / "sms_spam_collection.tsv"
    frame = pd.read_csv(path, sep="\t", header=None, names=["label", "text"], quoting=3)
    texts = [str(t) for t in frame["text"]][: args.texts]
    settings = LanguageModelSettings(
        context=args.context,
        width=args.width,
        layers=args.layers,
        heads=2,
        epochs=args.epochs,
        batch_size=args.batch_size,
    )
    users = None
    if args.users_of > 0:  # consecutive texts grouped into users, in a seeded random order
        order = np.random.default_rng(args.seed + 1).permutation(len(texts))
        users = order // args.users_of
        print(f"user-level: users of {args.users_of} texts, canary users of {args.copies} copies")
    print(f"{len(texts)} SMS texts + {args.canaries} canaries ({args.digits} digits); {settings}")
    for name in args.epsilons.split(","):
        epsilon = None if name == "none" else float(name)
        wall, cpu = time.perf_counter(), time.process_time()
        result = audit_language_model(
            texts,
            epsilon,
            settings,
            canaries=args.canaries,
            digits=args.digits,
            rng=np.random.default_rng(args.seed),
            users=users,
            copies=args.copies,
        )
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        bound = result.audit
        print(
            f"== epsilon {name}: bound {bound.epsilon:.3f} (cap {result.cap:.3f} for "
            f"{result.inserted} in / {args.canaries - result.inserted} out, delta "
            f"{bound.delta:.2g}; {bound.correct} of {bound.guesses} guesses right), AUC "
            f"{result.membership.auc:.3f}, exposure {result.exposure.inserted_mean:.2f} vs "
            f"{result.exposure.held_out_mean:.2f} bits; {wall:.0f} s wall, {cpu:.0f} CPU s"
        )
        for line in result.readings():
            print("  ", line)


if __name__ == "__main__":
    main()
