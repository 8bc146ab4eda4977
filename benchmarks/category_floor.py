"""The least 1-way TVD a release can reach on a column whose rare categories are folded.

A release without a schema learns a column's categories by DP discovery: a category whose
noisy count falls below the threshold ``tau`` becomes ``(other)``.  Folding the *real* data
at ``tau`` (no noise, no synthesis) gives the floor of that column's 1-way total-variation
distance in the scorer's terms (a decoded ``(other)`` matches no real value):

    .venv/bin/python benchmarks/category_floor.py ../shared/datasets/adult-uci/adult.data \\
        --column 13 --thresholds 600 400 100 50 20

``--column`` is a name, or a 0-based position for a file without a header.
"""

from __future__ import annotations

import argparse

import pandas as pd


def folded_tvd(values: pd.Series, threshold: int) -> float:
    """TVD between a column and the same column with categories under ``threshold`` folded."""
    counts = values.value_counts()
    kept = counts[counts >= threshold]
    # the folded records land on '(other)', a value the real column never holds
    return float(counts[counts < threshold].sum()) / float(counts.sum()) if len(kept) else 1.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("data")
    parser.add_argument("--column", required=True)
    parser.add_argument("--thresholds", type=int, nargs="+", default=[600, 400, 100, 50, 20])
    args = parser.parse_args()
    position = int(args.column) if args.column.isdigit() else None
    frame = pd.read_csv(
        args.data, header=None if position is not None else 0, dtype=str, skipinitialspace=True
    )
    values = frame.iloc[:, position] if position is not None else frame[args.column]
    values = values.dropna()
    print(f"{len(values):,} values, {values.nunique()} categories")
    for threshold in args.thresholds:
        print(f"tau {threshold:5d}: 1-way TVD floor {folded_tvd(values, threshold):.3f}")


if __name__ == "__main__":
    main()
