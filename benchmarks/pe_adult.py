"""Tabular Private Evolution on adult-pgm against safeshare's AIM (issue 5), side by side.

Each contender runs as its own process (``drivers/safeshare_pe.py``,
``drivers/safeshare_aim.py``) at epsilon=1, delta=1e-9 and writes synthetic integer codes;
``_harness.py`` measures each process (CPU = user + sys, peak RSS, wall; imports included)
and scores the mean TVD over all 364 3-way marginals against the full data.  Goal: PE's
TVD within 10% of AIM's with >= 5x less CPU.  The domain (adult-domain.json) is public.

    .venv/bin/python benchmarks/pe_adult.py                   # 3 runs each (~3 min)
    .venv/bin/python benchmarks/pe_adult.py --repeats 1 --pe-args "--iterations 5"
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from _harness import (
    DRIVERS,
    Case,
    Contender,
    compare,
    find_dataset,
    machine,
    no_dataset,
    now,
    print_goals,
    print_ratios,
    print_rows,
    run_cases,
    summarize,
    write_json,
)

DELTA = 1e-9
GOAL_TVD_FACTOR = 1.10
GOAL_CPU_RATIO = 5.0


def main(argv: list[str] | None = None) -> int:
    """Run both contenders, print the table, ratios and goals, and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--pe-args", default="", help="extra arguments for the PE driver")
    parser.add_argument("--timeout", type=float, default=1800)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    folder = find_dataset()
    if folder is None:
        return no_dataset()
    python = Path(sys.executable)
    pe = Contender(
        "safeshare-pe",
        "safeshare PrivateEvolution (DomainAPI, one-hot embedding)",
        python,
        DRIVERS / "safeshare_pe.py",
        ("safeshare", "numpy", "scipy"),
        tuple(shlex.split(args.pe_args)),
    )
    aim = Contender(
        "safeshare-aim",
        "safeshare AIM (all-3-way workload, defaults)",
        python,
        DRIVERS / "safeshare_aim.py",
        ("safeshare", "numpy", "scipy"),
        ("--workload", "3way"),
    )
    cases = [
        Case(f"{c.name}@{args.epsilon:g}", c, args.epsilon, args.repeats, args.timeout)
        for c in (pe, aim)
    ]
    runs, _, floor_mb = run_cases(cases, folder, DELTA, "pe_adult")
    summaries = {c.contender.name: summarize(runs[c.key]) for c in cases}
    print(f"\nepsilon = {args.epsilon:g}, delta = {DELTA:g}", end="")
    print_rows(list(summaries.items()), width=15)
    rel = compare(summaries["safeshare-pe"], summaries["safeshare-aim"])
    goals = {}
    if rel is not None:
        print_ratios({"safeshare-aim": rel}, base="safeshare-pe", width=28)
        ours, theirs = summaries["safeshare-pe"], summaries["safeshare-aim"]
        goals = {
            "tvd(pe) <= 1.1 * tvd(aim)": {
                "value": ours["tvd_mean"],
                "aim": theirs["tvd_mean"],
                "met": ours["tvd_mean"] <= GOAL_TVD_FACTOR * theirs["tvd_mean"],
            },
            "cpu(aim) / cpu(pe) >= 5": {
                "value": rel["cpu_ratio"],
                "met": rel["cpu_ratio"] >= GOAL_CPU_RATIO,
            },
        }
        print_goals(goals, "goals for tabular PE (issue 5):")
    write_json(
        {
            "benchmark": "pe_adult",
            "date": now(),
            "machine": machine(),
            "epsilon": args.epsilon,
            "delta": DELTA,
            "metric": "mean TVD over all 3-way marginals vs the full data (lower is better)",
            "peak_floor_mb": floor_mb,
            "cases": {c.key: {"args": list(c.contender.args), "runs": runs[c.key]} for c in cases},
            "summaries": summaries,
            "goals": goals,
        },
        "pe_adult",
        args.json,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
