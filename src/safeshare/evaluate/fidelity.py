"""Fidelity beyond raw TVD: a k-marginal score calibrated on subsamples, and association differences.

**Calibrated k-marginal score.**  The mean total-variation distance (TVD) over k-way marginals
between the release and the real (training) data is put on a scale people can read: the same
distance is measured for uniform subsamples of the real data of 1% ... 90% of its size, and
the release is "as faithful as a 40% subsample" when it sits where a 40% subsample does.  The
score ``1000 * (1 - mean TVD)`` is NIST's k-marginal score.

**Associations.**  Cramer's V of every pair of columns (from the engine's 2-way counts) in the
real data and in the release; the differences say which relationships the release lost.

>>> import numpy as np
>>> from safeshare.data import Column, Domain, Kind, Table
>>> domain = Domain(tuple(Column(c, Kind.CATEGORICAL, categories=tuple("abcd")) for c in "xyz"))
>>> rng = np.random.default_rng(0)
>>> x = rng.integers(0, 4, 4000)
>>> real = Table({"x": x, "y": x, "z": rng.integers(0, 4, 4000)}, domain)
>>> score = kmarginal_score(real.take(np.arange(2000)), real, rng, ways=2)
>>> 0.3 < score.equivalent_fraction < 0.8      # half of the data: as faithful as about half
True
>>> pairs = association_differences(real, real)
>>> pairs.mean_difference
0.0
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from safeshare.data.table import Table
from safeshare.engine import CountingEngine, default_engine
from safeshare.evaluate.utility import DENSE_CELLS, table_tvd, tvd

FRACTIONS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9)
MAX_MARGINALS = 200


@dataclass(frozen=True)
class KMarginalScore:
    """The release's mean k-way TVD placed on the curve of real subsamples."""

    ways: int
    marginals: int
    release_tvd: float
    score: float
    curve: tuple[tuple[float, float], ...]
    equivalent_fraction: float

    @property
    def reading(self) -> str:
        f = self.equivalent_fraction
        if f <= self.curve[0][0]:
            where = f"less faithful than a {self.curve[0][0]:.0%} subsample of the real data"
        elif f >= self.curve[-1][0]:
            where = f"more faithful than a {self.curve[-1][0]:.0%} subsample of the real data"
        else:
            where = f"as faithful as a {f:.0%} subsample of the real data"
        return (
            f"{self.ways}-way marginals: {where} (k-marginal score {self.score:.0f}/1000, "
            f"mean TVD {self.release_tvd:.3f})"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "ways": self.ways,
            "marginals": self.marginals,
            "release_mean_tvd": self.release_tvd,
            "score": self.score,
            "equivalent_subsample_fraction": self.equivalent_fraction,
            "subsample_curve": [{"fraction": f, "mean_tvd": t} for f, t in self.curve],
            "reading": self.reading,
        }


@dataclass(frozen=True)
class AssociationDifferences:
    """Cramer's V per pair of columns in the real data and in the release."""

    pairs: tuple[tuple[str, str, float, float], ...]

    @property
    def mean_difference(self) -> float:
        return float(np.mean([abs(a - b) for _, _, a, b in self.pairs])) if self.pairs else 0.0

    @property
    def max_difference(self) -> float:
        return float(max((abs(a - b) for _, _, a, b in self.pairs), default=0.0))

    def to_dict(self, top: int = 10) -> dict[str, Any]:
        worst = sorted(self.pairs, key=lambda p: -abs(p[2] - p[3]))[:top]
        return {
            "measure": "Cramer's V",
            "pairs": len(self.pairs),
            "mean_abs_difference": self.mean_difference,
            "max_abs_difference": self.max_difference,
            "largest": [
                {"columns": [a, b], "real": r, "release": s, "difference": s - r}
                for a, b, r, s in worst
            ],
        }


def kmarginal_score(
    release: Table,
    real: Table,
    rng: np.random.Generator,
    *,
    ways: int = 2,
    repeats: int = 2,
    engine: CountingEngine | None = None,
) -> KMarginalScore:
    """The release's k-way fidelity, calibrated on subsamples of ``real``."""
    engine = engine or default_engine()
    ways = max(1, min(ways, len(real.columns)))
    subsets = _subsets(real.columns, ways, rng)
    dense = {
        tuple(s): engine.counts(real, s) for s in subsets if real.domain.size(s) <= DENSE_CELLS
    }

    def distance(table: Table, columns: list[str]) -> float:
        counts = dense.get(tuple(columns))
        if counts is None:
            return table_tvd(table, real, columns)
        return tvd(engine.counts(table, columns), counts)

    def mean_tvd(table: Table) -> float:
        return float(np.mean([distance(table, s) for s in subsets]))

    release_tvd = mean_tvd(release)
    curve = []
    for fraction in FRACTIONS:
        size = max(1, round(fraction * len(real)))
        values = [
            mean_tvd(real.take(rng.choice(len(real), size=size, replace=False)))
            for _ in range(repeats)
        ]
        curve.append((fraction, float(np.mean(values))))
    return KMarginalScore(
        ways,
        len(subsets),
        release_tvd,
        1000 * (1 - release_tvd),
        tuple(curve),
        _equivalent(release_tvd, curve),
    )


def association_differences(
    release: Table, real: Table, engine: CountingEngine | None = None
) -> AssociationDifferences:
    """Cramer's V of every pair of columns, real vs release."""
    engine = engine or default_engine()
    pairs = []
    for a, b in itertools.combinations(real.columns, 2):
        if real.domain.size([a, b]) > 1 << 22:
            continue
        pairs.append(
            (
                a,
                b,
                cramers_v(engine.counts(real, [a, b])),
                cramers_v(engine.counts(release, [a, b])),
            )
        )
    return AssociationDifferences(tuple(pairs))


def cramers_v(counts: np.ndarray) -> float:
    """Cramer's V of a 2-way contingency table (empty rows and columns ignored)."""
    table = counts[counts.sum(axis=1) > 0][:, counts.sum(axis=0) > 0].astype(float)
    n = table.sum()
    r, c = table.shape
    if n == 0 or min(r, c) < 2:
        return 0.0
    expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / n
    chi2 = float(np.sum((table - expected) ** 2 / expected))
    return math.sqrt(chi2 / (n * (min(r, c) - 1)))


def _equivalent(value: float, curve: list[tuple[float, float]]) -> float:
    """The subsample fraction whose mean TVD equals ``value`` (log-linear interpolation)."""
    fractions = np.log([f for f, _ in curve])
    tvds = np.array([t for _, t in curve])
    if value >= tvds[0]:
        return curve[0][0] * min(1.0, tvds[0] / max(value, 1e-12))
    if value <= tvds[-1]:
        return curve[-1][0] if value > 0 else 1.0
    order = np.argsort(tvds)
    return float(np.exp(np.interp(value, tvds[order], fractions[order])))


def _subsets(columns: tuple[str, ...], k: int, rng: np.random.Generator) -> list[list[str]]:
    every = list(itertools.combinations(columns, k))
    if len(every) > MAX_MARGINALS:
        picked = rng.choice(len(every), size=MAX_MARGINALS, replace=False)
        every = [every[i] for i in sorted(picked)]
    return [list(s) for s in every]
