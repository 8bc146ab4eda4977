"""Counts on a large Adult-like Parquet table: numpy, DuckDB and Spark (local[2]) side by side.

    .venv/bin/python benchmarks/make_adult_large.py --rows 10000000 --out benchmarks/results/adult_10m.parquet
    .venv/bin/python benchmarks/engines_counts.py --data benchmarks/results/adult_10m.parquet

Each engine opens the file, encodes it against one public domain (every category of
adult-arx, ages 17-90 in bins of 5) and counts every 1-way and 2-way marginal and the
class sizes over all columns.  The counts must be identical across engines.  Printed per
engine: wall time of open + encode + count, and for Spark the share of that time spent
inside Spark jobs (the rest is the driver: planning, arrays, Python).
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

from safeshare.data import Column, Domain, Kind, Table  # noqa: E402
from safeshare.data.readers import read_frame  # noqa: E402

CATEGORIES = ("sex", "race", "marital-status", "education", "native-country", "workclass",
              "occupation", "salary-class")  # fmt: skip


def domain_of(adult_csv: Path) -> Domain:
    """A public domain: adult-arx's categories (read from the public reference file), age bins."""
    import pandas as pd

    reference = pd.read_csv(adult_csv, sep=";", dtype=str)
    columns = [
        Column(c, Kind.CATEGORICAL, categories=tuple(sorted(reference[c].dropna().unique())))
        for c in CATEGORIES
    ]
    columns.append(
        Column("age", Kind.NUMERIC, edges=tuple(float(e) for e in range(17, 92, 5)), integer=True)
    )
    return Domain(tuple(columns))


def count_all(engine: Any, table: Any, names: list[str]) -> list[np.ndarray]:
    sets = [[n] for n in names] + [list(p) for p in itertools.combinations(names, 2)]
    counts = engine.counts_many(table, sets)
    counts.append(np.sort(engine.group_sizes(table, names)))
    return counts


def timed(work: Callable[[], Any]) -> tuple[Any, float]:
    started = time.perf_counter()
    result = work()
    return result, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO / "benchmarks/results/adult_10m.parquet")
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "datasets")
    parser.add_argument("--skip-numpy", action="store_true")
    args = parser.parse_args()
    if not args.data.exists():
        print(f"{args.data} is missing; make it with benchmarks/make_adult_large.py")
        return 0
    domain = domain_of(args.shared / "adult-arx" / "adult.csv")
    names = list(domain.names)
    results: dict[str, list[np.ndarray]] = {}

    if not args.skip_numpy:
        from safeshare.engine import NumpyEngine

        def with_numpy() -> list[np.ndarray]:
            table, _ = Table.from_frame(read_frame(args.data), domain)
            return count_all(NumpyEngine(), table, names)

        results["numpy"], wall = timed(with_numpy)
        print(f"numpy   {wall:8.1f} s  (pandas read + encode + counts)", flush=True)

    from safeshare.engine.duckdb_engine import DuckDBEngine

    def with_duckdb() -> list[np.ndarray]:
        with DuckDBEngine(memory_limit="2GB") as engine:
            encoded = engine.open(args.data).encode(domain, holdout="FALSE")
            return count_all(engine, encoded.train, names)

    results["duckdb"], wall = timed(with_duckdb)
    print(f"duckdb  {wall:8.1f} s", flush=True)

    from safeshare.engine.spark_engine import SparkEngine

    inside = [0.0]
    original = SparkEngine.run

    def run(self: SparkEngine, step: str, work: Callable[[], Any], **options: Any) -> Any:
        started = time.perf_counter()
        try:
            return original(self, step, work, **options)
        finally:
            inside[0] += time.perf_counter() - started

    SparkEngine.run = run  # type: ignore[method-assign]  # measuring only

    def with_spark() -> list[np.ndarray]:
        with SparkEngine("local[2]", **{"spark.sql.shuffle.partitions": "8"}) as engine:
            encoded = engine.open(args.data).encode(domain, holdout="FALSE")
            return count_all(engine, encoded.train, names)

    results["spark"], wall = timed(with_spark)
    share = inside[0] / wall
    print(
        f"spark   {wall:8.1f} s  ({share:.0%} inside Spark jobs, {1 - share:.0%} driver)",
        flush=True,
    )

    base = results["duckdb"]
    for label, counts in results.items():
        same = len(counts) == len(base) and all(
            np.array_equal(a, b) for a, b in zip(counts, base, strict=True)
        )
        print(f"{label:<7} counts identical to duckdb's: {'yes' if same else 'NO'}")
    print(f"{len(base) - 1} marginals and the class sizes over {len(names)} columns; "
          f"{int(base[0].sum()):,} rows")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
