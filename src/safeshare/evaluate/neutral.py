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

import numpy as np
import pandas as pd

from safeshare.evaluate.results import MarginalDistance, UtilityResult
from safeshare.evaluate.utility import MAX_MARGINALS, column_subsets

NUMERIC_SHARE = 0.95  # a column is numeric when more than this share of its values are numbers
MIN_DISTINCT_TO_CUT = 20  # numeric columns with this many distinct values are cut at quantiles
QUANTILE_BINS = 10
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
    left, right, names = neutral_cells(real, released, bins)
    if ways < 1 or ways > len(names):
        raise ValueError(f"cannot score {ways}-way marginals of {len(names)} shared column(s)")
    limit = max_marginals or math.comb(len(names), ways)
    subsets = column_subsets(list(range(len(names))), ways, limit, rng)
    distances = [_tvd(left, right, subset) for subset in subsets]
    return MarginalDistance(
        ways=ways,
        mean=float(np.mean(distances)),
        max=float(np.max(distances)),
        marginals=len(distances),
        sampled=len(distances) < math.comb(len(names), ways),
    )


def value_utility(
    released: pd.DataFrame,
    train: pd.DataFrame,
    holdout: pd.DataFrame | None,
    rng: np.random.Generator,
    ways: Sequence[int] = (1, 2, 3),
) -> UtilityResult:
    """The neutral scorer's figures for a release, against train and holdout values, with
    train against holdout as the floor sampling alone gives, and against both together (the
    input as read; see :class:`UtilityResult`)."""
    orders = [k for k in ways if k <= len(released.columns)]

    def score(real: pd.DataFrame, other: pd.DataFrame) -> tuple[MarginalDistance, ...]:
        return tuple(
            neutral_tvd(real, other, k, max_marginals=MAX_MARGINALS, rng=rng) for k in orders
        )

    if holdout is None or holdout.empty:
        return UtilityResult(score(train, released), vs_input=score(train, released))
    both = pd.concat([train, holdout], ignore_index=True)
    return UtilityResult(
        score(train, released),
        score(holdout, released),
        score(holdout, train),
        score(both, released),
    )


def column_distances(real: pd.DataFrame, released: pd.DataFrame) -> dict[str, float]:
    """Each shared column's 1-way TVD by the neutral rules, by name."""
    left, right, names = neutral_cells(real, released)
    return {name: _tvd(left, right, [i]) for i, name in enumerate(names)}


def neutral_cells(
    real: pd.DataFrame, released: pd.DataFrame, bins: int = QUANTILE_BINS
) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Both tables as integer cells (rows x shared columns; one code space per column)."""
    names = [str(c) for c in real.columns if c in released.columns]
    if not names:
        raise ValueError("the two tables share no column")
    left = np.empty((len(real), len(names)), dtype=np.int64)
    right = np.empty((len(released), len(names)), dtype=np.int64)
    for i, name in enumerate(names):
        left[:, i], right[:, i] = _column_cells(real[name], released[name], bins)
    return left, right, names


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


def _tvd(left: np.ndarray, right: np.ndarray, columns: Sequence[int]) -> float:
    if len(left) == 0 or len(right) == 0:
        return 0.0 if len(left) == len(right) else 1.0
    both = np.concatenate([left[:, columns], right[:, columns]])
    in_cell = (both != _NO_CELL).all(axis=1)
    from_left = in_cell[: len(left)].sum()
    both = both[in_cell]
    if both.size == 0:
        return 0.0
    both -= both.min(axis=0)  # cells from 0 (a missing number's cell is -1)
    sizes = both.max(axis=0) + 1
    if np.prod(sizes.astype(float)) < 2**62:  # one integer per cell, read in mixed radix
        strides = np.concatenate([np.cumprod(sizes[::-1])[::-1][1:], [1]])
        keys = both @ strides
    else:
        keys = np.unique(both, axis=0, return_inverse=True)[1].reshape(-1)
    _, cells = np.unique(keys, return_inverse=True)
    n_cells = int(cells.max()) + 1
    p = np.bincount(cells[:from_left], minlength=n_cells) / len(left)
    q = np.bincount(cells[from_left:], minlength=n_cells) / len(right)
    return 0.5 * float(np.abs(p - q).sum())
