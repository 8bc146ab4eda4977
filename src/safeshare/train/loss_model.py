"""A small, explainable model of held-out loss for DP-SGD, fitted to short pilot runs.

The DP scaling laws (McKenna et al. 2025) treat the loss of DP-SGD as a function of the
noise-batch ratio r = sigma / B (the noise on the averaged gradient, in clipping-norm
units), of the compute (steps) and of the model's size.  Here, with T the compute (steps, or
records processed: below)::

    loss(r, T) = a + b * (r / r0) ** c + d * (T / T0) ** -e

a, b, d >= 0, c in [0.2, 3], e in [0.2, 1.5] (1 where the pilots have only two numbers of
steps: a curve needs three); and, when the pilots span several model
sizes N (parameters)::

    loss(r, T, N) = a + b * (r / r0) ** c * (N / N0) ** h + d * (T / T0) ** -e
                    + f * (N0 / N) ** g

(the noise hurts a larger model more, h in [0, 1]; a larger model can reach a lower loss,
g in [0.1, 1.5]).  r0, T0 and N0 are the geometric means of the pilots' ratios, steps and
sizes (fixed scales, so that b, d and f are losses).  For each exponent on a grid the model
is linear in the coefficients, fitted by non-negative least squares
(:func:`scipy.optimize.nnls`); the exponents with the least squared error win.

The compute T is counted in steps or, where every pilot states its batch size, in records
processed (steps x expected batch size: at a fixed compute that is the same for every
batch, so only the noise then tells batches apart).  A pilot can give several points: its
held-out loss along the way (a learning curve, ``PilotPoint.run`` naming the pilot).  The
stated error is the leave-one-out root-mean-square error: each pilot (all its points) left
out, its last point predicted by the model fitted to the others.  :meth:`LossModel.fit`
fits each way of counting compute, with and without the learning curves, and keeps the
one with the least such error (cross-validation; the others' errors are in
:meth:`LossModel.describe`).  A prediction is an *estimate*; the privacy side of a plan
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
from dataclasses import dataclass, replace
from typing import Any, Protocol

import numpy as np
from scipy.optimize import nnls

from safeshare.errors import InputError

MIN_PILOTS = 5  # four parameters (five with three numbers of steps), and one left out
MIN_SIZED_PILOTS = 8  # seven parameters with the size terms, and one left out
EXPONENTS: tuple[float, ...] = tuple(float(c) for c in np.round(np.arange(0.2, 3.0001, 0.05), 2))
# with the size terms the grid has three dimensions: coarser steps keep the fit quick
SIZED_EXPONENTS: tuple[float, ...] = tuple(
    float(c) for c in np.round(np.arange(0.2, 3.0001, 0.1), 2)
)
NOISE_SIZE_EXPONENTS: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
STEPS_EXPONENTS: tuple[float, ...] = (0.2, 0.35, 0.5, 0.75, 1.0, 1.5)
SIZE_EXPONENTS: tuple[float, ...] = tuple(
    float(g) for g in np.round(np.arange(0.1, 1.5001, 0.1), 2)
)
FORMULA = "loss = a + b * (r / r0) ** c + d * (T / T0) ** -e, r = noise multiplier / batch size"
SIZED_FORMULA = (
    "loss = a + b * (r / r0) ** c * (N / N0) ** h + d * (T / T0) ** -e + f * (N0 / N) ** g, "
    "r = noise multiplier / batch size, N = parameters"
)
COMPUTE = {  # what T counts
    "steps": "steps",
    "records": "records processed (steps x expected batch size)",
}


@dataclass(frozen=True)
class PilotPoint:
    """One pilot run's held-out loss after ``steps`` steps at a noise-batch ratio; when the
    pilots span several model sizes, its model's parameters.  Points of one run's learning
    curve share its ``run`` (left out together); None: a run of its own."""

    noise_batch_ratio: float
    steps: int
    loss: float
    parameters: int | None = None
    run: int | None = None
    batch_size: int | None = None  # the expected batch; given for every pilot, compute
    # may also be counted in records processed


class LossEstimate(Protocol):
    """What the planner ranks by: a :class:`LossModel` fitted to pilots, or pilots' curves
    read as they are (:class:`~safeshare.train.pilot_curves.PilotCurves`)."""

    @property
    def pilots(self) -> tuple[PilotPoint, ...]: ...

    @property
    def error(self) -> float:
        """The leave-one-out RMS error over the pilots."""
        ...

    @property
    def sized(self) -> bool: ...

    def predict(
        self,
        noise_batch_ratio: float,
        steps: int,
        parameters: int | None = None,
        batch_size: int | None = None,
    ) -> float: ...

    def describe(self) -> dict[str, Any]: ...


def _sized(points: Sequence[PilotPoint]) -> bool:
    """Whether the pilots span several model sizes (then the size terms are fitted)."""
    sizes = {p.parameters for p in points}
    if None in sizes and len(sizes) > 1:
        raise InputError("give every pilot its model's parameters, or none")
    return len(sizes - {None}) > 1


def _runs(points: Sequence[PilotPoint]) -> np.ndarray:
    """Each point's run: its ``run`` where given, else a run of its own."""
    first_free = max((p.run for p in points if p.run is not None), default=-1) + 1
    return np.array(
        [first_free + i if p.run is None else p.run for i, p in enumerate(points)], dtype=np.int64
    )


