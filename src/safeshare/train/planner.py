"""The privacy planner: batch size, steps and noise for a DP-SGD run, before any compute is spent.

For each candidate batch size B (Poisson sampling at rate q = B / records) the number
of steps follows from the epochs (or a cap on steps), and the noise multiplier sigma
from exact calibration (:func:`~safeshare.train.accounting.calibrate_noise`).  The
candidates are ranked by the noise-batch ratio sigma / B: the standard deviation of
the noise on the *averaged* clipped gradient, in units of the clipping norm, which the
DP scaling laws (McKenna et al. 2025) use as the key quantity: lower is better at
equal steps.  The privacy side is exact.  :func:`rank_by_loss` re-ranks the same
candidates by a loss *estimate* from a :class:`~safeshare.train.loss_model.LossModel`
fitted to pilot runs (:mod:`safeshare.train.pilots`); their privacy figures are untouched.

>>> plan = plan_training(50_000, 1.0, 1e-6, epochs=10, batch_sizes=(256, 1024),
...                      accountant="rdp")
>>> [(c.batch_size, c.steps, round(c.noise_multiplier, 2)) for c in plan.candidates]
[(1024, 489, 2.27), (256, 1954, 1.31)]
>>> plan.best.batch_size, plan.best.epsilon <= 1.0
(1024, True)
>>> # a loss model whose steps term dominates puts the smaller batch (more steps) first
>>> from safeshare.train.loss_model import LossModel, PilotPoint
>>> pilots = [PilotPoint(r, t, 0.3 + 40 * r + 300 / t)
...           for r, t in [(1e-3, 50), (3e-3, 150), (1e-2, 50), (3e-2, 150), (5e-3, 100)]]
>>> ranked = rank_by_loss(plan, LossModel.fit(pilots))
>>> [(c.batch_size, round(p.loss, 3)) for c, p in zip(ranked.candidates, ranked.predictions)]
[(256, 0.659), (1024, 1.002)]
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from safeshare.dp.budget import check_delta, check_epsilon
from safeshare.errors import BudgetError, InputError
from safeshare.train.accounting import Accounting, calibrate_noise, dpsgd_epsilon
from safeshare.train.dpsgd import MAX_EPOCHS
from safeshare.train.loss_model import LossModel

DEFAULT_BATCH_SIZES: tuple[int, ...] = (64, 128, 256, 512, 1024, 2048, 4096, 8192)


@dataclass(frozen=True)
class Candidate:
    """One DP-SGD configuration that spends exactly (at most) the budget."""

    batch_size: int
    sampling_rate: float
    steps: int
    epochs: float
    noise_multiplier: float
    epsilon: float

    @property
    def noise_batch_ratio(self) -> float:
        """sigma / B: noise std on the averaged gradient, in clipping-norm units."""
        return self.noise_multiplier / self.batch_size

    def describe(self) -> dict[str, Any]:
        return {
            "batch_size": self.batch_size,
            "sampling_rate": self.sampling_rate,
            "steps": self.steps,
            "epochs": self.epochs,
            "noise_multiplier": self.noise_multiplier,
            "noise_batch_ratio": self.noise_batch_ratio,
            "epsilon": self.epsilon,
        }


@dataclass(frozen=True)
class Prediction:
    """A candidate's estimated held-out loss, its error (the fit's leave-one-out RMS error),
    and whether its ratio and its steps lie inside the pilots' ranges (else the curve is
    extrapolated: the pilots are short, so a candidate's steps often lie far beyond them)."""

    loss: float
    error: float
    within_pilot_ratios: bool
    within_pilot_steps: bool = True

    def describe(self) -> dict[str, Any]:
        return {
            "estimate": self.loss,
            "error": self.error,
            "within_pilot_ratios": self.within_pilot_ratios,
            "within_pilot_steps": self.within_pilot_steps,
            "label": "estimate",
        }


