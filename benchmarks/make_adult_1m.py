"""Make a large Adult-like table: adult-arx rows resampled with perturbation.

    .venv/bin/python benchmarks/make_adult_1m.py --rows 1000000 --out benchmarks/results/adult_1m.csv

Each row is a uniformly drawn adult-arx record with ``age`` moved by an integer in [-2, 2]
(kept in 17..90) and, with probability 5% each, ``race``, ``marital-status``, ``education``,
``native-country``, ``workclass`` and ``occupation`` replaced by a value drawn from that
column's distribution; ``sex`` and ``salary-class`` are kept.  Every value stays covered by
the ARX hierarchies.  The output is ``;``-separated like adult.csv.  Deterministic for a seed.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
PERTURBED = ("race", "marital-status", "education", "native-country", "workclass", "occupation")
SWAP = 0.05


def shared() -> Path | None:
    base = os.environ.get("SAFESHARE_SHARED")
    candidate = Path(base) if base else REPO.parent / "shared"
    folder = candidate / "datasets" / "adult-arx"
    return folder if folder.is_dir() else None


def make(rows: int, seed: int, source: Path) -> pd.DataFrame:
    adult = pd.read_csv(source / "adult.csv", sep=";", dtype=str)
    rng = np.random.default_rng(seed)
    out = adult.iloc[rng.integers(0, len(adult), rows)].reset_index(drop=True)
    age = out["age"].astype(int).to_numpy() + rng.integers(-2, 3, rows)
    out["age"] = np.clip(age, 17, 90).astype(str)
    for column in PERTURBED:
        swap = rng.random(rows) < SWAP
        donors = adult[column].to_numpy()[rng.integers(0, len(adult), int(swap.sum()))]
        values = out[column].to_numpy(dtype=object)
        values[swap] = donors
        out[column] = values
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/adult_1m.csv")
    args = parser.parse_args()
    source = shared()
    if source is None:
        print("needs ../shared/datasets/adult-arx (or $SAFESHARE_SHARED); nothing made")
        return
    frame = make(args.rows, args.seed, source)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(args.out, sep=";", index=False)
    print(f"wrote {len(frame):,} rows to {args.out}")


if __name__ == "__main__":
    main()
