"""Benchmark driver: anonypy 0.2.1's Mondrian k-anonymity on adult-arx (no hierarchies).

    python anonypy_anonymize.py FOLDER --k 5

anonypy partitions on the raw values (age as a number, the rest as categories) and releases
ranges and value sets, so ARX's precision does not apply.  The driver reports the normalized
certainty penalty (NCP) instead: per record and QI, a range's width over the column's range, a
set's size minus one over the domain's size minus one, averaged.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import anonypy
from _anon import SENSITIVE, quasi_identifiers, read_adult, report


def _text(value: object) -> str:
    """anonypy releases each generalized value as a one-element list."""
    return str(value[0]) if isinstance(value, list) else str(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--rows", type=int, default=None, help="the first rows only (to try it)")
    args = parser.parse_args()
    frame = read_adult(args.folder)
    if args.rows:
        frame = frame.head(args.rows)
    qis = quasi_identifiers(frame)
    frame["age"] = frame["age"].astype(int)
    for column in [*qis, SENSITIVE]:
        if column != "age":
            frame[column] = frame[column].astype("category")
    started = time.perf_counter()
    rows = anonypy.Preserver(frame, qis, SENSITIVE).anonymize_k_anonymity(k=args.k)
    seconds = time.perf_counter() - started
    span = frame["age"].max() - frame["age"].min()
    domains = {c: frame[c].nunique() for c in qis if c != "age"}
    penalty, records, smallest = 0.0, 0, None
    classes: dict[tuple, int] = {}
    for row in rows:
        count = int(row["count"])
        values = {c: _text(row[c]) for c in qis}
        key = tuple(values[c] for c in qis)
        classes[key] = classes.get(key, 0) + count
        records += count
        for column in qis:
            value = values[column]
            if column == "age":
                low, _, high = value.partition("-")
                width = (float(high) - float(low)) if high else 0.0
                penalty += count * width / span
            else:
                size = len(value.split(","))
                penalty += count * (size - 1) / max(domains[column] - 1, 1)
    smallest = min(classes.values()) if classes else 0
    report(
        {
            "seconds": seconds,
            "ncp": penalty / (records * len(qis)) if records else None,
            "records": records,
            "classes": len(classes),
            "k": smallest,
        }
    )


if __name__ == "__main__":
    main()
