"""What the anonymization drivers share: the adult-arx problem, ARX's precision, a JSON report.

Drivers run under different venvs (safeshare's, anjana's, anonypy's, pycanon's), so this module
uses only the standard library and pandas, which every one of them has.
"""

from __future__ import annotations

import csv
import json
import sys
from pathlib import Path
from typing import Any

import pandas as pd

SENSITIVE = "salary-class"


def read_adult(folder: Path) -> pd.DataFrame:
    """adult-arx as text (``;``-separated)."""
    return pd.read_csv(folder / "adult.csv", sep=";", dtype=str)


def quasi_identifiers(frame: pd.DataFrame) -> list[str]:
    """The 8 quasi-identifiers of the benchmark: every column but salary-class."""
    return [c for c in frame.columns if c != SENSITIVE]


def hierarchy_rows(folder: Path, column: str) -> list[list[str]]:
    """ARX's hierarchy file of a column: one row per value, one column per level."""
    with (folder / f"adult_hierarchy_{column}.csv").open(encoding="utf-8") as handle:
        return [row for row in csv.reader(handle, delimiter=";") if row]


def precision(levels: dict[str, int], heights: dict[str, int], n: int, suppressed: int) -> float:
    """ARX's Precision: per QI ((n - s) * level / height + s) / n, averaged over the QIs."""
    return sum(((n - suppressed) * levels[c] / heights[c] + suppressed) / n for c in levels) / len(
        levels
    )


def report(result: dict[str, Any]) -> None:
    """The driver's answer: one JSON line on stdout (the harness reads the last line)."""
    sys.stdout.write(json.dumps(result) + "\n")
    sys.stdout.flush()
