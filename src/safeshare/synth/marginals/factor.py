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


def sum_to(values: np.ndarray, attrs: Sequence[str], keep: Sequence[str]) -> np.ndarray:
    """Sum out the axes not in ``keep``; the result's axes follow ``keep``'s order."""
    drop = tuple(i for i, a in enumerate(attrs) if a not in keep)
    summed = values.sum(axis=drop) if drop else values
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
