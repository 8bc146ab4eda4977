"""Benchmark driver: pycanon's k, l and t of an anonymized adult-arx table (a cross-check).

python pycanon_check.py ANONYMIZED.csv
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import pandas as pd
import pycanon.anonymity
from _anon import SENSITIVE, report

QUASI_IDENTIFIERS = [
    "sex",
    "age",
    "race",
    "marital-status",
    "education",
    "native-country",
    "workclass",
    "occupation",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("anonymized", type=Path)
    args = parser.parse_args()
    frame = pd.read_csv(args.anonymized, dtype=str)
    started = time.perf_counter()
    k = pycanon.anonymity.k_anonymity(frame, QUASI_IDENTIFIERS)
    diversity = pycanon.anonymity.l_diversity(frame, QUASI_IDENTIFIERS, [SENSITIVE])
    closeness = pycanon.anonymity.t_closeness(frame, QUASI_IDENTIFIERS, [SENSITIVE])
    report(
        {
            "seconds": time.perf_counter() - started,
            "k": int(k),
            "l": int(diversity),
            "t": float(closeness),
            "records": len(frame),
        }
    )


if __name__ == "__main__":
    main()
