"""What the evaluation drivers share: their command line, the attack setup, a JSON report.

Drivers run under different venvs (safeshare's, anonymeter's), so this module uses only the
standard library and pandas, which both have.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SECRET = "income"
# the two sources of the linkability attack (anonymeter's Adult example splits the columns so)
COLUMNS_A = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
]
COLUMNS_B = [
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
]


@dataclass(frozen=True)
class Job:
    train: Path
    control: Path
    synthetic: Path
    attacks: int
    seed: int
    generalized: bool = False


def job(description: str | None) -> Job:
    """Parse ``TRAIN.csv CONTROL.csv SYNTHETIC.csv [--attacks N] [--seed S] [--generalized]``
    (``--generalized``: the synthetic table holds generalized values such as ``20-29``)."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("train", type=Path)
    parser.add_argument("control", type=Path)
    parser.add_argument("synthetic", type=Path)
    parser.add_argument("--attacks", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--generalized", action="store_true")
    args = parser.parse_args()
    return Job(args.train, args.control, args.synthetic, args.attacks, args.seed, args.generalized)


def report(result: dict[str, Any]) -> None:
    """The driver's answer: one JSON line on stdout (the harness reads the last line)."""
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
