"""What every benchmark driver shares: its command line and reading the coded data.

Drivers run under different venvs (safeshare's, each peer's), so this module uses only the
standard library and pandas, which every venv has.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

import pandas as pd


@dataclass(frozen=True)
class Job:
    """One benchmark run: the coded data, its public domain sizes, the budget and the output."""

    frame: pd.DataFrame
    sizes: dict[str, int]
    out: Path
    epsilon: float
    delta: float

    def write(self, codes: pd.DataFrame) -> None:
        """Write the synthetic integer codes, columns in the domain's order."""
        codes[list(self.sizes)].astype("int64").to_csv(self.out, index=False)


def job(description: str | None) -> Job:
    """Parse ``DATA.csv DOMAIN.json OUT.csv [--epsilon E] [--delta D]`` and read the data."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("data", type=Path)
    parser.add_argument("domain", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-9)
    args = parser.parse_args()
    sizes: dict[str, int] = json.loads(args.domain.read_text())
    frame = pd.read_csv(args.data, usecols=list(sizes))[list(sizes)]
    return Job(frame, sizes, args.out, args.epsilon, args.delta)
