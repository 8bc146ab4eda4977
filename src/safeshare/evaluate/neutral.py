"""The neutral scorer: how far a released table is from the real one, read on its values.

A release's own codes hide what an analyst sees (a column collapsed to one code
scores a perfect 0 there), so utility is also measured the way anyone holding the
two files would, with rules that know nothing of the release:

* the columns both tables have, in the real table's order;
* a column whose real values are more than 95% numbers, with at least 20 distinct
  numbers, is cut at the real data's deciles (outer edges open, each cell closed
  on the right); a missing or non-numeric value is a cell of its own;
* any other column that is more than 95% numbers is compared by numeric value
  (13 equals 13.0);
* every other column by its text, stripped of surrounding blanks; a missing text value
  falls in no cell (its record still counts in the table's size, as the reference
  counts it under pandas 3);
* each marginal scores half the L1 distance between the two tables' cell shares,
  over the union of their cells; a k-way figure is the mean (and max) over every
  set of k columns.

``../shared/tools/neutral_tvd.py`` is the reference these rules come from; the
tests check that both give the same figures on the same files.

>>> import pandas as pd
>>> real = pd.DataFrame({"age": ["30", "40"] * 10, "sex": ["F", "M"] * 10})
>>> copy = pd.DataFrame({"age": [30.0, 40.0] * 10, "sex": ["F", "M"] * 10})
>>> neutral_tvd(real, copy, ways=2).mean
0.0
>>> shuffled = pd.DataFrame({"age": [30, 40] * 10, "sex": ["M", "F"] * 10})
>>> neutral_tvd(real, shuffled, ways=2).mean, neutral_tvd(real, shuffled, ways=1).mean
(1.0, 0.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from safeshare.evaluate.results import MarginalDistance, UtilityResult
from safeshare.evaluate.utility import MAX_MARGINALS, column_subsets

NUMERIC_SHARE = 0.95  # a column is numeric when more than this share of its values are numbers
MIN_DISTINCT_TO_CUT = 20  # numeric columns with this many distinct values are cut at quantiles
QUANTILE_BINS = 10
DENSE_CELLS = 1 << 22  # marginals with at most this many cells are counted without sorting
_NO_CELL = -(2**40)  # a missing text value: in no cell of any marginal


def neutral_tvd(
    real: pd.DataFrame,
    released: pd.DataFrame,
    ways: int = 3,
    *,
    bins: int = QUANTILE_BINS,
    max_marginals: int | None = None,
    rng: np.random.Generator | None = None,
) -> MarginalDistance:
    """Mean and max TVD over every ``ways``-column marginal, by the rules above (over a uniform
    sample of ``max_marginals`` of them when there are more, drawn with ``rng``)."""
    return _Cells.of(real, released, bins).distance(ways, max_marginals, rng)


def value_utility(
    released: pd.DataFrame,
    train: pd.DataFrame,
    holdout: pd.DataFrame | None,
    rng: np.random.Generator,
    ways: Sequence[int] = (1, 2, 3),
) -> UtilityResult:
    """The neutral scorer's figures for a release, against train and holdout values, with
    train against holdout as the floor sampling alone gives, the training records with each
    column shuffled on its own against holdout as the baseline a release must beat, and
    against both together (the input as read; see :class:`UtilityResult`)."""
    orders = [k for k in ways if k <= len(released.columns)]

    def score(real: pd.DataFrame, other: pd.DataFrame) -> tuple[MarginalDistance, ...]:
        cells = _Cells.of(real, other, QUANTILE_BINS)
        return tuple(cells.distance(k, MAX_MARGINALS, rng) for k in orders)

    if holdout is None or holdout.empty:
        return UtilityResult(score(train, released), vs_input=score(train, released))
    both = pd.concat([train, holdout], ignore_index=True)
    shuffled = pd.DataFrame({c: rng.permutation(train[c].to_numpy()) for c in train.columns})
    return UtilityResult(
        score(train, released),
        score(holdout, released),
        score(holdout, train),
        score(both, released),
        independent=score(holdout, shuffled),
    )


def column_distances(real: pd.DataFrame, released: pd.DataFrame) -> dict[str, float]:
    """Each shared column's 1-way TVD by the neutral rules, by name."""
    cells = _Cells.of(real, released, QUANTILE_BINS)
    return {name: cells.tvd([i]) for i, name in enumerate(cells.names)}


