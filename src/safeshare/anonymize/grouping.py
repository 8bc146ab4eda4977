"""The group-by under every roll-up: rows with integer keys, summed per key.

Keys lie in a space ``[0, space)``.  Where the space is small next to the number of rows the
keys are counted in it directly (``bincount``); else they are first relabelled densely, by
marking the keys present in the space or, for very large spaces, by a sort.  An engine would
implement :func:`group_rows` as ``SELECT key, any(row), sum(w) ... GROUP BY key``.

>>> import numpy as np
>>> where, (sums,) = group_rows(np.array([2, 0, 2, 1]), 3, [np.array([1, 1, 1, 1])])
>>> where.tolist(), sums.tolist()
([1, 3, 2], [1.0, 1.0, 2.0])
>>> relabel(np.array([7, 3, 7]) * 10**12, 10**13)
(array([1, 0, 1]), 2)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

_DENSE_FACTOR, _DENSE_MIN = 4, 1 << 12  # keys are counted in spaces up to 4n + 4096
_MARK_FACTOR, _MARK_MIN = 64, 1 << 18  # and relabelled by marking up to 64n + 2**18
KEY_LIMIT = 1 << 62  # integer keys stay below this (else they are relabelled densely)


def dense_limit(rows: int) -> int:
    """The largest key space that ``rows`` keys are grouped in by counting (else relabelled)."""
    return _DENSE_FACTOR * rows + _DENSE_MIN


def marking_limit(rows: int) -> int:
    """The largest key space that :func:`relabel` relabels ``rows`` keys in by marking (else by
    a sort, several times slower)."""
    return _MARK_FACTOR * rows + _MARK_MIN


def group_rows(
    keys: np.ndarray, space: int, weights: Sequence[np.ndarray], first: bool = True
) -> tuple[np.ndarray | None, list[np.ndarray]]:
    """Group rows by an integer key in ``[0, space)`` and sum weights per group.

    Returns the position of one row of each group (groups in key order; ``None`` unless
    ``first``) and, per array of ``weights`` (1-D, or 2-D with rows first), its sums per
    group.  ``weights[0]`` must be positive (it is the number of records).  Keys in a space
    much larger than their number are relabelled densely first.  This is the search's only
    group-by: an engine implements it as ``SELECT key, any(row), sum(w) ... GROUP BY key``.
    """
    if space > dense_limit(len(keys)):
        keys, space = relabel(keys, space)
    present, sums = group_sums(keys, space, weights)
    return (representatives(keys, space, present) if first else None), sums


_ONE_COUNT = 1 << 22  # (groups x columns) cells counted at once at most
_SPARSE_SHARE = 0.5  # a count matrix is summed by its non-zero cells when at most this share


@dataclass(frozen=True)
class NonZero:
    """A 2-D count matrix by its non-zero cells, for :func:`group_sums` to sum (rows of a fine
    roll-up hold one or two values of a sensitive attribute: a few cells of each row).

    >>> cells = NonZero.of(np.array([[0, 2, 0], [1, 0, 0], [0, 0, 0], [0, 0, 3]]))
    >>> cells.rows.tolist(), cells.columns.tolist(), cells.values.tolist()
    ([0, 1, 3], [1, 0, 2], [2.0, 1.0, 3.0])
    """

    rows: np.ndarray
    columns: np.ndarray
    values: np.ndarray
    width: int

    @classmethod
    def of(cls, matrix: np.ndarray) -> NonZero:
        rows, columns = np.nonzero(matrix)
        values = matrix[rows, columns].astype(np.float64)
        small = np.int32 if max(matrix.shape) < 2**31 else np.intp  # (a source is kept cached)
        return cls(rows.astype(small), columns.astype(small), values, matrix.shape[1])

    @staticmethod
    def worth(matrix: np.ndarray) -> bool:
        """Whether few enough cells of ``matrix`` (2-D) are non-zero to sum it by them."""
        return matrix.ndim == 2 and bool(np.count_nonzero(matrix) <= _SPARSE_SHARE * matrix.size)


def group_sums(
    keys: np.ndarray, space: int, weights: Sequence[np.ndarray | NonZero]
) -> tuple[np.ndarray, list[np.ndarray]]:
    """The keys present (ascending) and each weight's sums per key, by counting in ``space``
    (a :class:`NonZero` matrix is summed by its non-zero cells)."""
    counts = weights[0]
    if isinstance(counts, NonZero):
        raise TypeError("the first weights are the rows' record counts: one number per row")
    total = np.bincount(keys, weights=counts, minlength=space)
    present = np.flatnonzero(total > 0)  # (nonzero on floats is ten times slower)
    sums = [total[present]]
    dense = None
    for w in weights[1:]:
        if isinstance(w, NonZero):
            if dense is None:
                dense = _dense_ids(keys, space, present)
            cells = dense[w.rows] * w.width + w.columns
            flat = np.bincount(cells, weights=w.values, minlength=len(present) * w.width)
            sums.append(flat.reshape(len(present), w.width))
            continue
        width = math.prod(w.shape[1:])
        columns = w.reshape(len(w), width)
        shape = (len(present), *w.shape[1:])
        if width and len(present) * width <= _ONE_COUNT:  # one count over (group, column)
            if dense is None:
                dense = _dense_ids(keys, space, present)
            pairs = (dense[:, None] * width + np.arange(width)).ravel()
            flat = np.bincount(pairs, weights=columns.ravel(), minlength=len(present) * width)
            sums.append(flat.reshape(shape))
            continue
        summed = [
            np.bincount(keys, weights=columns[:, j], minlength=space)[present] for j in range(width)
        ]
        sums.append(np.stack(summed, axis=1).reshape(shape) if summed else np.zeros(shape))
    return present, sums


def _dense_ids(keys: np.ndarray, space: int, present: np.ndarray) -> np.ndarray:
    """Each row's group as an index into ``present``."""
    index = np.empty(space, dtype=np.intp)
    index[present] = np.arange(len(present), dtype=np.intp)
    return index[keys]


def representatives(keys: np.ndarray, space: int, present: np.ndarray) -> np.ndarray:
    """The position of one row of each group ``present`` (any row: they share their labels)."""
    positions = np.empty(space, dtype=np.intp)
    positions[keys] = np.arange(len(keys), dtype=np.intp)
    return positions[present]


def relabel(keys: np.ndarray, space: int) -> tuple[np.ndarray, int]:
    """Dense ids ``0..g-1`` of the ``g`` distinct keys in ``[0, space)``, in key order, and ``g``.

    By marking the keys present in ``space`` where it is not too large; else by a sort (of the
    keys with each row's position packed into the low digits where they fit: a plain sort is
    three times an argsort's speed).
    """
    n = len(keys)
    if n == 0:
        return np.zeros(0, dtype=np.intp), 0
    if space <= marking_limit(n):
        marked = np.zeros(space, dtype=bool)
        marked[keys] = True
        present = np.flatnonzero(marked)
        ids = np.empty(space, dtype=np.intp)
        ids[present] = np.arange(len(present), dtype=np.intp)
        return ids[keys], len(present)
    if space < KEY_LIMIT // n:
        ordered, order = np.divmod(np.sort(keys * n + np.arange(n)), n)
    else:
        order = np.argsort(keys)
        ordered = keys[order]
    step = np.empty(n, dtype=np.intp)
    step[0] = 0
    np.not_equal(ordered[1:], ordered[:-1], out=step[1:], casting="unsafe")
    ids = np.cumsum(step)
    inverse = np.empty(n, dtype=np.intp)
    inverse[order] = ids
    return inverse, int(ids[-1]) + 1
