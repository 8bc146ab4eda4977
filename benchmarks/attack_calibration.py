"""Are the evaluation's verdicts calibrated?  False alarms on harmless releases, power on leaky ones.

On two public tables (UCI Adult, where the attacks were developed, and the RAND Health
Insurance Experiment survey that ships with statsmodels, where they were not), with
``--rows`` records each for the release, train and control:

* **independent**: the release is other records of the same population, so no attack should
  find anything.  Train and control are re-split ``--resplits`` times; for every attack the
  share of re-splits where it reads significant, and the share where the evaluation's verdict
  is red (any attack or membership score significant, or the memorization verdict "bad").
  The goal: at most 5% for each attack and for the verdict.
* **copy** (the training records), **noisy copy** (10% of the cells replaced by the column's
  value in another training record), **k=5** (the training records 5-anonymized on four
  quasi-identifiers by ``safeshare anonymize``'s engine, generalized values and all), and
  **20 rare copies** (an independent release whose last 20 records are the 20 rarest training
  records) and **20 rare near copies** (the same with one column of each changed to another
  released record's value: no exact copy left): ``--seeds`` seeds each; the goal is a red
  verdict in every seed.

Every attack runs with ``--attacks`` attacks through :func:`run_attacks`, the family the
evaluation runs (intervals family-wise over its tests, Bonferroni), plus the memorization
measure.  Each row of the summary gives the counts behind its share.

    .venv/bin/python benchmarks/attack_calibration.py [--resplits 40 --seeds 3 --rows 2400]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from safeshare.anonymize.anonymizer import Anonymizer
from safeshare.data.codec import encode_frame
from safeshare.data.domain import Domain
from safeshare.data.examples import load_example
from safeshare.data.table import Table
from safeshare.engine import default_engine
from safeshare.evaluate.assessment import EvaluationOptions, run_attacks
from safeshare.evaluate.generalized import CellSets, cell_sets, from_table
from safeshare.evaluate.memorization import memorization, rarity
from safeshare.release.evaluation import evaluation_domain

BENCH = Path(__file__).resolve().parent
SHARED = Path(os.environ.get("SAFESHARE_SHARED", BENCH.parents[1] / "shared"))
ADULT_NAMES = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status", "occupation",
    "relationship", "race", "sex", "capital-gain", "capital-loss", "hours-per-week",
    "native-country", "income",
]  # fmt: skip
GOAL_FALSE_ALARMS = 0.05
PLANTED = 20
NOISE = 0.10


@dataclass(frozen=True)
class Dataset:
    name: str
    frame: pd.DataFrame
    quasi_identifiers: list[str]
    secret: str


def datasets() -> Iterator[Dataset]:
    adult = SHARED / "datasets" / "adult-uci" / "adult.data"
    if adult.is_file():
        frame = pd.read_csv(
            adult, header=None, names=ADULT_NAMES, skipinitialspace=True, na_values="?"
        )
        yield Dataset("adult", frame, ["age", "sex", "race", "marital-status"], "income")
    else:
        print(f"{adult} is missing: Adult skipped", file=sys.stderr)
    randhie = load_example("randhie")[0]
    yield Dataset("randhie", randhie, ["idp", "lpi", "physlm", "disea"], "mdvis")


@dataclass(frozen=True)
class Split:
    """The release's population sample and the pool that train and control are cut from."""

    domain: Domain
    outside: pd.DataFrame  # records never in train or control
    pool: pd.DataFrame
    rows: int

    def halves(self, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
        order = np.random.default_rng(seed).permutation(len(self.pool))
        pool = self.pool.iloc[order].reset_index(drop=True)
        return pool.iloc[: self.rows], pool.iloc[self.rows :].reset_index(drop=True)


def split(data: Dataset, rows: int) -> Split:
    order = np.random.default_rng(20261204).permutation(len(data.frame))
    frame = data.frame.iloc[order].reset_index(drop=True)
    outside, pool = frame.iloc[:rows].reset_index(drop=True), frame.iloc[rows : 3 * rows]
    domain, _ = evaluation_domain(pool.iloc[:rows], pool.iloc[rows:])
    return Split(domain, outside, pool.reset_index(drop=True), rows)


def verdict(
    release: CellSets, train: Table, control: Table, options: EvaluationOptions, seed: int
) -> dict[str, Any]:
    """What the evaluation says: the flagged attacks and whether the verdict is red."""
    rng = np.random.default_rng(seed)
    coded = release.impute(rng)
    family = run_attacks(coded, train, control, rng, options, cells=release)
    memorized = memorization(coded, train, control, rng)
    memory = memorized.verdict()[0]
    return {
        "flagged": family.flagged,
        "memorization": memory,
        "red": bool(family.flagged) or memory == "bad",
        "tests": family.attacks[0].family,
    }


def noisy_copy(train: pd.DataFrame, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    out = train.copy()
    for name in out.columns:
        cells = rng.random(len(out)) < NOISE
        donors = rng.integers(0, len(out), int(cells.sum()))
        out.loc[cells, name] = train[name].to_numpy()[donors]
    return out


def five_anonymous(train: pd.DataFrame, data: Dataset) -> pd.DataFrame:
    config = {
        "quasi_identifiers": {c: {"hierarchy": "auto"} for c in data.quasi_identifiers},
        "privacy": {"k": 5},
        "suppression_limit": 0.05,
        "other_columns": "keep",
    }
    return Anonymizer(config).fit(train.astype(str).replace("nan", "")).frame


def rare_copies(outside: Table, train: Table) -> Table:
    rarest = np.argsort(-rarity(train, train, default_engine()), kind="stable")[:PLANTED]
    return Table(
        {
            c: np.concatenate([outside.column(c)[:-PLANTED], train.column(c)[rarest]])
            for c in train.columns
        },
        train.domain,
    )


def rare_near_copies(outside: Table, train: Table, seed: int) -> Table:
    """The 20 rarest training records, one column of each replaced by another record's value
    (a changed value: a record already holding it draws again), at the end of ``outside``."""
    rng = np.random.default_rng(seed)
    rarest = np.argsort(-rarity(train, train, default_engine()), kind="stable")[:PLANTED]
    changed = {c: train.column(c)[rarest].copy() for c in train.columns}
    for i in range(PLANTED):
        name = train.columns[rng.integers(len(train.columns))]
        donors = outside.column(name)
        donors = donors[donors != changed[name][i]]
        changed[name][i] = donors[rng.integers(len(donors))]
    return Table(
        {c: np.concatenate([outside.column(c)[:-PLANTED], changed[c]]) for c in train.columns},
        train.domain,
    )


def leaky_cases(
    data: Dataset, cut: Split
) -> dict[str, Callable[[pd.DataFrame, Table, int], CellSets]]:
    outside = encode_frame(cut.outside, cut.domain)[0]
    return {
        "copy": lambda frame, train, seed: from_table(train),
        "noisy copy": lambda frame, train, seed: from_table(
            encode_frame(noisy_copy(frame, seed), cut.domain)[0]
        ),
        "k=5": lambda frame, train, seed: cell_sets(five_anonymous(frame, data), cut.domain, {}),
        f"{PLANTED} rare copies": lambda frame, train, seed: from_table(
            rare_copies(outside, train)
        ),
        f"{PLANTED} rare near copies": lambda frame, train, seed: from_table(
            rare_near_copies(outside, train, seed)
        ),
    }


def run(data: Dataset, args: argparse.Namespace) -> dict[str, Any]:
    cut = split(data, args.rows)
    options = EvaluationOptions(attacks=args.attacks, secrets=(data.secret,))
    independent = from_table(encode_frame(cut.outside, cut.domain)[0])
    results: dict[str, Any] = {"independent": [], "leaky": {}}
    started = time.process_time()
    for seed in range(args.resplits):
        train, control = (encode_frame(f, cut.domain)[0] for f in cut.halves(seed))
        results["independent"].append(verdict(independent, train, control, options, seed))
    results["independent_cpu_s"] = time.process_time() - started
    for case, make in leaky_cases(data, cut).items():
        found = []
        for seed in range(args.seeds):
            frame, control_frame = cut.halves(1000 + seed)
            train, control = (
                encode_frame(frame, cut.domain)[0],
                encode_frame(control_frame, cut.domain)[0],
            )
            found.append(verdict(make(frame, train, seed), train, control, options, seed))
        results["leaky"][case] = found
    return results


def summary(name: str, results: dict[str, Any]) -> list[str]:
    null = results["independent"]
    runs = len(null)
    names = sorted({n for r in null for n in r["flagged"]} | {"(any attack)"})
    lines = [f"{name}: independent release, {runs} re-splits ({null[0]['tests']} tests each)"]
    for attack in names:
        hits = sum(
            bool(r["flagged"]) if attack == "(any attack)" else attack in r["flagged"] for r in null
        )
        lines.append(f"  {attack:42s} significant in {hits}/{runs} ({hits / runs:.1%})")
    red = sum(r["red"] for r in null)
    goal = "meets" if red / runs <= GOAL_FALSE_ALARMS else "MISSES"
    lines.append(f"  {'red verdict':42s} {red}/{runs} ({red / runs:.1%}): {goal} the 5% goal")
    for case, found in results["leaky"].items():
        red = sum(r["red"] for r in found)
        flagged = ", ".join(f"{len(r['flagged'])}" for r in found)
        lines.append(
            f"{name}: {case:16s} red in {red}/{len(found)} seeds (attacks flagged per seed: "
            f"{flagged}; memorization: {', '.join(r['memorization'] for r in found)})"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--resplits", type=int, default=40)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--rows", type=int, default=2400)
    parser.add_argument("--attacks", type=int, default=500)
    args = parser.parse_args()
    every: dict[str, Any] = {"arguments": vars(args)}
    lines: list[str] = []
    for data in datasets():
        every[data.name] = run(data, args)
        lines += summary(data.name, every[data.name])
        print("\n".join(summary(data.name, every[data.name])), flush=True)
    out = BENCH / "results" / "attack_calibration.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps(every, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
