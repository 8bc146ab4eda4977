"""Utility: how far a release's k-way marginals are from the real data's.

The total-variation distance (TVD) between two tables on a set of columns is half
the L1 distance between their normalised contingency tables: 0 when the
distributions agree, 1 when they share no cell.

>>> import numpy as np
>>> from safeshare.data import Column, Domain, Kind, Table
>>> domain = Domain((Column("a", Kind.CATEGORICAL, categories=("x", "y")),))
>>> left = Table({"a": np.array([0, 0, 1, 1])}, domain)
>>> right = Table({"a": np.array([0, 1, 1, 1])}, domain)
>>> marginal_tvd(left, right, ways=(1,))[0].mean
0.25
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import TypeVar

import numpy as np

from safeshare.data.table import Table
from safeshare.engine import CountingEngine, default_engine
from safeshare.evaluate.results import MarginalDistance

MAX_MARGINALS = 1000
T = TypeVar("T")


def marginal_tvd(
    left: Table,
    right: Table,
    ways: Sequence[int] = (1, 2, 3),
    *,
    engine: CountingEngine | None = None,
    max_marginals: int = MAX_MARGINALS,
    rng: np.random.Generator | None = None,
) -> tuple[MarginalDistance, ...]:
    """Mean and max TVD over all k-way marginals, for each k in ``ways``.

    When there are more than ``max_marginals`` column sets of one order, a uniform
    random subset of that size is measured (``sampled=True``).
    """
    if left.columns != right.columns:
        raise ValueError("tables to compare must have the same columns in the same order")
    engine = engine or default_engine()
    results = []
    for k in ways:
        if k > len(left.columns) or k < 1:
            continue
        subsets = column_subsets(list(left.columns), k, max_marginals, rng)
        distances = [table_tvd(left, right, s, engine) for s in subsets]
        results.append(
            MarginalDistance(
                ways=k,
                mean=float(np.mean(distances)),
                max=float(np.max(distances)),
                marginals=len(distances),
                sampled=len(distances) < math.comb(len(left.columns), k),
            )
        )
    return tuple(results)


DENSE_CELLS = 1 << 22
"""Above this many cells a marginal is compared on the cells the tables hold, not densely."""


def table_tvd(
    left: Table, right: Table, columns: Sequence[str], engine: CountingEngine | None = None
) -> float:
    """The TVD of two tables on ``columns``: dense counts through ``engine`` where the
    contingency table is small, else over the distinct cells either table holds (a marginal of
    fine numeric columns can have billions of cells and a few thousand held).

    >>> from safeshare.data import Domain
    >>> domain = Domain.from_sizes({"a": 5000, "b": 5000})
    >>> left = Table({"a": np.array([0, 1, 2, 3]), "b": np.array([0, 0, 9, 9])}, domain)
    >>> right = Table({"a": np.array([0, 1, 2, 4]), "b": np.array([0, 0, 9, 9])}, domain)
    >>> table_tvd(left, right, ["a", "b"])
    0.25
    """
    if left.domain.size(columns) <= DENSE_CELLS:
        engine = engine or default_engine()
        return tvd(engine.counts(left, columns), engine.counts(right, columns))
    shape = left.domain.shape(columns)
    keys = [np.ravel_multi_index(tuple(t.column(c) for c in columns), shape) for t in (left, right)]
    cells = np.unique(np.concatenate(keys))
    a, b = (np.bincount(np.searchsorted(cells, k), minlength=len(cells)) for k in keys)
    return tvd(a, b)


def tvd(a: np.ndarray, b: np.ndarray) -> float:
    """Total-variation distance between two count arrays of the same shape."""
    sa, sb = a.sum(), b.sum()
    if sa == 0 or sb == 0:
        return 0.0 if sa == sb else 1.0
    return 0.5 * float(np.abs(a / sa - b / sb).sum())


def column_subsets(
    columns: Sequence[T], k: int, limit: int, rng: np.random.Generator | None
) -> list[list[T]]:
    """Every set of ``k`` of ``columns``, or a uniform sample of ``limit`` of them (with ``rng``)."""
    total = math.comb(len(columns), k)
    if total <= limit:
        return [list(s) for s in itertools.combinations(columns, k)]
    if rng is None:
        raise ValueError(
            f"{total} {k}-way marginals exceed the limit {limit}; pass rng to sample them"
        )
    chosen: set[tuple[int, ...]] = set()
    while len(chosen) < limit:
        chosen.add(tuple(sorted(rng.choice(len(columns), size=k, replace=False).tolist())))
    return [[columns[i] for i in s] for s in sorted(chosen)]
