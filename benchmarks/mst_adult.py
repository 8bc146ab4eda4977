"""MST on adult-pgm, side by side: safeshare vs mbi 2.0 (Private-PGM) vs smartnoise-synth.

Every contender runs as its own process (a driver in ``benchmarks/drivers/``, with its own
venv's python) that fits MST at epsilon=1, delta=1e-9 and writes the synthetic integer codes
as CSV.  This harness measures each process (CPU = user + sys, peak RSS, wall; imports
included), then scores the CSV itself: the mean total-variation distance over all 3-way
marginals against the full data.  Peers are set up by ``bash benchmarks/peers/setup.sh``.

The measuring, scoring and reporting are shared with ``aim_adult.py`` in ``_harness.py``,
which stays on the standard library while the contenders run (a child's max RSS never reads
below its parent's RSS at fork time) and imports numpy and pandas only afterwards, to score.

    .venv/bin/python benchmarks/mst_adult.py --repeats 3
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

from _harness import (
    DRIVERS,
    VENVS,
    Case,
    Contender,
    find_dataset,
    machine,
    no_dataset,
    now,
    print_failures,
    print_goals,
    print_ratios,
    print_rows,
    ratios,
    run_cases,
    source_after,
    source_state,
    summarize,
    vendor_source,
    versions,
    write_json,
)

EPSILON = 1.0
DELTA = 1e-9
# the goal for safeshare: TVD no worse than mbi (reference 0.112), >= 10x less CPU
# than mbi, peak memory <= 500 MB
GOAL_MBI_TVD = 0.112
GOAL_CPU_RATIO = 10.0
GOAL_PEAK_MB = 500.0


def contenders() -> list[Contender]:
    """safeshare (this venv) and the peers (their own venvs under benchmarks/.venvs/)."""
    return [
        Contender(
            "safeshare",
            "safeshare MST",
            Path(sys.executable),
            DRIVERS / "safeshare_mst.py",
            ("safeshare", "numpy"),
        ),
        Contender(
            "mbi",
            "mbi 2.0 + Private-PGM mechanisms/mst.py",
            VENVS / "mbi" / "bin" / "python",
            DRIVERS / "mbi_mst.py",
            ("mbi", "jax", "numpy"),
        ),
        Contender(
            "smartnoise",
            "smartnoise-synth 1.0.8 MST",
            VENVS / "smartnoise" / "bin" / "python",
            DRIVERS / "smartnoise_mst.py",
            ("smartnoise-synth", "mbi", "jax", "numpy"),
        ),
    ]


def goals(summaries: dict[str, dict[str, Any]], rel: dict[str, dict[str, float]]) -> dict:
    """The issue's targets for safeshare, checked where the numbers exist."""
    base = summaries.get("safeshare", {})
    if not base.get("n"):
        return {}
    checks: dict[str, Any] = {
        "peak_mb<=500": {"value": base["peak_mb"], "met": base["peak_mb"] <= GOAL_PEAK_MB},
        "tvd<=0.112 (reference)": {
            "value": base["tvd_mean"],
            "met": base["tvd_mean"] <= GOAL_MBI_TVD,
        },
    }
    if "mbi" in rel:
        mbi = summaries["mbi"]
        checks["tvd<=mbi"] = {
            "value": base["tvd_mean"],
            "mbi": mbi["tvd_mean"],
            "met": base["tvd_mean"] <= mbi["tvd_mean"],
        }
        checks["mbi_cpu/cpu>=10"] = {
            "value": rel["mbi"]["cpu_ratio"],
            "met": rel["mbi"]["cpu_ratio"] >= GOAL_CPU_RATIO,
        }
    return checks


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print/write the results."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="fresh runs per contender")
    who = parser.add_mutually_exclusive_group()
    names = [c.name for c in contenders()]
    who.add_argument("--only", choices=names, help="run this contender only")
    who.add_argument("--skip-peers", action="store_true", help="run safeshare only")
    parser.add_argument("--timeout", type=float, default=1800, help="seconds per run")
    parser.add_argument("--json", type=Path, help="where to write the JSON (default results/)")
    args = parser.parse_args(argv)
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")

    folder = find_dataset()
    if folder is None:
        return no_dataset()

    chosen = [
        c
        for c in contenders()
        if (args.only is None or c.name == args.only) and not (args.skip_peers and c.peer)
    ]
    sizes: dict[str, int] = json.loads((folder / "adult-domain.json").read_text())
    print(
        f"adult-pgm: {len(sizes)} columns, {math.comb(len(sizes), 3)} 3-way marginals; "
        f"epsilon={EPSILON}, delta={DELTA}; {args.repeats} repeat(s) of "
        f"{', '.join(c.name for c in chosen)}",
        flush=True,
    )

    source_before = source_state()
    cases = [Case(c.name, c, EPSILON, args.repeats, args.timeout) for c in chosen]
    runs, marginals, floor_mb = run_cases(cases, folder, DELTA, "mst_adult")
    source = source_after(source_before)
    summaries = {c.name: summarize(runs[c.name]) for c in chosen}
    rel = ratios(summaries)
    checks = goals(summaries, rel)
    print_rows([(c.name, summaries[c.name]) for c in chosen])
    print_ratios(rel)
    print_failures(summaries)
    print_goals(checks)

    result = {
        "benchmark": "mst_adult",
        "date": now(),
        "machine": machine(),
        "safeshare_source": source,
        "dataset": {"path": str(folder), "rows": len(marginals.real), "columns": len(sizes)},
        "epsilon": EPSILON,
        "delta": DELTA,
        "metric": "mean TVD over all 3-way marginals vs the full data (lower is better)",
        "units": {"cpu_s": "user+sys s", "peak_mb": "max RSS, MiB", "wall_s": "s"},
        "peak_floor_mb": floor_mb,
        "repeats": args.repeats,
        "contenders": {
            c.name: {
                "label": c.label,
                "versions": versions(c),
                "summary": summaries[c.name],
                "runs": runs[c.name],
            }
            for c in chosen
        },
        "ratios_vs_safeshare": rel,
        "goals": checks,
    }
    mechanism = vendor_source()
    if "mbi" in result["contenders"] and mechanism:
        result["contenders"]["mbi"]["mechanism_source"] = mechanism
    write_json(result, "mst_adult", args.json)
    return 0


if __name__ == "__main__":
    sys.exit(main())
