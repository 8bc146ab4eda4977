"""The DP nearest-neighbour histogram, and how PE selects from it.

Each private record votes for its ``k`` nearest synthetic samples with weight
``1/sqrt(k)``, so one record moves the vote vector by exactly 1 in L2 (add/remove
neighbours).  The integer counts (L2 sensitivity ``sqrt(k)``) get discrete Gaussian
noise of scale ``sigma * sqrt(k)`` from the project's :class:`Randomness` and are
divided by ``sqrt(k)``: the votes carry Gaussian noise of scale ``sigma`` on a
sensitivity-1 query, one :class:`~safeshare.dp.events.GaussianEvent` of ``sigma``.
Votes below the threshold ``H`` are set to 0 (post-processing).

>>> import numpy as np
>>> from safeshare.dp.randomness import Randomness
>>> private = np.array([[0.0], [0.1], [5.0]])
>>> synthetic = np.array([[0.0], [5.0], [9.0]])
>>> vote_vector(nearest(private, synthetic, 1), 3).tolist()
[2.0, 1.0, 0.0]
>>> histogram = NearestNeighbourHistogram(sigma=1e-3)
>>> histogram.release(private, synthetic, Randomness(0)).round(2).tolist()
[2.0, 1.0, 0.0]
>>> select(np.array([0.0, 3.0, 1.0]), 2, "rank", np.random.default_rng(0)).tolist()
[1, 2]
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np

from safeshare.dp.events import GaussianEvent
from safeshare.dp.randomness import Randomness
from safeshare.errors import InputError
from safeshare.synth.pe.neighbors import Method, nearest

Selection = Literal["rank", "sample"]


def vote_vector(neighbours: np.ndarray, size: int) -> np.ndarray:
    """Votes per synthetic sample: each row of ``neighbours`` gives 1/sqrt(k) to each of its k."""
    k = neighbours.shape[1]
    return np.bincount(neighbours.ravel(), minlength=size).astype(float) / math.sqrt(k)


@dataclass(frozen=True)
class NearestNeighbourHistogram:
    """Noisy votes of the private records for their nearest synthetic samples."""

    sigma: float
    k: int = 1
    threshold: float = 0.0
    label: str = "pe: nearest-neighbour histogram"
    search: Method = "auto"  # the neighbour search (see neighbors.py); the same votes for all

    def __post_init__(self) -> None:
        if not isinstance(self.k, int) or self.k < 1:
            raise InputError(f"k (neighbours per record) must be a positive integer, not {self.k}")
        if not math.isfinite(self.threshold):
            raise InputError(f"threshold must be a finite number of votes, not {self.threshold}")

    @property
    def event(self) -> GaussianEvent:
        """One sensitivity-1 Gaussian histogram at ``sigma`` (stated before any data)."""
        return GaussianEvent(self.sigma, 1.0, self.label)

    def release(self, private: np.ndarray, synthetic: np.ndarray, rand: Randomness) -> np.ndarray:
        """The noisy, thresholded votes (float, one per synthetic row)."""
        _ = self.event  # validates sigma before any data is read
        size = len(synthetic)
        neighbours = nearest(private, synthetic, self.k, self.search)
        counts = np.bincount(neighbours.ravel(), minlength=size).astype(np.int64)
        scale = math.sqrt(self.k)
        noisy = (counts + rand.discrete_gaussian(self.sigma * scale, size)) / scale
        noisy[noisy < self.threshold] = 0.0
        return noisy


def select(votes: np.ndarray, n: int, how: Selection, rng: np.random.Generator) -> np.ndarray:
    """Rows to vary next: the ``n`` most voted (``rank``, cycling when ``n`` exceeds them) or
    ``n`` draws in proportion to the clipped votes (``sample``).  All-zero votes: uniform."""
    weights = np.clip(np.asarray(votes, dtype=float), 0.0, None)
    if n < 1 or weights.size == 0:
        raise InputError(f"cannot select {n} samples from {weights.size}; both must be positive")
    if how == "rank":
        order = np.argsort(-weights, kind="stable")
        return np.resize(order, n).astype(np.int64)
    if how != "sample":
        raise InputError(f"selection must be 'rank' or 'sample', not {how!r}")
    total = weights.sum()
    p = weights / total if total > 0 else None
    return rng.choice(weights.size, size=n, replace=True, p=p).astype(np.int64)


def systematic(weights: np.ndarray, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` rows in proportion to ``weights`` with systematic sampling (low variance), shuffled.

    >>> systematic(np.array([1.0, 0.0, 3.0]), 4, np.random.default_rng(0)).tolist().count(2)
    3
    """
    weights = np.clip(np.asarray(weights, dtype=float), 0.0, None)
    total = weights.sum()
    if n < 0 or weights.size == 0:
        raise InputError(f"cannot draw {n} rows from {weights.size} weights")
    if total <= 0:
        weights, total = np.ones(weights.size), float(weights.size)
    points = (rng.random() + np.arange(n)) * (total / n)
    rows = np.searchsorted(np.cumsum(weights), points, side="right")
    rows = np.minimum(rows, weights.size - 1).astype(np.int64)
    return rng.permutation(rows)
