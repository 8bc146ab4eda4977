"""What every benchmark driver shares: its command line and reading the coded data.

Drivers run under different venvs (safeshare's, each peer's), so this module uses only the
standard library and pandas, which every venv has.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd


@dataclass(frozen=True)
class Job:
    """One benchmark run: the coded data, its public domain sizes, the budget and the output.

    ``options``: the mechanism's settings, for drivers that take them (see :func:`aim_job`).
    """

    frame: pd.DataFrame
    sizes: dict[str, int]
    out: Path
    epsilon: float
    delta: float
    options: dict[str, Any] = field(default_factory=dict)

    def write(self, codes: pd.DataFrame) -> None:
        """Write the synthetic integer codes, columns in the domain's order."""
        codes[list(self.sizes)].astype("int64").to_csv(self.out, index=False)


def _parser(description: str | None) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("data", type=Path)
    parser.add_argument("domain", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-9)
    return parser


def _load(args: argparse.Namespace, options: dict[str, Any]) -> Job:
    sizes: dict[str, int] = json.loads(args.domain.read_text())
    frame = pd.read_csv(args.data, usecols=list(sizes))[list(sizes)]
    return Job(frame, sizes, args.out, args.epsilon, args.delta, options)


def job(description: str | None) -> Job:
    """Parse ``DATA.csv DOMAIN.json OUT.csv [--epsilon E] [--delta D]`` and read the data."""
    return _load(_parser(description).parse_args(), {})


AIM_OPTIONS = ("workload", "max_model_size", "rounds", "iterations")


def aim_job(description: str | None) -> Job:
    """:func:`job` plus AIM's settings, in ``Job.options``.

    ``workload``: ``"2way"``/``"3way"`` (all k-way marginals, weight 1); ``max_model_size``
    (MB), ``rounds`` and ``iterations`` (estimation iterations per fit): None means the
    mechanism's own default.
    """
    parser = _parser(description)
    parser.add_argument("--workload", choices=("2way", "3way"), default="3way")
    parser.add_argument("--max-model-size", type=float, default=None)
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--iterations", type=int, default=None)
    args = parser.parse_args()
    return _load(args, {name: getattr(args, name) for name in AIM_OPTIONS})
