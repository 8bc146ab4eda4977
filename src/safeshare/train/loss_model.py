"""A small, explainable model of held-out loss for DP-SGD, fitted to short pilot runs.

The DP scaling laws (McKenna et al. 2025) treat the loss of DP-SGD as a function of the
noise-batch ratio r = sigma / B (the noise on the averaged gradient, in clipping-norm
units) and of the compute (steps).  Here, with T the number of steps::

    loss(r, T) = a + b * (r / r0) ** c + d / T        a, b, d >= 0,  c in [0.2, 3]

r0 is the geometric mean of the pilots' ratios (a fixed scale, so that b is a loss).
For each c on a grid the model is linear in (a, b, d), fitted by non-negative least
squares (:func:`scipy.optimize.nnls`); the c with the least squared error wins.  The
stated error is the leave-one-out root-mean-square error: each pilot predicted by the
model fitted to the others.  A prediction is an *estimate*; the privacy side of a plan
never depends on it.

>>> pilots = [PilotPoint(r, t, 0.3 + 40 * r + 5 / t)
...           for r, t in [(1e-3, 50), (3e-3, 150), (1e-2, 50), (3e-2, 150), (5e-3, 100)]]
>>> model = LossModel.fit(pilots)
>>> round(model.predict(2e-3, 1000), 3), model.error < 0.01
(0.385, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import nnls

from safeshare.errors import InputError

MIN_PILOTS = 5  # four parameters, and one left out for the error
EXPONENTS: tuple[float, ...] = tuple(float(c) for c in np.round(np.arange(0.2, 3.0001, 0.05), 2))
FORMULA = "loss = a + b * (r / r0) ** c + d / steps, r = noise multiplier / batch size"


@dataclass(frozen=True)
class PilotPoint:
    """One pilot run: its noise-batch ratio, its steps and its held-out loss."""

    noise_batch_ratio: float
    steps: int
    loss: float


def _check(points: Sequence[PilotPoint]) -> None:
    if len(points) < MIN_PILOTS:
        raise InputError(
            f"the loss model has 4 parameters and needs at least {MIN_PILOTS} pilot runs to "
            f"fit and to state its error, got {len(points)}; pass --pilots {MIN_PILOTS} or more"
        )
    for p in points:
        if not (p.noise_batch_ratio > 0 and math.isfinite(p.noise_batch_ratio)):
            raise InputError(
                f"a pilot's noise-batch ratio must be positive, got {p.noise_batch_ratio!r}"
            )
        if isinstance(p.steps, bool) or p.steps < 1:
            raise InputError(f"a pilot's steps must be a positive whole number, got {p.steps!r}")
        if not math.isfinite(p.loss):
            raise InputError("a pilot's held-out loss is not finite; the pilot diverged")
    if len({p.noise_batch_ratio for p in points}) < 3:
        raise InputError(
            "the pilots need at least 3 different noise-batch ratios to fit how loss grows "
            "with the noise; spread them over the candidates' range"
        )


def _design(ratios: np.ndarray, steps: np.ndarray, exponent: float, with_steps: bool) -> np.ndarray:
    columns = [np.ones_like(ratios), ratios**exponent]
    if with_steps:
        columns.append(1.0 / steps)
    return np.column_stack(columns)


def _fit(
    ratios: np.ndarray, steps: np.ndarray, losses: np.ndarray, with_steps: bool
) -> tuple[float, np.ndarray, float]:
    """(exponent, coefficients (a, b[, d]), squared error) of the best exponent on the grid."""
    best: tuple[float, np.ndarray, float] | None = None
    for exponent in EXPONENTS:
        coef, norm = nnls(_design(ratios, steps, exponent, with_steps), losses)
        if best is None or norm**2 < best[2] - 1e-15:
            best = (exponent, coef, float(norm**2))
    if best is None:  # EXPONENTS is never empty
        raise InputError("no exponent to fit")
    return best


@dataclass(frozen=True)
class LossModel:
    """Fitted ``a + b (r / r0)^c + d / steps`` and its leave-one-out error."""

    a: float
    b: float
    c: float
    d: float
    r0: float
    error: float  # leave-one-out RMS error over the pilots
    residual: float  # in-sample RMS error
    pilots: tuple[PilotPoint, ...]

    @classmethod
    def fit(cls, points: Sequence[PilotPoint]) -> LossModel:
        """Fit to ``points`` (at least :data:`MIN_PILOTS`, 3 distinct ratios).

        With a single number of steps among the pilots, ``d`` is not identifiable and is
        fixed at 0 (the steps term then predicts nothing).
        """
        points = tuple(points)
        _check(points)
        ratios = np.array([p.noise_batch_ratio for p in points])
        steps = np.array([float(p.steps) for p in points])
        losses = np.array([p.loss for p in points])
        r0 = float(np.exp(np.mean(np.log(ratios))))
        scaled = ratios / r0
        with_steps = len(set(steps.tolist())) > 1
        exponent, coef, squared = _fit(scaled, steps, losses, with_steps)
        misses = []
        for left in range(len(points)):
            keep = np.arange(len(points)) != left
            e, k, _ = _fit(scaled[keep], steps[keep], losses[keep], with_steps)
            guess = _design(scaled[left : left + 1], steps[left : left + 1], e, with_steps) @ k
            misses.append(float(guess[0]) - float(losses[left]))
        d = float(coef[2]) if with_steps else 0.0
        return cls(
            a=float(coef[0]),
            b=float(coef[1]),
            c=exponent,
            d=d,
            r0=r0,
            error=float(np.sqrt(np.mean(np.square(misses)))),
            residual=math.sqrt(squared / len(points)),
            pilots=points,
        )

    def predict(self, noise_batch_ratio: float, steps: int) -> float:
        """The estimated held-out loss at ratio ``noise_batch_ratio`` after ``steps`` steps."""
        return self.a + self.b * (noise_batch_ratio / self.r0) ** self.c + self.d / steps

    def describe(self) -> dict[str, Any]:
        return {
            "formula": FORMULA,
            "a": self.a,
            "b": self.b,
            "c": self.c,
            "d": self.d,
            "r0": self.r0,
            "leave_one_out_rms_error": self.error,
            "in_sample_rms_error": self.residual,
            "pilots": len(self.pilots),
            "label": "estimate",
        }
