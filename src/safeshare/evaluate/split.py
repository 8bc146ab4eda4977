"""Splitting the input into the records a generator may see and the ones it may not.

>>> import numpy as np
>>> train, holdout = train_holdout_split(10, 0.2, np.random.default_rng(0))
>>> len(train), len(holdout), sorted(np.concatenate([train, holdout]).tolist()) == list(range(10))
(8, 2, True)
"""

from __future__ import annotations

import numpy as np

from safeshare.errors import InputError


def train_holdout_split(
    n_rows: int, holdout_fraction: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Row positions of train and holdout; the holdout is never used to generate."""
    if not 0 <= holdout_fraction < 1:
        raise InputError(
            f"holdout fraction must lie in [0, 1), got {holdout_fraction}; 0.2 is the default"
        )
    order = rng.permutation(n_rows)
    n_holdout = round(n_rows * holdout_fraction)
    if holdout_fraction > 0 and n_rows - n_holdout < 1:
        raise InputError("the table is too small to hold out records; use --holdout-fraction 0")
    return np.sort(order[n_holdout:]), np.sort(order[:n_holdout])
