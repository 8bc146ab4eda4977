"""Engines side by side: MST releases of Adult-like Parquet tables by numpy and by DuckDB.

    .venv/bin/python benchmarks/make_adult_large.py --rows 1000000 --out benchmarks/results/adult_1m.parquet
    .venv/bin/python benchmarks/make_adult_large.py --rows 100000000 --out benchmarks/results/adult_100m.parquet
    .venv/bin/python benchmarks/engines_adult.py [--large benchmarks/results/adult_100m.parquet]

Each case is one ``safeshare release FILE --engine E --seed 0`` process (DP domain
discovery, epsilon=1, every record released), measured with ``os.wait4``: wall time,
CPU (user + sys) and peak RSS.  The cases:

- ``numpy 1M``: the in-memory engine on 1,000,000 rows - the per-row reference;
- ``duckdb 1M``: DuckDB on the same file - its release must be byte-identical;
- ``duckdb large``: DuckDB on the large file (100,000,000 rows by default), memory capped.

Goals (the scale-out issue): the large release within 4 GB peak memory, and its wall time
per row no worse than 2x the numpy engine's on 1,000,000 rows.
"""

from __future__ import annotations

import argparse
import filecmp
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _harness import RESULTS, machine, now, print_goals, wait_with_usage, write_json

REPO = Path(__file__).resolve().parents[1]
SAFESHARE = REPO / ".venv" / "bin" / "safeshare"
GOAL_MEMORY_GB = 4.0
GOAL_PER_ROW_RATIO = 2.0


def release(
    path: Path, engine: str, out: Path, memory_limit: str, timeout: float
) -> dict[str, Any]:
    """One release process, measured."""
    command = [
        str(SAFESHARE), "release", str(path), "--out", str(out), "--engine", engine,
        "--memory-limit", memory_limit, "--seed", "0", "--ledger", str(out.parent / f"{out.name}.ledger"),
        "--force", "--quiet",
    ]  # fmt: skip
    log = out.parent / f"{out.name}.log"
    started = time.perf_counter()
    with log.open("wb") as sink:
        proc = subprocess.Popen(command, stdout=sink, stderr=subprocess.STDOUT)
        code, usage, killed = wait_with_usage(proc, timeout)
    run = {
        "wall_s": time.perf_counter() - started,
        "engine": engine,
        "input": str(path),
        "exit": code,
        "killed_for_time": killed,
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_gb": usage.ru_maxrss / 2**20,
    }
    if code != 0:
        run["log"] = log.read_text(errors="replace")[-2000:]
    return run


def rows_of(path: Path) -> int:
    import pyarrow.parquet as pq

    return int(pq.ParquetFile(path).metadata.num_rows)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=Path, default=RESULTS / "adult_1m.parquet")
    parser.add_argument("--large", type=Path, default=RESULTS / "adult_100m.parquet")
    parser.add_argument(
        "--memory-limit", default="2GB", help="DuckDB's own cap (the process has more)"
    )
    parser.add_argument("--timeout", type=float, default=4 * 3600)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    for path in (args.small, args.large):
        if not path.exists():
            print(f"{path} is missing; make it with benchmarks/make_adult_large.py (see --help)")
            return 0
    work = Path(tempfile.mkdtemp(prefix="engines-", dir=RESULTS))
    runs: dict[str, dict[str, Any]] = {}
    try:
        for label, path, engine in (
            ("numpy 1M", args.small, "numpy"),
            ("duckdb 1M", args.small, "duckdb"),
            ("duckdb large", args.large, "duckdb"),
        ):
            run = release(
                path, engine, work / label.replace(" ", "-"), args.memory_limit, args.timeout
            )
            run["rows"] = rows_of(path)
            run["wall_us_per_row"] = run["wall_s"] / run["rows"] * 1e6
            run["cpu_us_per_row"] = run["cpu_s"] / run["rows"] * 1e6
            runs[label] = run
            print(
                f"{label:<13} rows {run['rows']:>12,}  wall {run['wall_s']:8.1f} s  cpu {run['cpu_s']:8.1f} s  "
                f"peak {run['peak_rss_gb']:5.2f} GB  {run['wall_us_per_row']:7.2f} us/row  exit {run['exit']}",
                flush=True,
            )
        identical = filecmp.cmp(
            work / "numpy-1M" / "synthetic.csv", work / "duckdb-1M" / "synthetic.csv", shallow=False
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)
    large, base = runs["duckdb large"], runs["numpy 1M"]
    ratio = large["wall_us_per_row"] / base["wall_us_per_row"]
    cpu_ratio = large["cpu_us_per_row"] / base["cpu_us_per_row"]
    print(f"\nduckdb large / numpy 1M, time per row: wall {ratio:.2f}x, cpu {cpu_ratio:.2f}x")
    print(f"numpy and duckdb releases of the 1M file identical: {'yes' if identical else 'NO'}")
    checks = {
        "large release peak memory <= 4 GB": {
            "value": large["peak_rss_gb"],
            "met": large["peak_rss_gb"] <= GOAL_MEMORY_GB,
        },
        "time per row <= 2x numpy's on 1M rows": {
            "value": ratio,
            "met": ratio <= GOAL_PER_ROW_RATIO,
        },
        "identical releases across engines": {"value": identical, "met": identical},
    }
    print_goals(checks)
    result = {
        "created": now(),
        "machine": machine(),
        "runs": runs,
        "wall_ratio": ratio,
        "cpu_ratio": cpu_ratio,
        "identical": identical,
    }
    write_json(result, "engines_adult", args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
