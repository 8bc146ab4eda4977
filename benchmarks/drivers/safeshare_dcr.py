"""Benchmark driver: safeshare's distance to closest record for 100,000 x 100,000 mixed-type rows.

Both tables are drawn from UCI Adult (15 columns: 6 numeric, 9 categorical) with replacement,
their numeric values jittered (age and hours by a few units, fnlwgt by about 5%) so that rows
are not repeated copies; the release is drawn independently of the reference, like a
synthetic table (``--release marginals`` shuffles each of its columns independently: a poor
generator whose rows sit far from every reference row, the hard case for the search).  One
domain is read from the reference (numeric columns: one bin per integer up to 256 values, else
256 equal-width bins), both are encoded, then the DCR of every released row is computed
exactly.

python safeshare_dcr.py ADULT_DATA --rows 100000 --seed 0
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _eval import COLUMNS_A, COLUMNS_B, SECRET, report

from safeshare.data import encode_frame
from safeshare.evaluate.neighbors import nearest_distances
from safeshare.release.evaluation import evaluation_domain

NAMES = [*COLUMNS_A, *COLUMNS_B, SECRET]  # Adult's columns in file order


def draw(adult: pd.DataFrame, rows: int, rng: np.random.Generator) -> pd.DataFrame:
    frame = adult.iloc[rng.integers(0, len(adult), rows)].reset_index(drop=True)
    frame["age"] = np.clip(frame["age"] + rng.integers(-2, 3, rows), 17, 90)
    frame["hours-per-week"] = np.clip(frame["hours-per-week"] + rng.integers(-3, 4, rows), 1, 99)
    frame["fnlwgt"] = np.round(frame["fnlwgt"] * rng.normal(1, 0.05, rows)).clip(10000, None)
    return frame.astype(str)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("adult", type=Path)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--release",
        choices=("resample", "marginals"),
        default="resample",
        help="resample: jittered Adult rows (close neighbours); marginals: every column drawn "
        "independently (a poor generator: far neighbours, the hard case for the search)",
    )
    args = parser.parse_args()
    adult = pd.read_csv(
        args.adult, header=None, names=NAMES, skipinitialspace=True, na_values=["?"]
    )
    rng = np.random.default_rng(args.seed)
    reference, release = draw(adult, args.rows, rng), draw(adult, args.rows, rng)
    if args.release == "marginals":
        release = release.apply(
            lambda c: c.sample(frac=1, random_state=rng.integers(2**31)).to_numpy()
        )
    start = time.perf_counter()
    domain, _ = evaluation_domain(reference, reference)
    train, _ = encode_frame(reference, domain)
    synthetic, _ = encode_frame(release, domain)
    prepare = time.perf_counter() - start
    start = time.perf_counter()
    distances = nearest_distances(synthetic, train)
    seconds = time.perf_counter() - start
    distinct = len(np.unique(synthetic.matrix(), axis=0)), len(np.unique(train.matrix(), axis=0))
    report(
        {
            "dcr_seconds": seconds,
            "prepare_seconds": prepare,
            "rows": args.rows,
            "release": args.release,
            "distinct_release_rows": distinct[0],
            "distinct_reference_rows": distinct[1],
            "mean_dcr": float(distances.mean()),
            "share_zero": float((distances == 0).mean()),
        }
    )


if __name__ == "__main__":
    main()
