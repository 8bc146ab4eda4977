"""Benchmark driver: anjana 1.2.3's k-anonymity (greedy, on pycanon) on adult-arx.

python anjana_anonymize.py FOLDER --k 5 --suppression 0.01
"""

from __future__ import annotations

import argparse
import contextlib
import io
import time
from pathlib import Path

import pycanon.anonymity
from _anon import hierarchy_rows, precision, quasi_identifiers, read_adult, report
from anjana.anonymity import k_anonymity_inner


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--suppression", type=float, default=0.0)
    args = parser.parse_args()
    frame = read_adult(args.folder)
    qis = quasi_identifiers(frame)
    hierarchies, heights = {}, {}
    for column in qis:
        rows = hierarchy_rows(args.folder, column)
        heights[column] = len(rows[0]) - 1
        hierarchies[column] = {level: [row[level] for row in rows] for level in range(len(rows[0]))}
    started = time.perf_counter()
    with contextlib.redirect_stdout(io.StringIO()):
        data, suppressed, levels = k_anonymity_inner(
            frame, [], qis, args.k, 100 * args.suppression, hierarchies
        )
    seconds = time.perf_counter() - started
    k = int(pycanon.anonymity.k_anonymity(data, qis)) if len(data) else 0
    report(
        {
            "seconds": seconds,
            "loss": precision(levels, heights, len(frame), suppressed) if len(data) else None,
            "suppressed": int(suppressed),
            "levels": {c: int(v) for c, v in levels.items()},
            "k": k,
        }
    )


if __name__ == "__main__":
    main()