@dataclass(frozen=True)
class Plan:
    """Candidates ranked best first (by sigma/B, or by predicted loss when ``predictions``
    is not empty: one per candidate, in the same order), and the batch sizes left out."""

    records: int
    epsilon: float
    delta: float
    accountant: str
    candidates: tuple[Candidate, ...]
    skipped: dict[int, str] = field(default_factory=dict)
    predictions: tuple[Prediction, ...] = ()
    loss_model: dict[str, Any] | None = None
    unit: str = "record"  # the privacy unit that ``records`` counts: "record" or "user"

    @property
    def best(self) -> Candidate:
        return self.candidates[0]

    def describe(self) -> dict[str, Any]:
        candidates = [c.describe() for c in self.candidates]
        ranking = "noise_batch_ratio (lower is better; exact privacy, no loss estimate)"
        if self.predictions:
            ranking = "predicted held-out loss (an estimate from pilot runs; exact privacy)"
            for described, prediction in zip(candidates, self.predictions, strict=True):
                described["predicted_loss"] = prediction.describe()
        return {
            f"{self.unit}s": self.records,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "privacy_unit": self.unit,
            "sampling": "poisson",
            "accountant": self.accountant,
            "ranking": ranking,
            "candidates": candidates,
            "skipped": {str(b): why for b, why in self.skipped.items()},
            **({"loss_model": self.loss_model} if self.loss_model is not None else {}),
        }


def rank_by_loss(plan: Plan, model: LossModel) -> Plan:
    """The same candidates (privacy untouched), ranked by ``model``'s predicted loss.

    Ties (and equal predictions) keep the sigma/B order.  Each prediction carries the
    model's leave-one-out error and is labelled an estimate.
    """
    ratios = [p.noise_batch_ratio for p in model.pilots]
    low, high = min(ratios), max(ratios)
    fewest, most = min(p.steps for p in model.pilots), max(p.steps for p in model.pilots)
    scored = [
        (
            c,
            Prediction(
                model.predict(c.noise_batch_ratio, c.steps),
                model.error,
                low <= c.noise_batch_ratio <= high,
                fewest <= c.steps <= most,
            ),
        )
        for c in plan.candidates
    ]
    scored.sort(key=lambda pair: (pair[1].loss, pair[0].noise_batch_ratio))
    return replace(
        plan,
        candidates=tuple(c for c, _ in scored),
        predictions=tuple(p for _, p in scored),
        loss_model=model.describe(),
    )


MAX_PLANNED_RECORDS = 10**12
MAX_PLANNED_STEPS = 1_000_000  # DP-SGD steps one configuration may take (VaultGemma: 100,000)


def _steps(records: int, batch_size: int, epochs: float | None, max_steps: int | None) -> int:
    if epochs is None:
        if max_steps is None:
            raise InputError("give epochs or max_steps (a compute budget in steps), or both")
        return max_steps
    steps = math.ceil(epochs * records / batch_size)
    return steps if max_steps is None else min(steps, max_steps)


