"""Small helpers for arrays indexed by named attributes (the axes of a marginal).

>>> import numpy as np
>>> table = np.arange(6.0).reshape(2, 3)            # axes ("a", "b")
>>> sum_to(table, ("a", "b"), ("b",)).tolist()
[3.0, 5.0, 7.0]
>>> expand_to(np.array([1.0, 2.0, 3.0]), ("b",), ("a", "b")).shape
(1, 3)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

_STAGED_SUM_CELLS = 1 << 16  # arrays from this size sum out several axes one at a time


def sum_to(values: np.ndarray, attrs: Sequence[str], keep: Sequence[str]) -> np.ndarray:
    """Sum out the axes not in ``keep``; the result's axes follow ``keep``'s order."""
    drop = tuple(i for i, a in enumerate(attrs) if a not in keep)
    summed = values
    if len(drop) > 1 and values.size >= _STAGED_SUM_CELLS:
        # one axis at a time, largest first: numpy's multi-axis reduce is slower on big arrays
        left = list(attrs)
        for axis in sorted(drop, key=lambda i: -values.shape[i]):
            summed = summed.sum(axis=left.index(attrs[axis]))
            left.remove(attrs[axis])
    elif drop:
        summed = values.sum(axis=drop)
    remaining = [a for a in attrs if a in keep]
    if list(keep) == remaining:
        return summed
    return np.transpose(summed, [remaining.index(a) for a in keep])


def expand_to(values: np.ndarray, attrs: Sequence[str], target: Sequence[str]) -> np.ndarray:
    """A view of ``values`` (axes ``attrs``) that broadcasts against arrays with axes ``target``."""
    present = [a for a in target if a in attrs]
    if list(attrs) != present:
        values = np.transpose(values, [list(attrs).index(a) for a in present])
    shape = [values.shape[present.index(a)] if a in attrs else 1 for a in target]
    return values.reshape(shape)


def multiply(
    left: np.ndarray, left_attrs: Sequence[str], right: np.ndarray, right_attrs: Sequence[str]
) -> tuple[np.ndarray, tuple[str, ...]]:
    """The product of two arrays on the union of their axes (left's axes first).

    >>> product, attrs = multiply(np.ones(2), ("a",), np.arange(3.0), ("b",))
    >>> attrs, product.shape
    (('a', 'b'), (2, 3))
    """
    union = tuple(left_attrs) + tuple(a for a in right_attrs if a not in left_attrs)
    return expand_to(left, left_attrs, union) * expand_to(right, right_attrs, union), union


def contract(
    operands: Sequence[tuple[np.ndarray, Sequence[str]]], keep: Sequence[str]
) -> np.ndarray:
    """Multiply arrays on named axes and sum out every axis not in ``keep`` (einsum).

    >>> a, b = np.arange(6.0).reshape(2, 3), np.ones(3)
    >>> contract([(a, ("x", "y")), (b, ("y",))], ("x",)).tolist()
    [3.0, 12.0]
    """
    names = list(dict.fromkeys(a for _, attrs in operands for a in attrs))
    if len(names) > 52:  # einsum's label limit: fall back to pairwise products
        result, axes = operands[0][0], tuple(operands[0][1])
        for array, more in operands[1:]:
            result, axes = multiply(result, axes, array, more)
        return sum_to(result, axes, tuple(keep))
    letter = dict(zip(names, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ", strict=False))
    inputs = ",".join("".join(letter[a] for a in attrs) for _, attrs in operands)
    spec = f"{inputs}->{''.join(letter[a] for a in keep)}"
    return np.asarray(np.einsum(spec, *(array for array, _ in operands), optimize="greedy"))
