"""Splitting the input into the records a generator may see and the ones it may not.

The holdout is the rows of smallest rank under a keyed :class:`~safeshare.data.row_order.RowOrder`,
so a DuckDB or Spark engine holding the file picks exactly the rows numpy would.

>>> import numpy as np
>>> train, holdout = train_holdout_split(10, 0.2, np.random.default_rng(0))
>>> len(train), len(holdout), sorted(np.concatenate([train, holdout]).tolist()) == list(range(10))
(8, 2, True)
"""

from __future__ import annotations

import numpy as np

from safeshare.data.row_order import RowOrder
from safeshare.errors import InputError


def holdout_size(n_rows: int, holdout_fraction: float) -> int:
    """How many of ``n_rows`` records the holdout keeps (refusing fractions that leave none to train)."""
    if not 0 <= holdout_fraction < 1:
        raise InputError(
            f"holdout fraction must lie in [0, 1), got {holdout_fraction}; 0.2 is the default"
        )
    n_holdout = round(n_rows * holdout_fraction)
    if holdout_fraction > 0 and n_rows - n_holdout < 1:
        raise InputError("the table is too small to hold out records; use --holdout-fraction 0")
    return n_holdout


def train_holdout_split(
    n_rows: int, holdout_fraction: float, rng: np.random.Generator | RowOrder
) -> tuple[np.ndarray, np.ndarray]:
    """Row positions of train and holdout; the holdout is never used to generate."""
    n_holdout = holdout_size(n_rows, holdout_fraction)
    order = rng if isinstance(rng, RowOrder) else RowOrder.draw(rng)
    holdout = order.smallest(n_rows, n_holdout)
    in_holdout = np.zeros(n_rows, dtype=bool)
    in_holdout[holdout] = True
    return np.flatnonzero(~in_holdout), holdout