def plan_training(
    records: int,
    epsilon: float,
    delta: float,
    *,
    epochs: float | None = None,
    batch_sizes: Sequence[int] | None = None,
    max_steps: int | None = None,
    accountant: Accounting = "pld",
    tolerance: float = 5e-3,
    progress: Callable[[str, float], None] | None = None,
    unit: str = "record",
) -> Plan:
    """Candidate configurations for training on ``records`` records at (epsilon, delta).

    ``epochs`` sets steps = ceil(epochs * records / B); ``max_steps`` caps them (a
    compute budget).  Each noise multiplier is within ``tolerance`` (relative) of the
    smallest that meets the budget, and always meets it.  Raises :class:`BudgetError`
    naming what *can* be reached when no batch size reaches ``epsilon``.  With
    ``unit="user"`` (user-level DP-SGD, :mod:`safeshare.train.user_level`) ``records``
    counts users and the batch sizes are users per batch: the arithmetic is the same.
    """
    if unit not in ("record", "user"):
        raise InputError(f"unit {unit!r} is unknown; use 'record' or 'user'")
    if (
        isinstance(records, bool)
        or not isinstance(records, int)
        or not 2 <= records <= MAX_PLANNED_RECORDS
    ):
        raise InputError(
            f"{unit}s must be a whole number in [2, {MAX_PLANNED_RECORDS:,}], got {records!r}"
        )
    check_epsilon(epsilon)
    check_delta(delta)
    if epochs is not None and not (math.isfinite(epochs) and 0 < epochs <= MAX_EPOCHS):
        raise InputError(
            f"epochs must be a positive number of at most {MAX_EPOCHS:,}, got {epochs!r}; "
            "try --epochs 10"
        )
    if max_steps is not None and (
        isinstance(max_steps, bool) or not 1 <= max_steps <= MAX_PLANNED_STEPS
    ):
        raise InputError(
            f"max_steps must be a whole number in [1, {MAX_PLANNED_STEPS:,}], got {max_steps!r}"
        )
    sizes = sorted(set(DEFAULT_BATCH_SIZES if batch_sizes is None else batch_sizes))
    if not sizes or sizes[0] < 1:
        raise InputError(f"batch sizes must be positive whole numbers, got {list(sizes)}")
    candidates: list[Candidate] = []
    skipped: dict[int, str] = {}
    usable = [b for b in sizes if b <= records // 2]
    too_long: list[int] = []
    for size in sizes:
        if size not in usable:
            skipped[size] = f"batch size above half the {records} {unit}s"
    for done, size in enumerate(usable):
        if progress is not None:
            progress(f"calibrating batch {size}", done / len(usable))
        q = size / records
        steps = _steps(records, size, epochs, max_steps)
        if steps > MAX_PLANNED_STEPS:
            skipped[size] = (
                f"{steps:,} steps, more than {MAX_PLANNED_STEPS:,} (cap with --max-steps)"
            )
            too_long.append(size)
            continue
        try:
            sigma = calibrate_noise(
                epsilon, delta, q, steps, accountant=accountant, tolerance=tolerance
            )
        except BudgetError as err:
            skipped[size] = str(err)
            continue
        spent = dpsgd_epsilon(sigma, q, steps, delta, accountant=accountant)
        candidates.append(Candidate(size, q, steps, steps * q, sigma, spent))
    if not candidates and usable and too_long == usable:
        raise InputError(
            f"every batch size takes more than {MAX_PLANNED_STEPS:,} steps over {records:,} "
            f"{unit}s (batch {usable[-1]}: {skipped[usable[-1]].split(' steps')[0]}); cap them "
            "with --max-steps, or pass larger --batch-sizes"
        )
    if not candidates:
        raise BudgetError(_unreachable(records, epsilon, delta, usable, epochs, max_steps, unit))
    candidates.sort(key=lambda c: c.noise_batch_ratio)
    return Plan(records, epsilon, delta, accountant, tuple(candidates), skipped, unit=unit)


def _unreachable(
    records: int,
    epsilon: float,
    delta: float,
    sizes: list[int],
    epochs: float | None,
    max_steps: int | None,
    unit: str,
) -> str:
    if not sizes:
        return (
            f"no batch size fits {records} {unit}s (each must be at most half of them); "
            "pass smaller --batch-sizes"
        )
    # the least-spending candidate: smallest batch; what it reaches at sigma = 1024, and
    # how many steps would fit the budget at a sensible noise multiplier (sigma = 10)
    size = sizes[0]
    q = size / records
    steps = _steps(records, size, epochs, max_steps)
    floor = dpsgd_epsilon(1024.0, q, steps, delta, accountant="rdp")
    fits = 0
    trial = steps
    while trial >= 1:
        if dpsgd_epsilon(10.0, q, trial, delta, accountant="rdp") <= epsilon:
            fits = trial
            break
        trial //= 2
    hint = (
        f"at most about {fits} steps (epochs {fits * q:.3g}) fit with noise multiplier 10"
        if fits
        else "not even one step fits with noise multiplier 10"
    )
    return (
        f"epsilon={epsilon:g} at delta={delta:g} cannot be reached: batch {size} over {steps} "
        f"steps spends at least epsilon={floor:.3g} even with noise multiplier 1024; {hint}; "
        f"use fewer epochs, more {unit}s, or a larger epsilon"
    )
