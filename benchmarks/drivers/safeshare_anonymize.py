"""Benchmark driver: safeshare's anonymization on adult-arx, timed in-process.

    python safeshare_anonymize.py FOLDER --suppression 0.01 --repeats 31
    python safeshare_anonymize.py FOLDER --big ROWS.csv --k 10 --l 2 --suppression 0.01

The first form loads the data and the hierarchies once, then times ``Anonymizer.fit`` on the
in-memory frame (encoding, search, suppression, output table, quality, the engine's check of
the classes: everything but reading files) after one warm-up run, and reports the median.
The second reads a large CSV and anonymizes it once (k and distinct l on salary-class), timing
the read and the fit.
"""

from __future__ import annotations

import argparse
import resource
import statistics
import time
from pathlib import Path

import pandas as pd
from _anon import SENSITIVE, quasi_identifiers, read_adult, report

from safeshare.anonymize import Anonymizer, Hierarchy


def config(qis: list[str], k: int, l_value: int, suppression: float) -> dict:
    privacy: dict = {"k": k}
    if l_value > 1:
        privacy["l_diversity"] = {"attribute": SENSITIVE, "l": l_value}
    return {
        "quasi_identifiers": {c: {} for c in qis},
        "sensitive": [SENSITIVE],
        "privacy": privacy,
        "suppression_limit": suppression,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", type=Path)
    parser.add_argument("--suppression", type=float, default=0.0)
    parser.add_argument("--repeats", type=int, default=31)
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--l", type=int, default=1, dest="l_value")
    parser.add_argument("--big", type=Path, default=None)
    args = parser.parse_args()
    frame = read_adult(args.folder)
    qis = quasi_identifiers(frame)
    hierarchies = {c: Hierarchy.from_csv(c, args.folder / f"adult_hierarchy_{c}.csv") for c in qis}
    anonymizer = Anonymizer(
        config(qis, args.k, args.l_value, args.suppression), hierarchies=hierarchies
    )
    if args.big is not None:
        started = time.perf_counter()
        big = pd.read_csv(args.big, sep=";", dtype=str)
        read = time.perf_counter() - started
        result = anonymizer.fit(big)
        total = time.perf_counter() - started
        report(
            {
                "rows": len(big),
                "read_s": read,
                "fit_s": total - read,
                "total_s": total,
                "search_s": result.search["seconds"],
                "loss": result.search["score"],
                "suppressed": result.suppressed,
                "levels": result.transformation,
                "achieved": [m.achieved for m in result.models],
                "checked": result.search["transformations_checked"],
                "peak_mb_self": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
        return
    result = anonymizer.fit(frame)  # warm-up
    walls, cpus, searches = [], [], []
    for _ in range(args.repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        result = anonymizer.fit(frame)
        walls.append(time.perf_counter() - wall)
        cpus.append(time.process_time() - cpu)
        searches.append(result.search["seconds"])
    report(
        {
            "median_ms": 1000 * statistics.median(walls),
            "min_ms": 1000 * min(walls),
            "cpu_median_ms": 1000 * statistics.median(cpus),
            "search_median_ms": 1000 * statistics.median(searches),
            "loss": result.search["score"],
            "suppressed": result.suppressed,
            "levels": result.transformation,
            "ties": result.search["ties"],
            "checked": result.search["transformations_checked"],
            "lattice": result.search["lattice_size"],
            "k": result.models[0].achieved["k"],
        }
    )


if __name__ == "__main__":
    main()
