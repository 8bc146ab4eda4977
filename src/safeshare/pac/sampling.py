"""Secrets: what PAC Privacy hides, drawn from the distribution the guarantee assumes.

Membership (the default): the secret is which records are used.  Every record of the data is
kept independently with probability 1/2, so for each record the adversary's blind guess
("in" or "out") succeeds exactly half the time: the prior is 1/2.  Alternatively a user
sampler ``sampler(generator) -> data`` draws whole datasets from a distribution the user
vouches for (e.g. a population model); the guarantee then covers the secret under that
distribution only.

>>> import numpy as np, pandas as pd
>>> frame = pd.DataFrame({"x": range(10)})
>>> mask = membership_mask(len(frame), np.random.default_rng(0))
>>> subset = take_rows(frame, mask)
>>> len(subset) == int(mask.sum()), rows_of(frame)
(True, 10)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from safeshare.data.table import Table
from safeshare.errors import InputError

SecretSampler = Callable[[np.random.Generator], Any]
"""Draws one secret dataset (the black box's input) from the assumed distribution."""

MEMBERSHIP_RATE = 0.5


def membership_mask(rows: int, generator: np.random.Generator) -> np.ndarray:
    """Keep each of ``rows`` records independently with probability 1/2."""
    return np.asarray(generator.random(rows) < MEMBERSHIP_RATE)


def rows_of(data: Any) -> int:
    """How many records ``data`` holds (a DataFrame, an array, a Table or a sequence)."""
    if isinstance(data, pd.DataFrame | pd.Series | Table):
        return len(data)
    if isinstance(data, np.ndarray):
        if data.ndim == 0:
            raise InputError("data is a single number; give records (rows) to subsample")
        return int(data.shape[0])
    if isinstance(data, Sequence) and not isinstance(data, str | bytes):
        return len(data)
    raise InputError(
        f"cannot subsample records from a {type(data).__name__}; give a pandas DataFrame, a "
        "numpy array of rows, a safeshare Table or a list, or pass sampler=..."
    )


def take_rows(data: Any, mask: np.ndarray) -> Any:
    """The records of ``data`` where ``mask`` is true, in the same container type."""
    if isinstance(data, pd.DataFrame | pd.Series):
        return data.iloc[np.flatnonzero(mask)]
    if isinstance(data, np.ndarray):
        return data[mask]
    if isinstance(data, Table):
        return data.take(np.flatnonzero(mask))
    if isinstance(data, Sequence) and not isinstance(data, str | bytes):
        return [item for item, keep in zip(data, mask, strict=True) if keep]
    raise InputError(f"cannot subsample records from a {type(data).__name__}")


def check_sampler(sampler: Any) -> SecretSampler:
    """A user sampler must be callable with one argument, a numpy Generator."""
    if not callable(sampler):
        raise InputError(
            f"sampler must be a function generator -> data, not {type(sampler).__name__}"
        )
    return sampler
