"""Lookahead (Lin et al., ICLR 2024): vote on where a sample's variations land, not on the sample.

With lookahead ``L`` every synthetic sample is represented, for the private vote, by the
mean embedding of ``L`` variations of it drawn with the variation API.  A sample whose
neighbourhood lies close to private data then gets the votes, which rewards samples whose
offspring will be good.  The variations are public work (synthetic samples through the
public APIs); the vote itself is unchanged: each private record still gives ``1/sqrt(k)``
to each of its ``k`` nearest representatives, so the histogram's sensitivity stays 1.

>>> import numpy as np, pandas as pd
>>> class Shift:
...     def vary(self, samples, degree, rng):
...         return samples + rng.integers(1, 3, size=samples.shape)
>>> class Identity:
...     def embed(self, samples):
...         return samples.to_numpy(dtype=float)
>>> samples = pd.DataFrame({"x": [0, 10]})
>>> mean = lookahead_embedding(Shift(), Identity().embed, samples, 4, 0.5,
...                            np.random.default_rng(0))
>>> mean.shape
(2, 1)
>>> (mean[:, 0] - samples["x"].to_numpy()).round(2).tolist()
[1.5, 1.25]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pandas as pd

from safeshare.errors import InputError
from safeshare.synth.pe.api import VariationAPI

Embed = Callable[[pd.DataFrame], np.ndarray]


MAX_LOOKAHEAD = 64  # variations per sample at most (each costs an API call)


def check_lookahead(lookahead: object) -> int:
    """``lookahead`` as a count of variations (0 = off), or an InputError saying what fits."""
    if (
        isinstance(lookahead, bool)
        or not isinstance(lookahead, int | np.integer)
        or not 0 <= lookahead <= MAX_LOOKAHEAD
    ):
        raise InputError(
            f"lookahead must be an integer in [0, {MAX_LOOKAHEAD}] (variations per sample, "
            f"0 = off), not {lookahead!r}"
        )
    return int(lookahead)


def lookahead_degrees(degrees: Sequence[float], iterations: int, given: object) -> list[float]:
    """The variation degree of the lookahead before each of the ``iterations`` votes.

    Vote ``t`` uses the degree of the variation that follows it (``degrees[t-1]``); the last
    vote, which no variation follows, uses the last degree; a single iteration uses the
    ``variation_degrees`` number given, else 0.5.

    >>> lookahead_degrees([0.5, 0.3], 3, None)
    [0.5, 0.3, 0.3]
    >>> lookahead_degrees([], 1, 0.2), lookahead_degrees([], 1, None)
    ([0.2], [0.5])
    """
    if degrees:
        return [float(degrees[min(t, len(degrees) - 1)]) for t in range(iterations)]
    single = float(given) if isinstance(given, int | float) else 0.5
    return [single] * iterations


def lookahead_embedding(
    api: VariationAPI,
    embed: Embed,
    samples: pd.DataFrame,
    count: int,
    degree: float,
    rng: np.random.Generator,
) -> np.ndarray:
    """The mean embedding of ``count`` variations of each row of ``samples`` (one row each).

    The variations are drawn with ``count`` calls of ``api.vary`` (all rows at once) and
    embedded in one batch.
    """
    if count < 1:
        raise InputError(f"lookahead needs at least one variation per sample, not {count}")
    n = len(samples)
    variations = []
    for _ in range(count):
        varied = api.vary(samples, degree, rng)
        if not isinstance(varied, pd.DataFrame) or len(varied) != n:
            got = len(varied) if isinstance(varied, pd.DataFrame) else type(varied).__name__
            raise InputError(f"the variation API returned {got} samples where {n} were asked for")
        variations.append(varied.reset_index(drop=True))
    vectors = embed(pd.concat(variations, ignore_index=True))
    return np.asarray(vectors.reshape(count, n, -1).mean(axis=0))
