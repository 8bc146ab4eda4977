"""Make an Adult-like Parquet table of any size, streamed by DuckDB (memory stays flat).

    .venv/bin/python benchmarks/make_adult_large.py --rows 100000000 --out benchmarks/results/adult_100m.parquet
    .venv/bin/python benchmarks/make_adult_large.py --rows 1000000 --out benchmarks/results/adult_1m.parquet

Row ``i`` copies the adult-arx record ``hash(i) mod n`` with ``age`` moved by an integer
in [-2, 2] (kept in 17..90) and, with probability 5% each, ``race``, ``marital-status``,
``education``, ``native-country``, ``workclass`` and ``occupation`` taken from a donor
record ``hash(i, 7) mod n`` - the same perturbation as ``make_adult_1m.py``, in SQL so
that 100,000,000 rows never sit in memory.  ``age`` is stored as an integer, the rest
as text.  Deterministic (DuckDB's ``hash``), whatever the machine.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from make_adult_1m import PERTURBED, shared

REPO = Path(__file__).resolve().parents[1]
KEPT = ("sex", "salary-class")


def quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def make(rows: int, out: Path, source: Path, memory_limit: str) -> None:
    import duckdb

    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as spill:
        con = duckdb.connect(
            config={
                "memory_limit": memory_limit,
                "temp_directory": spill,
                "preserve_insertion_order": False,
            }
        )
        con.execute(
            "CREATE TABLE adult AS SELECT row_number() OVER () - 1 AS id, * FROM read_csv("
            f"'{source / 'adult.csv'}', delim=';', header=true, all_varchar=true)"
        )
        n = con.execute("SELECT count(*) FROM adult").fetchone()[0]  # type: ignore[index]
        swapped = [
            f"CASE WHEN hash(i, {k + 1}) % 20 = 0 THEN d.{quote(c)} ELSE a.{quote(c)} END AS {quote(c)}"
            for k, c in enumerate(PERTURBED)
        ]
        columns = [
            *(f"a.{quote(c)}" for c in KEPT),
            "CAST(least(90, greatest(17, CAST(a.age AS INTEGER) + CAST(hash(i, 0) % 5 AS INTEGER) - 2))"
            " AS INTEGER) AS age",
            *swapped,
        ]
        con.execute(
            f"COPY (SELECT {', '.join(columns)} FROM range({rows}) t(i) "
            f"JOIN adult a ON a.id = hash(i) % {n} JOIN adult d ON d.id = hash(i, 7) % {n}) "
            f"TO '{out}' (FORMAT parquet, ROW_GROUP_SIZE 1000000)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000_000)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks/results/adult_100m.parquet")
    parser.add_argument("--memory-limit", default="2GB")
    args = parser.parse_args()
    source = shared()
    if source is None:
        print("needs ../shared/datasets/adult-arx (or $SAFESHARE_SHARED); nothing made")
        return 0
    started = time.perf_counter()
    make(args.rows, args.out, source, args.memory_limit)
    size = args.out.stat().st_size / 2**20
    print(
        f"wrote {args.rows:,} rows to {args.out} ({size:,.0f} MiB) in {time.perf_counter() - started:.0f} s"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
