"""How often the column kinds measured with DP agree with the exact guess (issue 18, part 4).

Each table of ``release_raw_tables.py`` (Adult, COMPAS, German credit, as a user's CSV) is
split as a release splits it (80% training records), and its kinds are measured with DP as
a release measures them (:func:`safeshare.dp.kinds.plan_kinds` on 5% of the release's rho,
after a quarter of delta is set aside for discovery's thresholds) under many seeds.  Each
measured decision (kind, integer, date layout, dropped or not) is compared with the exact,
non-DP guess (:func:`safeshare.data.inference.infer_columns`, what releases used before).
Disagreements are counted by what happened: a column with too few values present to tell
(released as categorical), a dropped or kept identifier, another kind or layout.

    .venv/bin/python benchmarks/dp_kinds.py                        # epsilon 1 and 4, 50 seeds
    .venv/bin/python benchmarks/dp_kinds.py --tables compas --epsilons 1 --seeds 10
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent / "src"))
sys.path.insert(0, str(BENCH))

import pandas as pd  # noqa: E402

from release_raw_tables import TABLES  # noqa: E402
from safeshare.data.inference import GuessedColumn, infer_columns  # noqa: E402
from safeshare.data.readers import MISSING_TOKENS  # noqa: E402
from safeshare.dp.budget import PrivacyBudget  # noqa: E402
from safeshare.dp.kinds import decide, plan_kinds, too_few  # noqa: E402
from safeshare.dp.randomness import Randomness  # noqa: E402
from safeshare.release.pipeline import KINDS_SHARE, THRESHOLD_DELTA_SHARE  # noqa: E402


def _decision(guess: GuessedColumn) -> tuple[object, ...]:
    return (guess.kind.value, guess.integer, guess.date_format, guess.identifier is not None)


def _why(measured: GuessedColumn, exact: GuessedColumn, unsure: bool) -> str:
    if unsure:
        return "too few present to tell: categorical"
    if (measured.identifier is None) != (exact.identifier is None):
        return "identifier dropped" if measured.identifier else "identifier kept"
    if measured.kind != exact.kind:
        return f"{exact.kind.value} read as {measured.kind.value}"
    return "integer or date layout"


def compare(frame: pd.DataFrame, epsilon: float, seeds: int) -> dict[str, object]:
    """The share of columns whose measured decision equals the exact one, over ``seeds``
    measurements (each as :meth:`KindsPlan.run` makes it: one release of every count)."""
    budget = PrivacyBudget(epsilon, 1e-9)
    rho = KINDS_SHARE * budget.rho(budget.delta * THRESHOLD_DELTA_SHARE)
    plan = plan_kinds(list(frame.columns), rho)
    exact = {g.name: g for g in infer_columns(frame)}
    counts = plan.counts(frame)  # read once; each seed releases them again
    agree, why = 0, Counter[str]()
    for seed in range(seeds):
        profiles = plan.noisy_profiles(counts, Randomness(seed))
        for name, profile in zip(plan.columns, profiles, strict=True):
            guess = decide(name, profile, len(frame), plan.sigma)
            if _decision(guess) == _decision(exact[name]):
                agree += 1
            else:
                unsure = too_few(profile, len(frame), plan.sigma)
                why[_why(guess, exact[name], unsure)] += 1
    total = seeds * len(plan.columns)
    return {"sigma": plan.sigma, "agree": agree / total, "disagreements": dict(why)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", default="adult,compas,german")
    parser.add_argument("--epsilons", default="1,4")
    parser.add_argument("--seeds", type=int, default=50)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.tables.split(","):
            path = TABLES[name](Path(tmp))
            frame = pd.read_csv(
                path, dtype=str, keep_default_na=False, na_values=list(MISSING_TOKENS)
            )
            train = frame.sample(frac=0.8, random_state=0).reset_index(drop=True)
            for epsilon in map(float, args.epsilons.split(",")):
                started = time.process_time()
                row = {"table": name, "records": len(train), "columns": train.shape[1],
                       "epsilon": epsilon, **compare(train, epsilon, args.seeds)}  # fmt: skip
                row["cpu_s_per_measurement"] = (time.process_time() - started) / args.seeds
                rows.append(row)
                print(json.dumps(row), flush=True)
    print()
    print("| table | records x columns | epsilon | noise per count | decisions as the exact guess "
          "| the others |")  # fmt: skip
    print("|---|---|---|---|---|---|")
    for r in rows:
        others = "; ".join(f"{k}: {v}" for k, v in sorted(r["disagreements"].items())) or "none"
        print(f"| {r['table']} | {r['records']:,} x {r['columns']} | {r['epsilon']:g} | "
              f"{r['sigma']:.0f} | {100 * r['agree']:.1f}% | {others} |")  # fmt: skip


if __name__ == "__main__":
    main()