def _check(points: Sequence[PilotPoint]) -> None:
    sized = _sized(points)
    least = MIN_SIZED_PILOTS if sized else MIN_PILOTS
    runs = len(set(_runs(points).tolist())) if points else 0
    if runs < least:
        raise InputError(
            f"the loss model needs at least {least} pilot runs to fit {'its size terms ' if sized else ''}"
            f"and to state its error, got {runs}; pass --pilots {least} or more"
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
    """The exponents of one fit: noise c, steps e, noise-size h and size g (h, g unused
    without sizes; e unused with a single number of steps)."""

    c: float
    e: float = 1.0
    h: float = 0.0
    g: float = 0.0


@dataclass(frozen=True)
class _Scaled:
    """The pilots' ratios, steps and sizes over their scales r0, T0, N0 (sizes None when
    unsized), and their losses."""

    ratios: np.ndarray
    steps: np.ndarray
    sizes: np.ndarray | None
    losses: np.ndarray

    def take(self, rows: np.ndarray) -> _Scaled:
        return _Scaled(
            self.ratios[rows],
            self.steps[rows],
            None if self.sizes is None else self.sizes[rows],
            self.losses[rows],
        )

    @property
    def with_steps(self) -> bool:
        return len(set(self.steps.tolist())) > 1

    @property
    def steps_curve(self) -> bool:
        """Whether the steps exponent is identifiable: three or more numbers of steps."""
        return len(set(self.steps.tolist())) > 2

    def design(self, shape: _Shape, with_steps: bool) -> np.ndarray:
        """Columns of the linear coefficients (a, b[, d][, f]) at ``shape``'s exponents."""
        noise = self.ratios**shape.c
        if self.sizes is not None:
            noise = noise * self.sizes**shape.h
        columns = [np.ones_like(self.ratios), noise]
        if with_steps:
            columns.append(self.steps ** (-shape.e))
        if self.sizes is not None:
            columns.append(self.sizes ** (-shape.g))
        return np.column_stack(columns)


def _shapes(sized: bool, steps_curve: bool) -> list[_Shape]:
    steps = STEPS_EXPONENTS if steps_curve else (1.0,)
    if not sized:
        return [_Shape(c, e) for c in EXPONENTS for e in steps]
    return [
        _Shape(c, e, h, g)
        for c in SIZED_EXPONENTS
        for e in steps
        for h in NOISE_SIZE_EXPONENTS
        for g in SIZE_EXPONENTS
    ]


def _fit(data: _Scaled, with_steps: bool) -> tuple[_Shape, np.ndarray, float]:
    """(exponents, coefficients (a, b[, d][, f]), squared error) of the best on the grid."""
    best: tuple[_Shape, np.ndarray, float] | None = None
    for shape in _shapes(data.sizes is not None, with_steps and data.steps_curve):
        coef, norm = nnls(data.design(shape, with_steps), data.losses)
        if best is None or norm**2 < best[2] - 1e-15:
            best = (shape, coef, float(norm**2))
    if best is None:  # the grids are never empty
        raise InputError("no exponent to fit")
    return best


def _scale(values: np.ndarray) -> float:
    """The geometric mean: the scale a term's values are divided by."""
    return float(np.exp(np.mean(np.log(values))))


@dataclass(frozen=True)
class LossModel:
    """Fitted ``a + b (r / r0)^c + d (T / T0)^-e`` (with several sizes, the size terms too:
    :data:`SIZED_FORMULA`) and its leave-one-out error."""

    a: float
    b: float
    c: float
    d: float
    r0: float
    error: float  # leave-one-out RMS error over the pilot runs
    residual: float  # in-sample RMS error over the points
    pilots: tuple[PilotPoint, ...]
    h: float = 0.0
    f: float = 0.0
    g: float = 0.0
    n0: float | None = None  # the size scale; None: no size terms
    e: float = 1.0
    t0: float = 1.0  # the scale of T
    compute: str = "steps"  # what T counts: a key of COMPUTE
    curves: bool = False  # whether the learning curves' points were fitted, or runs' last
    tried: tuple[tuple[str, bool, float], ...] = ()  # (compute, curves, leave-one-out error)

    @classmethod
    def fit(
        cls,
        points: Sequence[PilotPoint],
        *,
        compute: str | None = None,
        curves: bool | None = None,
    ) -> LossModel:
        """Fit to ``points`` (at least :data:`MIN_PILOTS` runs, 3 distinct ratios; with
        several model sizes at least :data:`MIN_SIZED_PILOTS`): each way of counting the
        compute (:data:`COMPUTE`; records only where every point states its batch size),
        with and without learning-curve points, keeping the least leave-one-out error;
        ``compute`` or ``curves`` fix that choice.

        With a single value of compute among the points, ``d`` is not identifiable and is
        fixed at 0 (the compute term then predicts nothing); with two, ``e`` is fixed at 1.
        """
        points = tuple(points)
        _check(points)
        if compute is not None and compute not in COMPUTE:
            raise InputError(f"compute counts one of {sorted(COMPUTE)}, got {compute!r}")
        measures = ["steps"]
        if all(p.batch_size is not None and p.batch_size >= 1 for p in points):
            measures.append("records")
        elif compute == "records":
            raise InputError("compute in records processed needs every pilot's batch size")
        runs = _runs(points)
        ways = [False] + ([True] if len(set(runs.tolist())) < len(points) else [])
        fitted = [
            cls._fit_one_way(points, runs, m, c)
            for m in measures
            for c in ways
            if compute in (None, m) and curves in (None, c)
        ]
        if not fitted:
            raise InputError("learning curves were asked for, but no pilot has one")
        best = min(fitted, key=lambda model: model.error)  # ties: the first, the simplest
        return replace(best, tried=tuple((m.compute, m.curves, m.error) for m in fitted))

    @classmethod
    def _fit_one_way(
        cls, points: tuple[PilotPoint, ...], runs: np.ndarray, compute: str, curves: bool
    ) -> LossModel:
        """One way of fitting: T counted as ``compute``, all points or each run's last."""
        steps_of = np.array([float(p.steps) for p in points])
        last = {
            int(run): int(np.flatnonzero(runs == run)[np.argmax(steps_of[runs == run])])
            for run in set(runs.tolist())
        }
        kept = np.arange(len(points)) if curves else np.array(sorted(last.values()))
        used = tuple(points[i] for i in kept)
        ratios = np.array([p.noise_batch_ratio for p in used])
        work = np.array(
            [
                float(p.steps * (p.batch_size or 1) if compute == "records" else p.steps)
                for p in used
            ]
        )
        r0, t0 = _scale(ratios), _scale(work)
        sizes, n0 = None, None
        if _sized(used):
            raw = np.array([float(p.parameters or 0) for p in used])
            n0 = _scale(raw)
            sizes = raw / n0
        data = _Scaled(ratios / r0, work / t0, sizes, np.array([p.loss for p in used]))
        with_steps = data.with_steps
        shape, coef, squared = _fit(data, with_steps)
        used_runs = runs[kept]
        misses = []
        for run, final in sorted(last.items()):
            left = used_runs == run
            e, k, _ = _fit(data.take(~left), with_steps)
            one = data.take(np.flatnonzero(kept == final))  # the run's own result
            misses.append(float((one.design(e, with_steps) @ k)[0]) - float(one.losses[0]))
        return cls(
            a=float(coef[0]),
            b=float(coef[1]),
            c=shape.c,
            d=float(coef[2]) if with_steps else 0.0,
            r0=r0,
            error=float(np.sqrt(np.mean(np.square(misses)))),
            residual=math.sqrt(squared / len(used)),
            pilots=points,
            h=shape.h,
            f=float(coef[-1]) if sizes is not None else 0.0,
            g=shape.g,
            n0=n0,
            e=shape.e,
            t0=t0,
            compute=compute,
            curves=curves,
        )

    @property
    def sized(self) -> bool:
        """Whether the model has the size terms (its pilots spanned several sizes)."""
        return self.n0 is not None

    def predict(
        self,
        noise_batch_ratio: float,
        steps: int,
        parameters: int | None = None,
        batch_size: int | None = None,
    ) -> float:
        """The estimated held-out loss at ratio ``noise_batch_ratio`` after ``steps`` steps
        of (expected) ``batch_size`` records, of a model of ``parameters`` (each required
        when the model has the terms that use it)."""
        noise = (noise_batch_ratio / self.r0) ** self.c
        work = float(steps)
        if self.compute == "records":
            if batch_size is None:
                raise InputError(
                    "this loss model counts compute in records processed: give batch_size"
                )
            work *= batch_size
        compute = self.d * (work / self.t0) ** (-self.e)
        if self.n0 is None:
            return self.a + self.b * noise + compute
        if parameters is None:
            raise InputError("this loss model was fitted across model sizes: give parameters")
        size = parameters / self.n0
        return self.a + self.b * noise * size**self.h + compute + self.f * size ** (-self.g)

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
            "e": self.e,
            "r0": self.r0,
            "t0": self.t0,
            **sized,
            "T": COMPUTE[self.compute],
            "points_fitted": "each pilot's learning curve and result"
            if self.curves
            else "each pilot's result",
            "leave_one_out_rms_error": self.error,
            "in_sample_rms_error": self.residual,
            "pilots": len(set(_runs(self.pilots).tolist())),
            "points": len(self.pilots),
            "chosen_among": [
                {"T": COMPUTE[t], "learning_curves": c, "leave_one_out_rms_error": e}
                for t, c, e in self.tried
            ],
            "label": "estimate",
        }
