"""Per-record uniqueness and correctness from a Gaussian copula (Rocher, Hendrickx & de Montjoye,
Nature Communications 10:3069, 2019): "could someone pick *me* out?".

The population is modelled by the table's own marginal frequencies joined by a Gaussian
copula (correlations of the columns' normal scores).  A record ``x`` has probability ``p(x)``
of its combination of quasi-identifiers; in a population of ``N``:

* its **uniqueness** ``xi = (1 - p) ** (N - 1)``: the chance nobody else shares its values;
* its **correctness** ``kappa = (1 - (1 - p) ** N) / (N p)``: the chance that a match on these
  values is really this person.

``p(x)`` is the Gaussian probability of a box (one interval per column, the slice of the
normal scale that the record's code occupies), estimated with the GHK simulator
(Geweke-Hajivassiliou-Keane), which keeps its relative accuracy for tiny probabilities.

>>> import numpy as np
>>> from safeshare.data import Column, Domain, Kind, Table
>>> domain = Domain((Column("a", Kind.CATEGORICAL, categories=("x", "y")),))
>>> table = Table({"a": np.array([0] * 90 + [1] * 10)}, domain)
>>> result = copula_uniqueness(table, ["a"], np.random.default_rng(0), population_size=100)
>>> round(float(result.probability.min()), 3)   # the rarer value: p = 0.1
0.1
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy import special

from safeshare.data.table import Table
from safeshare.engine import CountingEngine, default_engine

THREAT = (
    "Someone who knows a few facts about you (the quasi-identifiers) and finds one matching "
    "record: how likely is it that the match is really you?"
)
_EDGE = 1e-12


@dataclass(frozen=True)
class CopulaResult:
    """Per-record uniqueness and correctness for a sample of the table's records."""

    columns: tuple[str, ...]
    population_size: int
    probability: np.ndarray = field(repr=False)
    uniqueness: np.ndarray = field(repr=False)
    correctness: np.ndarray = field(repr=False)

    @property
    def likely_identified(self) -> float:
        """Share of records whose correctness exceeds one half."""
        return float(np.mean(self.correctness > 0.5))

    @property
    def reading(self) -> str:
        return (
            f"in a population of {self.population_size:,}, a record is unique on these "
            f"{len(self.columns)} quasi-identifier(s) with probability {np.mean(self.uniqueness):.1%} "
            f"on average; a match is more likely than not to be correct for "
            f"{self.likely_identified:.1%} of records"
        )

    def to_dict(self) -> dict[str, Any]:
        quantiles = [0.1, 0.25, 0.5, 0.75, 0.9]
        return {
            "quasi_identifiers": list(self.columns),
            "population_size": self.population_size,
            "records_scored": len(self.uniqueness),
            "mean_uniqueness": float(np.mean(self.uniqueness)),
            "mean_correctness": float(np.mean(self.correctness)),
            "share_correctness_above_half": self.likely_identified,
            "correctness_quantiles": {
                str(q): float(v)
                for q, v in zip(quantiles, np.quantile(self.correctness, quantiles), strict=True)
            },
            "reading": self.reading,
            "threat": THREAT,
        }


def copula_uniqueness(
    table: Table,
    columns: Sequence[str],
    rng: np.random.Generator,
    *,
    population_size: int | None = None,
    max_records: int = 1000,
    draws: int = 256,
    engine: CountingEngine | None = None,
) -> CopulaResult:
    """Uniqueness and correctness of up to ``max_records`` records sampled from ``table``."""
    if not columns:
        raise ValueError("the copula model needs at least one quasi-identifier column")
    if len(table) == 0:
        raise ValueError("the table has no records")
    engine = engine or default_engine()
    population = population_size or len(table)
    cdfs = [_cumulative(engine.counts(table, [c]).astype(float)) for c in columns]
    codes = table.matrix(list(columns))
    scores = np.column_stack(
        [
            special.ndtri(np.clip((cdf[c] + cdf[c + 1]) / 2, _EDGE, 1 - _EDGE))
            for cdf, c in zip(cdfs, codes.T, strict=True)
        ]
    )
    correlation = _nearest_correlation(_correlation(scores))
    chosen = codes
    if len(codes) > max_records:
        chosen = codes[rng.choice(len(codes), size=max_records, replace=False)]
    lower = np.column_stack(
        [special.ndtri(np.clip(cdf[c], 0, 1)) for cdf, c in zip(cdfs, chosen.T, strict=True)]
    )
    upper = np.column_stack(
        [special.ndtri(np.clip(cdf[c + 1], 0, 1)) for cdf, c in zip(cdfs, chosen.T, strict=True)]
    )
    p = box_probability(lower, upper, correlation, rng, draws=draws)
    p = np.clip(p, 1e-300, 1.0)
    uniqueness = np.exp((population - 1) * np.log1p(-np.minimum(p, 1 - 1e-16)))
    correctness = -np.expm1(population * np.log1p(-np.minimum(p, 1 - 1e-16))) / (population * p)
    return CopulaResult(tuple(columns), population, p, uniqueness, np.minimum(correctness, 1.0))


def box_probability(
    lower: np.ndarray,
    upper: np.ndarray,
    correlation: np.ndarray,
    rng: np.random.Generator,
    *,
    draws: int = 256,
) -> np.ndarray:
    """``P(lower < Z < upper)`` per row for ``Z ~ N(0, correlation)``, by the GHK simulator."""
    chol = np.linalg.cholesky(correlation)
    n, d = lower.shape
    weight = np.ones((n, draws))
    shocks = np.zeros((n, draws, d))
    uniforms = rng.random((n, draws, d))
    for j in range(d):
        shift = shocks[:, :, :j] @ chol[j, :j] if j else np.zeros((n, draws))
        lo = special.ndtr((lower[:, j : j + 1] - shift) / chol[j, j])
        hi = special.ndtr((upper[:, j : j + 1] - shift) / chol[j, j])
        mass = np.maximum(hi - lo, 0.0)
        weight *= mass
        point = np.clip(lo + uniforms[:, :, j] * mass, _EDGE, 1 - _EDGE)
        shocks[:, :, j] = special.ndtri(point)
    return np.asarray(weight.mean(axis=1))


def _cumulative(counts: np.ndarray) -> np.ndarray:
    """``cdf[c]`` is the share of records with a code below ``c`` (length size + 1)."""
    total = counts.sum()
    return (
        np.concatenate([[0.0], np.cumsum(counts) / total])
        if total
        else np.linspace(0, 1, len(counts) + 1)
    )


def _correlation(scores: np.ndarray) -> np.ndarray:
    """Pearson correlation of the columns; a constant column is uncorrelated with the rest."""
    centred = scores - scores.mean(axis=0)
    spread = np.sqrt((centred**2).sum(axis=0))
    constant = spread == 0
    unit = centred / np.where(constant, 1.0, spread)
    matrix = unit.T @ unit
    matrix[constant, :] = 0.0
    matrix[:, constant] = 0.0
    np.fill_diagonal(matrix, 1.0)
    return np.atleast_2d(matrix)


def _nearest_correlation(matrix: np.ndarray) -> np.ndarray:
    """A positive-definite correlation matrix close to ``matrix`` (eigenvalues floored)."""
    matrix = np.nan_to_num(matrix, nan=0.0)
    np.fill_diagonal(matrix, 1.0)
    values, vectors = np.linalg.eigh((matrix + matrix.T) / 2)
    fixed = vectors @ np.diag(np.maximum(values, 1e-6)) @ vectors.T
    scale = np.sqrt(np.diag(fixed))
    return np.asarray(fixed / np.outer(scale, scale))
