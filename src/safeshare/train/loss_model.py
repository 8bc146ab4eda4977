"""A small, explainable model of held-out loss for DP-SGD, fitted to short pilot runs.

The DP scaling laws (McKenna et al. 2025) treat the loss of DP-SGD as a function of the
noise-batch ratio r = sigma / B (the noise on the averaged gradient, in clipping-norm
units), of the compute (steps) and of the model's size.  Here, with T the number of steps::

    loss(r, T) = a + b * (r / r0) ** c + d / T        a, b, d >= 0,  c in [0.2, 3]

and, when the pilots span several model sizes N (parameters)::

    loss(r, T, N) = a + b * (r / r0) ** c * (N / N0) ** h + d / T + f * (N0 / N) ** g

(the noise hurts a larger model more, h in [0, 1]; a larger model can reach a lower loss,
g in [0.1, 1.5]).  r0 and N0 are the geometric means of the pilots' ratios and sizes (fixed
scales, so that b and f are losses).  For each exponent on a grid the model is linear in the
coefficients, fitted by non-negative least squares (:func:`scipy.optimize.nnls`); the
exponents with the least squared error win.  The stated error is the leave-one-out
root-mean-square error: each pilot predicted by the model fitted to the others.  A
prediction is an *estimate*; the privacy side of a plan never depends on it.

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
MIN_SIZED_PILOTS = 8  # seven parameters with the size terms, and one left out
EXPONENTS: tuple[float, ...] = tuple(float(c) for c in np.round(np.arange(0.2, 3.0001, 0.05), 2))
# with the size terms the grid has three dimensions: coarser steps keep the fit quick
SIZED_EXPONENTS: tuple[float, ...] = tuple(
    float(c) for c in np.round(np.arange(0.2, 3.0001, 0.1), 2)
)
NOISE_SIZE_EXPONENTS: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
SIZE_EXPONENTS: tuple[float, ...] = tuple(
    float(g) for g in np.round(np.arange(0.1, 1.5001, 0.1), 2)
)
FORMULA = "loss = a + b * (r / r0) ** c + d / steps, r = noise multiplier / batch size"
SIZED_FORMULA = (
    "loss = a + b * (r / r0) ** c * (N / N0) ** h + d / steps + f * (N0 / N) ** g, "
    "r = noise multiplier / batch size, N = parameters"
)


@dataclass(frozen=True)
class PilotPoint:
    """One pilot run: its noise-batch ratio, its steps, its held-out loss and, when the
    pilots span several model sizes, its model's parameters."""

    noise_batch_ratio: float
    steps: int
    loss: float
    parameters: int | None = None


def _sized(points: Sequence[PilotPoint]) -> bool:
    """Whether the pilots span several model sizes (then the size terms are fitted)."""
    sizes = {p.parameters for p in points}
    if None in sizes and len(sizes) > 1:
        raise InputError("give every pilot its model's parameters, or none")
    return len(sizes - {None}) > 1


def _check(points: Sequence[PilotPoint]) -> None:
    sized = _sized(points)
    least = MIN_SIZED_PILOTS if sized else MIN_PILOTS
    if len(points) < least:
        raise InputError(
            f"the loss model has {7 if sized else 4} parameters and needs at least {least} "
            f"pilot runs to fit and to state its error, got {len(points)}; pass --pilots "
            f"{least} or more"
        )
    for p in points:
        if p.parameters is not None and (isinstance(p.parameters, bool) or p.parameters < 1):
            raise InputError(f"a pilot's parameters must be a positive count, got {p.parameters!r}")
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


@dataclass(frozen=True)
class _Shape:
    """The exponents of one fit: noise c, noise-size h and size g (h, g unused unsized)."""

    c: float
    h: float = 0.0
    g: float = 0.0


def _design(
    ratios: np.ndarray, steps: np.ndarray, sizes: np.ndarray | None, shape: _Shape, with_steps: bool
) -> np.ndarray:
    """Columns of the linear coefficients (a, b[, d][, f]) at ``shape``'s exponents; ratios
    and sizes already divided by r0 and N0."""
    noise = ratios**shape.c if sizes is None else ratios**shape.c * sizes**shape.h
    columns = [np.ones_like(ratios), noise]
    if with_steps:
        columns.append(1.0 / steps)
    if sizes is not None:
        columns.append(sizes ** (-shape.g))
    return np.column_stack(columns)


