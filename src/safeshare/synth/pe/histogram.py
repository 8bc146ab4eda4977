"""The DP nearest-neighbour histogram, and how PE selects from it.

Each private record votes for its ``k`` nearest synthetic samples with weight
``1/sqrt(k)``, so one record moves the vote vector by exactly 1 in L2 (add/remove
neighbours).  The integer counts (L2 sensitivity ``sqrt(k)``) get discrete Gaussian
noise of scale ``sigma * sqrt(k)`` from the project's :class:`Randomness` and are
divided by ``sqrt(k)``: the votes carry Gaussian noise of scale ``sigma`` on a
sensitivity-1 query, one :class:`~safeshare.dp.events.GaussianEvent` of ``sigma``.
The threshold ``H`` is subtracted and what falls below 0 is 0: ``max(h - H, 0)``, as PE
does (post-processing), so a sample that only noise voted for keeps no weight.

Two ways to pick the next population's parents from the votes (:func:`select`): PE's
``sample`` (draws in proportion to the votes, each varied once) and Aug-PE's ``rank`` (the
``n / L`` most voted, each kept and varied ``L - 1`` times).

>>> import numpy as np
>>> from safeshare.dp.randomness import Randomness
>>> private = np.array([[0.0], [0.1], [5.0]])
>>> synthetic = np.array([[0.0], [5.0], [9.0]])
>>> vote_vector(nearest(private, synthetic, 1), 3).tolist()
[2.0, 1.0, 0.0]
>>> histogram = NearestNeighbourHistogram(sigma=1e-3)
>>> histogram.release(private, synthetic, Randomness(0)).round(2).tolist()
[2.0, 1.0, 0.0]
>>> chosen = select(np.array([0.0, 3.0, 1.0]), 3, "rank", np.random.default_rng(0), offspring=3)
>>> chosen.rows.tolist(), chosen.kept.tolist()
([1, 1, 1], [True, False, False])
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
OFFSPRING = 4
"""Rank selection's default samples per selected sample (Aug-PE's L; its scripts use 7)."""


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
        """The noisy, thresholded votes ``max(h - H, 0)`` (float, one per synthetic row)."""
        return np.maximum(self.noisy(private, synthetic, rand) - self.threshold, 0.0)

    def noisy(self, private: np.ndarray, synthetic: np.ndarray, rand: Randomness) -> np.ndarray:
        """The noisy votes before the threshold (the DP output; negative where noise is)."""
        _ = self.event  # validates sigma before any data is read
        size = len(synthetic)
        neighbours = nearest(private, synthetic, self.k, self.search)
        counts = np.bincount(neighbours.ravel(), minlength=size).astype(np.int64)
        scale = math.sqrt(self.k)
        return (counts + rand.discrete_gaussian(self.sigma * scale, size)) / scale


@dataclass(frozen=True)
class Choice:
    """The next population's parents: ``rows[i]`` (a row of the measured population) is the
    parent of its i-th sample, which is that sample unchanged where ``kept[i]``, else one of
    its variations."""

    rows: np.ndarray
    kept: np.ndarray

    @property
    def varied(self) -> np.ndarray:
        """The rows to vary, one per variation."""
        return self.rows[~self.kept]


def select(
    votes: np.ndarray,
    n: int,
    how: Selection,
    rng: np.random.Generator,
    *,
    offspring: int = 1,
    keep: bool = True,
) -> Choice:
    """The parents of a next population of ``n`` samples.

    ``sample`` (PE): ``n`` draws in proportion to the clipped votes, each varied once.
    ``rank`` (Aug-PE): the ``ceil(n / offspring)`` most voted (ties in random order), each
    giving ``offspring`` samples: itself unchanged (``keep``) and ``offspring - 1``
    variations, or ``offspring`` variations.  All-zero votes: uniform draws, random ranks.
    """
    weights = np.clip(np.asarray(votes, dtype=float), 0.0, None)
    if n < 1 or weights.size == 0:
        raise InputError(f"cannot select {n} samples from {weights.size}; both must be positive")
    if how == "rank":
        check_offspring(offspring)
        parents = -(-n // offspring)
        order = np.lexsort((rng.random(weights.size), -weights))  # most voted first
        top = order[np.arange(parents) % weights.size]
        rows = np.repeat(top, offspring)[:n].astype(np.int64)
        kept = np.zeros(n, dtype=bool)
        if keep:
            kept[np.arange(0, n, offspring)] = True
        return Choice(rows, kept)
    if how != "sample":
        raise InputError(f"selection must be 'rank' or 'sample', not {how!r}")
    total = weights.sum()
    p = weights / total if total > 0 else None
    rows = rng.choice(weights.size, size=n, replace=True, p=p).astype(np.int64)
    return Choice(rows, np.zeros(n, dtype=bool))


MAX_ITERATIONS = 1_000
MAX_SAMPLES = 10_000_000


def check_sizes(iterations: object, samples: object) -> None:
    """Refuse iterations or samples per iteration that are not counts a run can make
    (``None``: the default), before any data is read.

    >>> check_sizes(10, 1000)
    >>> check_sizes(10**20, None)
    Traceback (most recent call last):
    ...
    safeshare.errors.InputError: --iterations must be an integer in [1, 1000], got 100000000000000000000
    """
    for name, value, most in (
        ("iterations", iterations, MAX_ITERATIONS),
        ("samples", samples, MAX_SAMPLES),
    ):
        if value is None:
            continue
        if (
            isinstance(value, bool)
            or not isinstance(value, int | np.integer)
            or not 1 <= value <= most
        ):
            raise InputError(f"--{name} must be an integer in [1, {most}], got {value!r}")


def samples_per_parent(selection: object, offspring: object = None) -> int:
    """How many samples each selected sample gives the next population: 1 for ``sample``;
    ``offspring`` (default :data:`OFFSPRING`, at least 2) for ``rank``.  Refuses anything else,
    before any data is read.

    >>> samples_per_parent("sample"), samples_per_parent("rank"), samples_per_parent("rank", 7)
    (1, 4, 7)
    """
    if selection == "sample":
        if offspring not in (None, 1):
            raise InputError(
                f"offspring={offspring!r} needs rank selection (sample selection varies each "
                "drawn sample once)"
            )
        return 1
    if selection != "rank":
        raise InputError(f"selection must be 'rank' or 'sample', not {selection!r}")
    return check_offspring(OFFSPRING if offspring is None else offspring)


def check_offspring(offspring: object) -> int:
    """``offspring`` for rank selection: an integer of at least 2 (with 1 the most voted
    ``n`` of ``n`` samples are every sample: the votes would select nothing)."""
    if not isinstance(offspring, int | np.integer) or isinstance(offspring, bool) or offspring < 2:
        raise InputError(
            f"offspring must be an integer of at least 2 for rank selection, not {offspring!r}: "
            "each of the n/offspring most voted samples gives offspring samples (Aug-PE's L)"
        )
    return int(offspring)


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
