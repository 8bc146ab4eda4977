"""Mechanisms that know their own privacy cost.

Each mechanism is built from its parameters alone, exposes the event it will
spend (``.event``) before it sees data, and then draws from an explicit
:class:`~safeshare.dp.randomness.Randomness`.

>>> import numpy as np
>>> from safeshare.dp.randomness import Randomness
>>> counts = GaussianMechanism(sigma=2.0, label="1-way")
>>> counts.event.rho
0.125
>>> counts.release(np.array([10, 20]), Randomness(0)).shape
(2,)
>>> ExponentialMechanism(epsilon=1.0, sensitivity=1.0).select([0.0, 100.0], Randomness(0))
1
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from safeshare.dp.events import ExponentialEvent, GaussianEvent
from safeshare.dp.randomness import Randomness
from safeshare.dp.samplers import sample_exponential_mechanism


@dataclass(frozen=True)
class GaussianMechanism:
    """Adds discrete Gaussian noise of scale ``sigma`` to integer counts.

    ``l2_sensitivity`` is how far one record can move the whole released vector
    (1 for a histogram under add/remove-one neighbours).
    """

    sigma: float
    l2_sensitivity: float = 1.0
    label: str = "gaussian counts"

    @property
    def event(self) -> GaussianEvent:
        return GaussianEvent(self.sigma, self.l2_sensitivity, self.label)

    def release(self, counts: np.ndarray, rand: Randomness) -> np.ndarray:
        """Noisy counts (int64, same shape); the true counts never leave this call."""
        _ = self.event  # validates the parameters before any draw
        exact = np.asarray(counts, dtype=np.int64)
        noise = rand.discrete_gaussian(self.sigma, exact.size).reshape(exact.shape)
        return exact + noise


@dataclass(frozen=True)
class ExponentialMechanism:
    """Selects a candidate with probability proportional to exp(epsilon * score / (2 * sensitivity)).

    Sampled exactly: scores are read as exact rationals and the choice is made by
    rejection with exact Bernoulli(exp(-x)) coins.
    """

    epsilon: float
    sensitivity: float = 1.0
    label: str = "exponential mechanism"

    @property
    def event(self) -> ExponentialEvent:
        return ExponentialEvent(self.epsilon, self.label)

    def select(self, scores: Sequence[float] | np.ndarray, rand: Randomness) -> int:
        """The index of the selected candidate (higher score is better)."""
        _ = self.event
        values = [float(s) for s in np.asarray(scores, dtype=float).ravel()]
        if not values:
            raise ValueError(f"{self.label}: no candidates to select from")
        if not all(np.isfinite(values)):
            raise ValueError(f"{self.label}: scores must be finite")
        scale = Fraction(self.epsilon) / (2 * Fraction(self.sensitivity))
        top = max(Fraction(v) for v in values)
        distances = [scale * (top - Fraction(v)) for v in values]
        return sample_exponential_mechanism(distances, rand.uniform_below)
