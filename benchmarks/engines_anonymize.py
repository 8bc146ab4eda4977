"""The k-anonymity search on a large Adult-like Parquet table: numpy, DuckDB and Spark (local[2]).

    .venv/bin/python benchmarks/make_adult_large.py --rows 10000000 --out benchmarks/results/adult_10m.parquet
    .venv/bin/python benchmarks/engines_anonymize.py --data benchmarks/results/adult_10m.parquet

The problem: adult-arx's 8 quasi-identifiers with ARX's hierarchy files, k = 10, at most 1%
suppressed, precision (the config of ``anonymize_adult.py`` with k = 10).  Each contender runs
in its own process (peak memory via ``os.wait4``):

* ``numpy``: ``read_frame`` (the whole table into pandas), then the search on its records;
* ``duckdb`` / ``spark``: the engine opens the file and counts its distinct quasi-identifier
  rows in one GROUP BY (only those rows reach Python); the same search runs on the counts.

The chosen node, its score and the suppressed count must be identical across contenders.
Printed per contender: wall time (and its phases), peak RSS, and for Spark the share of the
time spent inside Spark jobs (the rest is the driver: planning, Python, the search).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "src"))

QUASI_IDENTIFIERS = ("sex", "age", "race", "marital-status", "education", "native-country",
                     "workclass", "occupation")  # fmt: skip
CONTENDERS = ("numpy", "duckdb", "spark")


def config_of(shared: Path) -> dict[str, Any]:
    folder = shared / "adult-arx"
    return {
        "quasi_identifiers": {
            c: {"hierarchy": str(folder / f"adult_hierarchy_{c}.csv")} for c in QUASI_IDENTIFIERS
        },
        "sensitive": ["salary-class"],
        "privacy": {"k": 10},
        "suppression_limit": 0.01,
    }


def answer(result: Any, phases: dict[str, float], **extra: Any) -> dict[str, Any]:
    return {
        "node": result.transformation,
        "score": result.search["score"],
        "suppressed": result.suppressed,
        "classes": result.classes.count,
        "checked": result.search["transformations_checked"],
        "phases": phases,
        **extra,
    }


def run_numpy(data: Path, config: dict[str, Any]) -> dict[str, Any]:
    from safeshare.anonymize import Anonymizer
    from safeshare.anonymize.figures import account, released_class_sizes
    from safeshare.data.readers import read_frame

    started = time.perf_counter()
    frame = read_frame(data)
    read = time.perf_counter() - started
    anonymizer = Anonymizer(config)
    prepared = anonymizer.prepare(frame, None)
    partition, transformation, search = anonymizer.search(prepared.problem)
    sizes = released_class_sizes(prepared, partition)
    result = account(
        anonymizer.config, prepared, partition, transformation, search, list(frame.columns), sizes
    )
    total = time.perf_counter() - started
    phases = {"read": read, "search": total - read}
    return answer(result, phases, distinct_rows=len(prepared.problem.weights), records=len(frame))


def run_engine(name: str, data: Path, config: dict[str, Any]) -> dict[str, Any]:
    from safeshare.anonymize import Anonymizer

    inside = [0.0]
    if name == "spark":
        from safeshare.engine.spark_engine import SparkEngine

        original = SparkEngine.run

        def timed(self: SparkEngine, step: str, work: Callable[[], Any], **options: Any) -> Any:
            began = time.perf_counter()
            try:
                return original(self, step, work, **options)
            finally:
                inside[0] += time.perf_counter() - began

        SparkEngine.run = timed  # type: ignore[method-assign]  # measuring only
        begun = time.perf_counter()
        engine: Any = SparkEngine("local[2]", **{"spark.sql.shuffle.partitions": "8"})
    else:
        from safeshare.engine.duckdb_engine import DuckDBEngine

        begun = time.perf_counter()
        engine = DuckDBEngine(memory_limit="2GB")
    started = time.perf_counter()
    inside[0] = 0.0  # (the session's own start is reported as "start")
    with engine:
        source = engine.open(data)
        opened = time.perf_counter()
        anonymizer = Anonymizer(config)
        counts, weights = source.value_counts(anonymizer.counted_columns())
        counted = time.perf_counter()
        plan = anonymizer.plan(counts, weights, source.names)
        done = time.perf_counter()
    phases = {
        "start": started - begun,
        "open": opened - started,
        "group_by": counted - opened,
        "search": done - counted,
    }
    extra: dict[str, Any] = {"distinct_rows": len(weights), "records": int(weights.sum())}
    if name == "spark":
        extra["inside_spark_s"] = inside[0]
    return answer(plan.result, phases, **extra)


def child(name: str, data: Path, shared: Path) -> int:
    config = config_of(shared)
    started = time.perf_counter()
    result = run_numpy(data, config) if name == "numpy" else run_engine(name, data, config)
    result["wall_s"] = time.perf_counter() - started
    print(json.dumps(result), flush=True)
    return 0


def spawn(name: str, data: Path, shared: Path) -> dict[str, Any]:
    """One contender in a fresh process: its answer, wall time and peak RSS."""
    args = [sys.executable, __file__, "--contender", name, "--data", str(data)]
    began = time.perf_counter()
    proc = subprocess.Popen([*args, "--shared", str(shared)], stdout=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - began
    out = proc.stdout.read() if proc.stdout else ""
    if os.waitstatus_to_exitcode(status) != 0:
        return {"status": "failed", "process_wall_s": wall}
    lines = [line for line in out.splitlines() if line.startswith("{")]
    return {
        "status": "ok",
        **json.loads(lines[-1]),
        "process_wall_s": wall,
        "peak_mb": usage.ru_maxrss / 1024,
        "cpu_s": usage.ru_utime + usage.ru_stime,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=REPO / "benchmarks/results/adult_10m.parquet")
    parser.add_argument("--shared", type=Path, default=REPO.parent / "shared" / "datasets")
    parser.add_argument("--skip-numpy", action="store_true", help="when memory does not allow")
    parser.add_argument("--contender", choices=CONTENDERS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.contender:
        return child(args.contender, args.data, args.shared)
    if not args.data.exists():
        print(f"{args.data} is missing; make it with benchmarks/make_adult_large.py")
        return 0
    if not (args.shared / "adult-arx").is_dir():
        print("needs ../shared/datasets/adult-arx (or --shared); nothing run")
        return 0
    results: dict[str, dict[str, Any]] = {}
    for name in CONTENDERS:
        if name == "numpy" and args.skip_numpy:
            continue
        results[name] = found = spawn(name, args.data, args.shared)
        if found["status"] != "ok":
            print(f"{name:<7} failed after {found['process_wall_s']:.1f} s", flush=True)
            continue
        phases = ", ".join(f"{k} {v:.1f} s" for k, v in found["phases"].items())
        line = (
            f"{name:<7} {found['wall_s']:8.1f} s  ({phases}; {found['distinct_rows']:,} distinct "
            f"rows of {found['records']:,}); peak {found['peak_mb']:,.0f} MB"
        )
        if name == "spark":  # of the time after the session started
            work = sum(v for k, v in found["phases"].items() if k != "start")
            share = found["inside_spark_s"] / work
            line += f"; of the {work:.1f} s after start {share:.0%} inside Spark jobs, "
            line += f"{1 - share:.0%} driver"
        print(line, flush=True)
    ok = {n: r for n, r in results.items() if r["status"] == "ok"}
    if ok:
        first = next(iter(ok.values()))
        print(f"node {first['node']}, score {first['score']:.6f}, {first['suppressed']:,} "
              f"suppressed, {first['classes']:,} classes, {first['checked']} nodes checked")  # fmt: skip
        for name, found in ok.items():
            same = all(found[key] == first[key] for key in ("node", "score", "suppressed"))
            print(f"{name:<7} node, score and suppressed identical: {'yes' if same else 'NO'}")
    stamp = time.strftime("%Y%m%d-%H%M%S")
    out = REPO / "benchmarks" / "results" / f"engines_anonymize-{stamp}.json"
    out.write_text(json.dumps({"data": str(args.data), "results": results}, indent=2))
    print(f"wrote {out.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
