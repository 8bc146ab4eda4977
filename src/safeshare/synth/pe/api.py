"""What PE asks of a foundation model and of an embedder: three small protocols.

A *random API* proposes fresh samples, a *variation API* proposes samples similar to
given ones, and an *embedder* maps samples (synthetic and private alike) to vectors
whose Euclidean distance says how alike they are.  Samples are rows of a DataFrame;
the APIs see only public inputs and synthetic samples, never private records.
``degree`` (0..1) says how far a variation may move: PE lowers it as it converges.

>>> import numpy as np, pandas as pd
>>> class Coin:
...     def random(self, n, rng):
...         return pd.DataFrame({"x": rng.integers(0, 2, n)})
...     def vary(self, samples, degree, rng):
...         return samples
>>> isinstance(Coin(), RandomAPI) and isinstance(Coin(), VariationAPI)
True
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np
import pandas as pd


@runtime_checkable
class RandomAPI(Protocol):
    def random(self, n: int, rng: np.random.Generator) -> pd.DataFrame:
        """``n`` fresh samples, one per row."""
        ...


@runtime_checkable
class VariationAPI(Protocol):
    def vary(self, samples: pd.DataFrame, degree: float, rng: np.random.Generator) -> pd.DataFrame:
        """One variation of each row of ``samples`` (same columns, same number of rows)."""
        ...


@runtime_checkable
class Embedder(Protocol):
    def embed(self, samples: pd.DataFrame) -> np.ndarray:
        """A 2-D float array: one vector per row."""
        ...
