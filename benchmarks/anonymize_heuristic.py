"""The heuristic lattice search against the exact optimum, and on a lattice past its reach.

For each case the problem is built once; the exact search (where the lattice has at most
20 million transformations) and the heuristic search with a budget of 1 s and of 9 s (so that
it ends under 10 s) are run on it; the table prints the scores, how far the heuristic lies
above the optimum, whether it proved its result, its reported gap to a proven lower bound,
and CPU seconds; then the same 9 s with the genetic exploration.  Cases:

* ``adult-arx``: ARX's Adult (30,162 records) with ARX's hierarchies, 8 quasi-identifiers;
  k in 5, 10, 50 at 0%, 1%, 5% suppression, precision and loss; and k = 5 with l = 2.
* ``adult-uci``: UCI Adult (32,561 records) with its 14 attributes as quasi-identifiers under
  ``auto`` hierarchies: 6,451,200 transformations.
* ``compas``: ProPublica's COMPAS table (7,214 records) under ``auto`` and ``dates``
  hierarchies: 9 quasi-identifiers (51,200 transformations), 12 (3,686,400) and 15
  (1,083,801,600: heuristic only).
* ARX's Lightning (when built: ``benchmarks/peers/setup_arx.sh``) on the lattices past the
  exact search's reach, with the same records, hierarchies, k, limit and time budget.

    .venv/bin/python benchmarks/anonymize_heuristic.py [--quick] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from safeshare.anonymize.anonymizer import Anonymizer
from safeshare.anonymize.heuristic import heuristic_search
from safeshare.anonymize.models import KAnonymity
from safeshare.anonymize.problem import Problem
from safeshare.anonymize.search import optimal_search

sys.path.insert(0, str(Path(__file__).resolve().parent))
from anonymize_arx import ARX, write_arx_hierarchy
from release_raw_tables import compas_csv

SHARED = Path(os.environ.get("SAFESHARE_SHARED", Path(__file__).resolve().parents[2] / "shared"))
EXACT_LIMIT = 20_000_000
LONG = 9.0  # seconds: the long budget, so that the search ends under 10 s
ADULT_NAMES = [
    *("age", "workclass", "fnlwgt", "education", "education-num", "marital-status"),
    *("occupation", "relationship", "race", "sex", "capital-gain", "capital-loss"),
    *("hours-per-week", "native-country", "salary"),
]
COMPAS_QIS = {
    **{"sex": "auto", "age": "auto", "race": "auto", "dob": "dates"},
    **{"juv_fel_count": "auto", "juv_misd_count": "auto", "juv_other_count": "auto"},
    **{"priors_count": "auto", "c_charge_degree": "auto", "compas_screening_date": "dates"},
    **{"decile_score": "auto", "c_days_from_compas": "auto", "days_b_screening_arrest": "auto"},
    **{"start": "auto", "end": "auto"},
}


def problem(frame: pd.DataFrame, qis: dict[str, Any], privacy: dict, limit: float) -> Problem:
    config = {
        "quasi_identifiers": qis,
        "sensitive": [c for c in ("salary-class",) if "l_diversity" in privacy],
        "privacy": privacy,
        "suppression_limit": limit,
    }
    return Anonymizer(config).prepare(frame, None).problem


def cases(quick: bool) -> Iterator[tuple[str, Problem, str]]:
    folder = SHARED / "datasets" / "adult-arx"
    adult = pd.read_csv(folder / "adult.csv", sep=";", dtype=str)
    arx = {
        c: {"hierarchy": str(folder / f"adult_hierarchy_{c}.csv")}
        for c in adult.columns
        if c != "salary-class"
    }
    grid = [(5, 0.01)] if quick else [(k, s) for k in (5, 10, 50) for s in (0.0, 0.01, 0.05)]
    for k, limit in grid:
        built = problem(adult, arx, {"k": k}, limit)
        for metric in ("precision", "loss"):
            yield f"adult-arx 8 QIs k={k} {limit:.0%}", built, metric
    l_div = {"k": 5, "l_diversity": {"attribute": "salary-class", "l": 2}}
    yield "adult-arx 8 QIs k=5 l=2 1%", problem(adult, arx, l_div, 0.01), "precision"

    uci = pd.read_csv(
        SHARED / "datasets" / "adult-uci" / "adult.data",
        header=None,
        names=ADULT_NAMES,
        skipinitialspace=True,
        dtype=str,
    )
    auto = {c: {"hierarchy": "auto"} for c in ADULT_NAMES[:-1]}
    built = problem(uci, auto, {"k": 5}, 0.01)
    for metric in ("precision",) if quick else ("precision", "loss"):
        yield "adult-uci 14 QIs k=5 1%", built, metric

    with tempfile.TemporaryDirectory() as tmp:
        compas = pd.read_csv(compas_csv(Path(tmp)), dtype=str)
    specs = {c: {"hierarchy": h} for c, h in COMPAS_QIS.items()}
    for width in (9, 12, 15):
        qis = dict(list(specs.items())[:width])
        for k in (5,) if quick else (5, 10):
            built = problem(compas, qis, {"k": k}, 0.01)
            for metric in ("precision", "loss"):
                yield f"compas {width} QIs k={k} 1%", built, metric


def arx_lightning(name: str, built: Problem, seconds: float) -> tuple[float, str] | None:
    """ARX's Lightning (best-effort bottom-up) on the same records, hierarchies, k and limit,
    within ``seconds``: its best precision and transformation (None: ARX is not built)."""
    classpath = ARX / "classpath.txt"
    if not classpath.is_file():
        return None
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        rows = np.repeat(np.arange(len(built.weights)), built.weights)
        frame = pd.DataFrame(
            {h.column: np.asarray(h.values, dtype=object)[codes[rows]]
             for h, codes in zip(built.hierarchies, built.codes, strict=True)}
        )  # fmt: skip
        frame.to_csv(folder / "data.csv", sep=";", index=False)
        specs = []
        for h in built.hierarchies:
            write_arx_hierarchy(h, folder / f"{len(specs)}.csv")
            specs.append(f"{h.column}={folder / f'{len(specs)}.csv'}")
        k = next(m.k for m in built.models if isinstance(m, KAnonymity))
        line = [name, str(folder / "data.csv"), ",".join(specs), "-", "-", f"k={k}"]
        line += [str(built.suppression_limit), "lightning", str(int(seconds * 1000)), "0", "1"]
        (folder / "cases.tsv").write_text("\t".join(line) + "\n", encoding="utf-8")
        done = subprocess.run(
            ["java", "-Xmx8g", "-cp", classpath.read_text().strip(), "ArxAnonymize",
             str(folder / "cases.tsv")],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        fields = done.stdout.split("\t")
        return float(fields[5]), fields[4]


def timed(run: Any, *args: Any, **options: Any) -> tuple[Any, float]:
    started = time.process_time()
    out = run(*args, **options)
    return out, time.process_time() - started


def above(score: float, exact: float | None) -> str:
    """How far ``score`` lies above the exact optimum, in percent."""
    if exact is None:
        return "-"
    return f"{(score - exact) / exact:+.2%}" if exact else f"{score:+.4f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one case per dataset")
    parser.add_argument(
        "--out", type=Path, default=Path("benchmarks/results/anonymize_heuristic.json")
    )
    args = parser.parse_args()
    rows = []
    header = (
        f"{'case':<30} {'metric':<9} {'lattice':>13} {'exact':>8} {'cpu s':>6} "
        f"{'1 s':>8} {'above':>7} {'gap':>7} {'9 s':>8} {'above':>7} {'gap':>7} {'proven':>6} "
        f"{'cpu s':>6} {'wall':>6} {'genetic':>8} {'gap':>7}"
    )
    print(header)
    for name, built, metric in cases(args.quick):
        exact, exact_cpu = None, None
        if built.lattice.size <= EXACT_LIMIT:
            found, exact_cpu = timed(optimal_search, built, metric)
            exact = found.score
        short, _ = timed(heuristic_search, built, metric, seconds=1.0)
        started = time.perf_counter()
        long, long_cpu = timed(heuristic_search, built, metric, seconds=LONG)
        long_wall = time.perf_counter() - started
        bred = heuristic_search(built, metric, seconds=LONG, genetic=True)

        row = {
            "case": name,
            "metric": metric,
            "lattice": built.lattice.size,
            "exact": exact,
            "exact_cpu_s": exact_cpu,
            "heuristic_1s": short.score,
            "gap_1s": short.gap,
            "heuristic_9s": long.score,
            "gap_9s": long.gap,
            "proven_9s": long.bound is None,
            "heuristic_9s_cpu_s": long_cpu,
            "heuristic_9s_wall_s": long_wall,
            "genetic_9s": bred.score,
            "genetic_gap_9s": bred.gap,
        }
        if built.lattice.size > EXACT_LIMIT and metric == "precision":
            arx = arx_lightning(name, built, LONG)
            if arx is not None:
                row["arx_lightning_9s"], row["arx_lightning_node"] = arx
                print(f"  ARX Lightning within {LONG:g} s: {arx[0]:.4f} at {arx[1]}", flush=True)
        rows.append(row)
        print(
            f"{name:<30} {metric:<9} {built.lattice.size:>13,} "
            f"{'-' if exact is None else f'{exact:.4f}':>8} "
            f"{'-' if exact_cpu is None else f'{exact_cpu:.1f}':>6} "
            f"{short.score:>8.4f} {above(short.score, exact):>7} {short.gap:>7.4f} "
            f"{long.score:>8.4f} {above(long.score, exact):>7} {long.gap:>7.4f} "
            f"{long.bound is None!s:>6} {long_cpu:>6.1f} {long_wall:>6.1f} "
            f"{bred.score:>8.4f} {bred.gap:>7.4f}",
            flush=True,
        )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows, indent=1) + "\n")
    solved = [r for r in rows if r["exact"] is not None]
    worst = max(
        ((r["heuristic_9s"] - r["exact"]) / r["exact"] for r in solved if r["exact"]), default=0
    )
    print(
        f"\n{len(solved)} cases with the exact optimum: the heuristic within 9 s is at most "
        f"{worst:.2%} above it; {sum(r['proven_9s'] for r in rows)} of {len(rows)} proven"
    )


if __name__ == "__main__":
    main()
