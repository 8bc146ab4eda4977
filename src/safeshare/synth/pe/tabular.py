"""Tabular PE without a model: the public Domain is the random API, mutations the variation API.

:class:`DomainAPI` draws each column uniformly over its codes (the Domain is public: no
private fact enters) and varies a sample by re-drawing a few of its columns (as in
Tab-PE): a categorical column takes a uniform code, an ordered one (ordinal, numeric,
datetime bins) steps to a nearby bin.  ``degree`` is the share of columns changed.
:class:`TabularEmbedder` encodes codes as vectors: one-hot (scaled by 1/sqrt(2), so a
mismatch adds 1 to the squared distance) for categorical columns, the bin's position in
[0, 1] for ordered ones.

>>> import numpy as np
>>> from safeshare.data import Domain
>>> domain = Domain.from_sizes({"a": 3, "b": 2})
>>> samples = DomainAPI(domain).random(4, np.random.default_rng(0))
>>> list(samples.columns), samples.shape
(['a', 'b'], (4, 2))
>>> TabularEmbedder(domain).embed(samples).shape
(4, 5)
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import numpy as np
import pandas as pd

from safeshare.data.domain import Column, Domain, Kind
from safeshare.errors import InputError

ORDERED = (Kind.ORDINAL, Kind.NUMERIC, Kind.DATETIME)


def _ordered(column: Column, ordinal: frozenset[str]) -> bool:
    return column.kind in ORDERED or column.name in ordinal


def _codes(samples: pd.DataFrame, domain: Domain) -> np.ndarray:
    missing = [c for c in domain.names if c not in samples.columns]
    if missing:
        raise InputError(f"samples lack the column(s) {missing} of the domain")
    codes = samples[list(domain.names)].to_numpy()
    if not np.issubdtype(codes.dtype, np.integer):
        raise InputError("tabular samples must be integer codes of the domain")
    sizes = np.array(domain.shape())
    bad = np.flatnonzero(((codes < 0) | (codes >= sizes)).any(axis=0))
    if bad.size:
        raise InputError(
            f"column {domain.names[bad[0]]!r} has codes outside 0..{sizes[bad[0]] - 1}; "
            "encode the data with this domain"
        )
    return codes.astype(np.int64, copy=False)


class DomainAPI:
    """Random and variation APIs over a public Domain (``ordinal``: columns whose codes are
    ordered although the Domain says categorical, e.g. binned numbers coded as integers)."""

    def __init__(self, domain: Domain, ordinal: Iterable[str] = (), crossover: float = 0.5) -> None:
        self.domain = domain
        self.ordinal = frozenset(ordinal)
        self.crossover = crossover
        unknown = sorted(self.ordinal - set(domain.names))
        if unknown:
            raise InputError(f"ordinal column(s) {unknown} are not in the domain")
        if not 0 <= crossover <= 1:
            raise InputError(f"crossover must lie in [0, 1], got {crossover}")

    def random(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        """``n`` samples, each column uniform over its codes."""
        return pd.DataFrame(
            {c.name: rng.integers(0, c.size, size=n) for c in self.domain},
            columns=self.domain.names,
        )

    def vary(self, samples: pd.DataFrame, degree: float, rng: np.random.Generator) -> pd.DataFrame:
        """Each row with ``max(1, round(degree * columns))`` of its columns re-drawn."""
        if not 0 < degree <= 1:
            raise InputError(f"degree must lie in (0, 1], got {degree}")
        codes = _codes(samples, self.domain).copy()
        n, d = codes.shape
        changes = max(1, round(degree * d))
        # the columns each row changes: the first `changes` of a random permutation per row
        picked = np.argsort(rng.random((n, d)), axis=1)[:, :changes]
        mask = np.zeros((n, d), dtype=bool)
        np.put_along_axis(mask, picked, True, axis=1)
        donors = codes.copy()  # the selected samples, before any change
        for j, column in enumerate(self.domain):
            rows = np.flatnonzero(mask[:, j])
            if rows.size == 0:
                continue
            crossed = rng.random(rows.size) < self.crossover
            codes[rows[crossed], j] = donors[rng.integers(0, n, size=int(crossed.sum())), j]
            rows = rows[~crossed]
            size = column.size
            if _ordered(column, self.ordinal):
                reach = max(1, math.ceil(degree * size / 4))
                step = rng.integers(1, reach + 1, size=rows.size) * rng.choice([-1, 1], rows.size)
                codes[rows, j] = np.clip(codes[rows, j] + step, 0, size - 1)
            else:
                codes[rows, j] = rng.integers(0, size, size=rows.size)
        return pd.DataFrame(codes, columns=list(self.domain.names))


class TabularEmbedder:
    """Mixed-type vectors for integer codes; every column adds at most 1 to a squared distance."""

    def __init__(self, domain: Domain, ordinal: Iterable[str] = ()) -> None:
        self.domain = domain
        self.ordinal = frozenset(ordinal)
        unknown = sorted(self.ordinal - set(domain.names))
        if unknown:
            raise InputError(f"ordinal column(s) {unknown} are not in the domain")

    @property
    def dimensions(self) -> int:
        return sum(1 if _ordered(c, self.ordinal) else c.size for c in self.domain)

    def embed(self, samples: pd.DataFrame) -> np.ndarray:
        """One float32 row per sample."""
        codes = _codes(samples, self.domain)
        out = np.zeros((len(codes), self.dimensions), dtype=np.float32)
        at = 0
        for j, column in enumerate(self.domain):
            if _ordered(column, self.ordinal):
                out[:, at] = codes[:, j] / max(column.size - 1, 1)
                at += 1
            else:
                out[np.arange(len(codes)), at + codes[:, j]] = 1 / math.sqrt(2)
                at += column.size
        return out