@dataclass(frozen=True)
class _Cells:
    """Both tables as cells: one column of codes per shared column, 0 .. size-1 (-1: a missing
    text value, in no cell), in one code space per column."""

    left: np.ndarray
    right: np.ndarray
    sizes: tuple[int, ...]
    names: list[str]

    @classmethod
    def of(cls, real: pd.DataFrame, released: pd.DataFrame, bins: int) -> _Cells:
        names = [str(c) for c in real.columns if c in released.columns]
        if not names:
            raise ValueError("the two tables share no column")
        left = np.empty((len(real), len(names)), dtype=np.int64)
        right = np.empty((len(released), len(names)), dtype=np.int64)
        sizes = []
        for i, name in enumerate(names):
            a, b = _column_cells(real[name], released[name], bins)
            low = min(int(a[a != _NO_CELL].min(initial=0)), int(b[b != _NO_CELL].min(initial=0)))
            left[:, i] = np.where(a == _NO_CELL, -1, a - low)
            right[:, i] = np.where(b == _NO_CELL, -1, b - low)
            sizes.append(max(int(left[:, i].max(initial=0)), int(right[:, i].max(initial=0))) + 1)
        return cls(left, right, tuple(sizes), names)

    def distance(
        self, ways: int, max_marginals: int | None, rng: np.random.Generator | None
    ) -> MarginalDistance:
        if ways < 1 or ways > len(self.names):
            raise ValueError(f"cannot score {ways}-way marginals of {len(self.names)} column(s)")
        total = math.comb(len(self.names), ways)
        subsets = column_subsets(list(range(len(self.names))), ways, max_marginals or total, rng)
        distances = [self.tvd(subset) for subset in subsets]
        return MarginalDistance(
            ways=ways,
            mean=float(np.mean(distances)),
            max=float(np.max(distances)),
            marginals=len(distances),
            sampled=len(distances) < total,
        )

    def tvd(self, columns: Sequence[int]) -> float:
        """Half the L1 distance between the two tables' shares of each cell of ``columns``."""
        n_left, n_right = len(self.left), len(self.right)
        if n_left == 0 or n_right == 0:
            return 0.0 if n_left == n_right else 1.0
        product = math.prod(self.sizes[c] for c in columns)
        left, right = self._keys(self.left, columns), self._keys(self.right, columns)
        if product <= DENSE_CELLS:
            n_cells = product
        else:  # sparse: number the cells that occur
            keys, inverse = np.unique(np.concatenate([left, right]), return_inverse=True)
            left, right = inverse[: len(left)], inverse[len(left) :]
            n_cells = len(keys)
        p = np.bincount(left, minlength=n_cells) / n_left
        q = np.bincount(right, minlength=n_cells) / n_right
        return 0.5 * float(np.abs(p - q).sum())

    def _keys(self, codes: np.ndarray, columns: Sequence[int]) -> np.ndarray:
        """One integer per cell (mixed radix), for the rows in a cell of every column."""
        keys = np.zeros(len(codes), dtype=np.int64)
        in_cell = np.ones(len(codes), dtype=bool)
        for c in columns:
            keys = keys * self.sizes[c] + codes[:, c]
            in_cell &= codes[:, c] >= 0
        return keys if in_cell.all() else keys[in_cell]


def _column_cells(real: pd.Series, released: pd.Series, bins: int) -> tuple[np.ndarray, np.ndarray]:
    real_numbers = _numbers(real)
    numeric = np.mean(~np.isnan(real_numbers)) > NUMERIC_SHARE
    if numeric and len(np.unique(real_numbers[~np.isnan(real_numbers)])) >= MIN_DISTINCT_TO_CUT:
        edges = np.unique(np.nanquantile(real_numbers, np.linspace(0, 1, bins + 1)))
        edges[0], edges[-1] = -np.inf, np.inf
        return _cut(real_numbers, edges), _cut(_numbers(released), edges)
    if numeric:
        return _codes(real_numbers.astype(object), _numbers(released).astype(object))
    left, right = _codes(_text(real), _text(released))
    return (
        np.where(real.isna().to_numpy(), _NO_CELL, left),
        np.where(released.isna().to_numpy(), _NO_CELL, right),
    )


def _numbers(values: pd.Series) -> np.ndarray:
    if values.dtype == object or pd.api.types.is_string_dtype(values.dtype):
        values = values.astype("string").str.strip()
    return pd.to_numeric(values, errors="coerce").to_numpy(dtype=float, na_value=np.nan)


def _text(values: pd.Series) -> np.ndarray:
    return values.astype("string").str.strip().fillna("").to_numpy(dtype=object)


def _cut(numbers: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The cell (a, b] of each number; -1 for a missing one."""
    cells = np.searchsorted(edges, numbers, side="left") - 1
    return np.where(np.isnan(numbers), -1, cells)


def _codes(left: np.ndarray, right: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One code per distinct value over both sides (NaN is one value)."""
    both = pd.Series(np.concatenate([left, right]), dtype=object)
    codes, _ = pd.factorize(both, use_na_sentinel=False)
    return codes[: len(left)], codes[len(left) :]
