"""A loss estimate read off pilots' learning curves: the DP scaling laws' own method.

McKenna et al. (2025) train each model size at one physical batch and vary the noise
multiplier, so that each run has its own noise-batch ratio r = sigma / B.  Where the DP
noise dominates the gradient's own sampling noise (the noise on the averaged gradient has
norm about r x sqrt(parameters), the sampling noise at most 1 / sqrt(B)), a run's loss
after T steps stands for any configuration of that size at ratio r and T steps, whatever
its batch, so a few cheap runs at a small batch stand for configurations that process
many more records.  :class:`PilotCurves` reads a configuration's loss off such runs:

- each pilot's held-out losses along its run (its learning curve) are interpolated
  linearly in log T;
- the pilots of one size that reach T steps, linearly in log r between the two whose
  ratios bracket r (beyond them, extended from the two nearest);
- model sizes, linearly in log N between the two nearest piloted sizes.

Nothing is fitted.  The error is measured by leaving each pilot out and reading its own
curve off the others, where its ratio lies between two others that reach its steps
(leave-one-out: the gaps are then twice the grid's, so the error is pessimistic).

>>> points = [PilotPoint(r, t, 2.0 + 5 * r + 30 / t, run=i)
...           for i, r in enumerate([0.01, 0.02, 0.04, 0.08]) for t in (100, 200, 400, 800)]
>>> curves = PilotCurves.fit(points)
>>> round(curves.predict(0.03, 300), 3), round(2.0 + 5 * 0.03 + 30 / 300, 3)  # read, truth
(2.265, 2.25)
>>> round(curves.error, 3), curves.left_out  # pilots at 0.02 and 0.04 left out, 4 points each
(0.04, 8)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from safeshare.errors import InputError
from safeshare.train.loss_model import PilotPoint

METHOD = (
    "read off the pilots' learning curves (McKenna et al. 2025): each curve interpolated "
    "linearly in log steps, the pilots of a size that reach the steps linearly in "
    "log(sigma/B), sizes linearly in log parameters; nothing fitted"
)


@dataclass(frozen=True)
class _Curve:
    """One pilot run's held-out losses after each number of steps (ascending)."""

    ratio: float
    steps: np.ndarray
    losses: np.ndarray

    def reaches(self, steps: float) -> bool:
        return bool(self.steps[0] <= steps <= self.steps[-1])

    def at(self, steps: float) -> float:
        return float(np.interp(math.log(steps), np.log(self.steps), self.losses))


def _across_ratios(curves: Sequence[_Curve], ratio: float, steps: float) -> float | None:
    """The loss at ``ratio`` after ``steps`` from the curves that reach ``steps`` (those at
    one ratio averaged): between the two that bracket it, else from the two nearest; None
    when fewer than two ratios reach ``steps``."""
    by_ratio: dict[float, list[float]] = {}
    for curve in curves:
        if curve.reaches(steps):
            by_ratio.setdefault(curve.ratio, []).append(curve.at(steps))
    if len(by_ratio) < 2:
        return None
    logs = np.log(sorted(by_ratio))
    losses = np.array([float(np.mean(by_ratio[r])) for r in sorted(by_ratio)])
    x = math.log(ratio)
    right = int(np.clip(np.searchsorted(logs, x), 1, len(logs) - 1))
    x0, x1 = logs[right - 1], logs[right]
    y0, y1 = losses[right - 1], losses[right]
    return float(y0 + (y1 - y0) * (x - x0) / (x1 - x0))


def _inside(curves: Sequence[_Curve], ratio: float, steps: float) -> bool:
    """Whether two curves other than at ``ratio`` that reach ``steps`` bracket ``ratio``."""
    reached = [c.ratio for c in curves if c.reaches(steps)]
    return any(r < ratio for r in reached) and any(r > ratio for r in reached)


def _left_out_misses(curves: Sequence[_Curve]) -> list[float]:
    """Each pilot's losses less what the others read at its ratio and steps, where two of
    them that reach its steps bracket its ratio (one size's pilots)."""
    misses = []
    for i, curve in enumerate(curves):
        others = [*curves[:i], *curves[i + 1 :]]
        for steps, loss in zip(curve.steps, curve.losses, strict=True):
            read = _across_ratios(others, curve.ratio, steps)
            if read is not None and _inside(others, curve.ratio, steps):
                misses.append(float(loss) - read)
    return misses


