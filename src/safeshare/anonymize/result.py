"""What an anonymization returns: the released frame and its account.

:class:`AnonymizationResult` holds the anonymized frame, the transformation, the classes'
statistics (:class:`ClassStatistics`, aggregates only), the quality scores and one
:class:`ModelOutcome` per privacy model; ``to_dict()`` is what the privacy card records.

>>> import numpy as np
>>> stats = ClassStatistics.of(np.array([2, 2, 5, 12]))
>>> stats.count, stats.smallest, stats.median, stats.histogram["5-9"]
(4, 2, 3.5, 1)
>>> ModelOutcome("k-anonymity", "k=2", True, {"k": 2}).to_dict()["achieved"]
{'k': 2}
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from safeshare.anonymize.quality import QualityScores
from safeshare.data.table import Table


@dataclass(frozen=True)
class ModelOutcome:
    """One privacy model, whether the released table satisfies it, and what it reaches."""

    name: str
    parameters: str
    satisfied: bool
    achieved: dict[str, float]

    def to_dict(self) -> dict[str, Any]:
        return {
            "model": self.name,
            "parameters": self.parameters,
            "satisfied": self.satisfied,
            "achieved": self.achieved,
        }


@dataclass(frozen=True)
class ClassStatistics:
    """The equivalence classes of the released records (aggregates only)."""

    count: int
    smallest: int
    largest: int
    mean: float
    median: float
    histogram: dict[str, int]

    @classmethod
    def of(cls, sizes: np.ndarray) -> ClassStatistics:
        sizes = np.asarray(sizes, dtype=np.int64)
        edges = [1, 2, 5, 10, 20, 50, 100, 1000, 10_000]
        bins = np.searchsorted(edges, sizes[sizes >= 1], side="right") - 1
        counts = np.bincount(bins, minlength=len(edges)).tolist()
        histogram: dict[str, int] = {}
        for low, high, count in zip(edges, [*edges[1:], math.inf], counts, strict=True):
            label = (
                f"{low}"
                if high == low + 1
                else (f"{low}+" if high == math.inf else f"{low}-{int(high) - 1}")
            )
            histogram[label] = count
        return cls(
            len(sizes),
            int(sizes.min()) if len(sizes) else 0,
            int(sizes.max()) if len(sizes) else 0,
            float(sizes.mean()) if len(sizes) else 0.0,
            float(np.median(sizes)) if len(sizes) else 0.0,
            histogram,
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "count": self.count,
            "smallest": self.smallest,
            "largest": self.largest,
            "mean": self.mean,
            "median": self.median,
            "size_histogram": self.histogram,
        }


@dataclass(frozen=True)
class AnonymizationResult:
    """What an anonymization produced (the frame is a fresh copy; do not share the input)."""

    frame: pd.DataFrame
    transformation: dict[str, int | None]
    hierarchies: dict[str, dict[str, Any]]
    transforms: dict[str, str]
    classes: ClassStatistics
    class_sizes: np.ndarray
    quality: QualityScores
    models: tuple[ModelOutcome, ...]
    suppressed: int
    rows_in: int
    rows_out: int
    search: dict[str, Any]
    columns: dict[str, dict[str, Any]] = field(default_factory=dict)
    table: Table | None = None
    suppressed_records: str = "remove"  # how the suppressed records were written
    notes: tuple[str, ...] = ()  # where the release differs from what the config asked

    @property
    def satisfied(self) -> bool:
        return all(m.satisfied for m in self.models)

    def to_dict(self) -> dict[str, Any]:
        return {
            "transformation": self.transformation,
            "hierarchies": self.hierarchies,
            "transforms": self.transforms,
            "classes": self.classes.to_dict(),
            "quality": self.quality.to_dict(),
            "models": [m.to_dict() for m in self.models],
            "suppressed": self.suppressed,
            "suppressed_records": self.suppressed_records,
            "rows_in": self.rows_in,
            "rows_out": self.rows_out,
            "search": self.search,
            "notes": list(self.notes),
        }