def _shapes(sized: bool) -> list[_Shape]:
    if not sized:
        return [_Shape(c) for c in EXPONENTS]
    return [
        _Shape(c, h, g)
        for c in SIZED_EXPONENTS
        for h in NOISE_SIZE_EXPONENTS
        for g in SIZE_EXPONENTS
    ]


def _fit(
    ratios: np.ndarray,
    steps: np.ndarray,
    sizes: np.ndarray | None,
    losses: np.ndarray,
    with_steps: bool,
) -> tuple[_Shape, np.ndarray, float]:
    """(exponents, coefficients (a, b[, d][, f]), squared error) of the best on the grid."""
    best: tuple[_Shape, np.ndarray, float] | None = None
    for shape in _shapes(sizes is not None):
        coef, norm = nnls(_design(ratios, steps, sizes, shape, with_steps), losses)
        if best is None or norm**2 < best[2] - 1e-15:
            best = (shape, coef, float(norm**2))
    if best is None:  # the grids are never empty
        raise InputError("no exponent to fit")
    return best


@dataclass(frozen=True)
class LossModel:
    """Fitted ``a + b (r / r0)^c + d / steps`` (with several sizes, the size terms too:
    :data:`SIZED_FORMULA`) and its leave-one-out error."""

    a: float
    b: float
    c: float
    d: float
    r0: float
    error: float  # leave-one-out RMS error over the pilots
    residual: float  # in-sample RMS error
    pilots: tuple[PilotPoint, ...]
    h: float = 0.0
    f: float = 0.0
    g: float = 0.0
    n0: float | None = None  # the size scale; None: no size terms

    @classmethod
    def fit(cls, points: Sequence[PilotPoint]) -> LossModel:
        """Fit to ``points`` (at least :data:`MIN_PILOTS`, 3 distinct ratios; with several
        model sizes at least :data:`MIN_SIZED_PILOTS`).

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
        sizes, n0 = None, None
        if _sized(points):
            raw = np.array([float(p.parameters or 0) for p in points])
            n0 = float(np.exp(np.mean(np.log(raw))))
            sizes = raw / n0
        with_steps = len(set(steps.tolist())) > 1
        shape, coef, squared = _fit(scaled, steps, sizes, losses, with_steps)
        misses = []
        for left in range(len(points)):
            keep = np.arange(len(points)) != left
            kept_sizes = None if sizes is None else sizes[keep]
            e, k, _ = _fit(scaled[keep], steps[keep], kept_sizes, losses[keep], with_steps)
            one = slice(left, left + 1)
            guess = (
                _design(
                    scaled[one], steps[one], None if sizes is None else sizes[one], e, with_steps
                )
                @ k
            )
            misses.append(float(guess[0]) - float(losses[left]))
        d = float(coef[2]) if with_steps else 0.0
        f = float(coef[-1]) if sizes is not None else 0.0
        return cls(
            a=float(coef[0]),
            b=float(coef[1]),
            c=shape.c,
            d=d,
            r0=r0,
            error=float(np.sqrt(np.mean(np.square(misses)))),
            residual=math.sqrt(squared / len(points)),
            pilots=points,
            h=shape.h,
            f=f,
            g=shape.g,
            n0=n0,
        )

    @property
    def sized(self) -> bool:
        """Whether the model has the size terms (its pilots spanned several sizes)."""
        return self.n0 is not None

    def predict(self, noise_batch_ratio: float, steps: int, parameters: int | None = None) -> float:
        """The estimated held-out loss at ratio ``noise_batch_ratio`` after ``steps`` steps,
        of a model of ``parameters`` (required when the model has the size terms)."""
        noise = (noise_batch_ratio / self.r0) ** self.c
        if self.n0 is None:
            return self.a + self.b * noise + self.d / steps
        if parameters is None:
            raise InputError("this loss model was fitted across model sizes: give parameters")
        size = parameters / self.n0
        return self.a + self.b * noise * size**self.h + self.d / steps + self.f * size ** (-self.g)

    def describe(self) -> dict[str, Any]:
        sized = (
            {"h": self.h, "f": self.f, "g": self.g, "n0": self.n0} if self.n0 is not None else {}
        )
        return {
            "formula": SIZED_FORMULA if self.n0 is not None else FORMULA,
            "a": self.a,
            "b": self.b,
            "c": self.c,
            "d": self.d,
            "r0": self.r0,
            **sized,
            "leave_one_out_rms_error": self.error,
            "in_sample_rms_error": self.residual,
            "pilots": len(self.pilots),
            "label": "estimate",
        }