@dataclass(frozen=True)
class PilotCurves:
    """Pilot learning curves by model size (None: unsized), read as the module says, and
    their leave-one-out error."""

    curves: dict[int | None, tuple[_Curve, ...]]
    error: float  # leave-one-out RMS error over the pilots' points it could read (inf: none)
    left_out: int  # how many pilot points the error was measured on
    pilots: tuple[PilotPoint, ...]

    @classmethod
    def fit(cls, points: Sequence[PilotPoint]) -> PilotCurves:
        """Group ``points`` into curves (by ``run``; a point without one is a run of its
        own) and measure the leave-one-out error.  Needs, at some size, three pilots."""
        points = tuple(points)
        runs: dict[tuple[int | None, int], list[PilotPoint]] = {}
        for i, p in enumerate(points):
            if not (p.noise_batch_ratio > 0 and math.isfinite(p.noise_batch_ratio)):
                raise InputError(f"a pilot's noise-batch ratio must be positive, got {p!r}")
            if isinstance(p.steps, bool) or p.steps < 1 or not math.isfinite(p.loss):
                raise InputError(
                    f"a pilot point needs positive whole steps and a finite loss, got {p!r}"
                )
            key = p.run if p.run is not None else -1 - i
            runs.setdefault((p.parameters, key), []).append(p)
        sizes = {size for size, _ in runs}
        if None in sizes and len(sizes) > 1:
            raise InputError("give every pilot its model's parameters, or none")
        curves: dict[int | None, list[_Curve]] = {}
        for (size, _), members in runs.items():
            if len({p.noise_batch_ratio for p in members}) > 1:
                raise InputError("the points of one pilot run must share its noise-batch ratio")
            members.sort(key=lambda p: p.steps)
            curves.setdefault(size, []).append(
                _Curve(
                    members[0].noise_batch_ratio,
                    np.array([float(p.steps) for p in members]),
                    np.array([p.loss for p in members]),
                )
            )
        if max(len({c.ratio for c in group}) for group in curves.values()) < 3:
            raise InputError(
                "pilot curves need, at some model size, at least 3 noise-batch ratios: two to "
                "read between and one to leave out and measure the error"
            )
        misses = [miss for group in curves.values() for miss in _left_out_misses(group)]
        error = float(np.sqrt(np.mean(np.square(misses)))) if misses else math.inf
        return cls(
            {size: tuple(group) for size, group in curves.items()}, error, len(misses), points
        )

    @property
    def sized(self) -> bool:
        """Whether the pilots span several model sizes."""
        return None not in self.curves and len(self.curves) > 1

    def _at_size(self, size: int | None, ratio: float, steps: float) -> float:
        read = _across_ratios(self.curves[size], ratio, steps)
        if read is None:
            longest = sorted((float(c.steps[-1]) for c in self.curves[size]), reverse=True)
            held = "" if size is None else f" of {size:,} parameters"
            raise InputError(
                f"fewer than two pilots{held} reach {steps:g} steps (the two longest run "
                f"{', '.join(f'{s:g}' for s in longest[:2])}); run the pilots at least that long"
            )
        return read

    def predict(
        self,
        noise_batch_ratio: float,
        steps: int,
        parameters: int | None = None,
        batch_size: int | None = None,
    ) -> float:
        """The estimated held-out loss at ``noise_batch_ratio`` after ``steps`` steps, of a
        model of ``parameters`` (required when the pilots span sizes); ``batch_size`` is
        not read: the noise-batch ratio stands for it."""
        del batch_size
        if not (noise_batch_ratio > 0 and steps >= 1):
            raise InputError(f"need a positive ratio and steps, got {noise_batch_ratio}, {steps}")
        if None in self.curves:
            return self._at_size(None, noise_batch_ratio, steps)
        if parameters is None:
            raise InputError("the pilots span model sizes: give the parameters")
        if parameters in self.curves:
            return self._at_size(parameters, noise_batch_ratio, steps)
        sizes = sorted(s for s in self.curves if s is not None)
        below = [s for s in sizes if s < parameters]
        above = [s for s in sizes if s > parameters]
        if not below or not above:
            raise InputError(
                f"{parameters:,} parameters lie outside the piloted sizes ({sizes[0]:,} to "
                f"{sizes[-1]:,}); pilot that size too"
            )
        n0, n1 = below[-1], above[0]
        y0 = self._at_size(n0, noise_batch_ratio, steps)
        y1 = self._at_size(n1, noise_batch_ratio, steps)
        share = (math.log(parameters) - math.log(n0)) / (math.log(n1) - math.log(n0))
        return y0 + (y1 - y0) * share

    def describe(self) -> dict[str, Any]:
        return {
            "method": METHOD,
            "leave_one_out_rms_error": self.error,
            "leave_one_out_points": self.left_out,
            "pilots": sum(len(group) for group in self.curves.values()),
            "points": len(self.pilots),
            "sizes": sorted(s for s in self.curves if s is not None),
            "label": "estimate",
        }
