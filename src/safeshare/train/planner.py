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
from safeshare.train.loss_model import LossEstimate

DEFAULT_BATCH_SIZES: tuple[int, ...] = (64, 128, 256, 512, 1024, 2048, 4096, 8192)


@dataclass(frozen=True)
class Compute:
    """What a configuration of a compute-aware plan processes: its model's parameters, the
    tokens it reads and the training FLOPs (:data:`FLOPS_PER_PARAMETER_TOKEN` per parameter
    and token)."""

    parameters: int
    tokens: int
    flops: float

    def describe(self) -> dict[str, Any]:
        return {"parameters": self.parameters, "tokens": self.tokens, "flops": self.flops}


@dataclass(frozen=True)
class Candidate:
    """One DP-SGD configuration that spends exactly (at most) the budget."""

    batch_size: int
    sampling_rate: float
    steps: int
    epochs: float
    noise_multiplier: float
    epsilon: float
    compute: Compute | None = None  # a compute-aware plan's model size, tokens and FLOPs

    @property
    def noise_batch_ratio(self) -> float:
        """sigma / B: noise std on the averaged gradient, in clipping-norm units."""
        return self.noise_multiplier / self.batch_size

    @property
    def parameters(self) -> int | None:
        return None if self.compute is None else self.compute.parameters

    def describe(self) -> dict[str, Any]:
        return {
            **({} if self.compute is None else self.compute.describe()),
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
    within_pilot_sizes: bool = True

    def describe(self) -> dict[str, Any]:
        return {
            "estimate": self.loss,
            "error": self.error,
            "within_pilot_ratios": self.within_pilot_ratios,
            "within_pilot_steps": self.within_pilot_steps,
            "within_pilot_sizes": self.within_pilot_sizes,
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
    skipped: dict[int | str, str] = field(default_factory=dict)
    predictions: tuple[Prediction, ...] = ()
    loss_model: dict[str, Any] | None = None
    unit: str = "record"  # the privacy unit that ``records`` counts: "record" or "user"
    compute: dict[str, Any] | None = None  # a compute-aware plan's budget and sizes
    refused: str | None = None  # why the loss estimates did not rank the candidates

    @property
    def best(self) -> Candidate:
        return self.candidates[0]

    @property
    def ranked(self) -> bool:
        """Whether the order is a ranking (by sigma/B, or by predicted loss)."""
        return self.compute is None or (bool(self.predictions) and self.refused is None)

    def describe(self) -> dict[str, Any]:
        candidates = [c.describe() for c in self.candidates]
        ranking = "noise_batch_ratio (lower is better; exact privacy, no loss estimate)"
        if self.compute is not None:
            ranking = (
                "none: at a fixed compute a larger batch takes fewer steps, which sigma/B "
                "does not weigh; pilot runs rank them by a loss estimate"
            )
        if self.predictions:
            ranking = "predicted held-out loss (an estimate from pilot runs; exact privacy)"
            for described, prediction in zip(candidates, self.predictions, strict=True):
                described["predicted_loss"] = prediction.describe()
        if self.refused is not None:
            ranking = f"none, refused: {self.refused}"
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
            **({"compute": self.compute} if self.compute is not None else {}),
        }


def rank_by_loss(plan: Plan, model: LossEstimate) -> Plan:
    """The same candidates (privacy untouched), ranked by ``model``'s predicted loss (a
    :class:`~safeshare.train.loss_model.LossModel`, or
    :class:`~safeshare.train.pilot_curves.PilotCurves`).

    Ties (and equal predictions) keep the sigma/B order.  Each prediction carries the
    model's leave-one-out error and is labelled an estimate.  When that error is at least
    the spread the ranking rests on (the best candidate's predicted loss to the median
    one's), the ranking would be noise: the candidates keep their order, with their
    predictions, and ``refused`` says why.
    """
    ratios = [p.noise_batch_ratio for p in model.pilots]
    low, high = min(ratios), max(ratios)
    fewest, most = min(p.steps for p in model.pilots), max(p.steps for p in model.pilots)
    sizes = [p.parameters for p in model.pilots if p.parameters is not None]
    if model.sized and any(c.parameters is None for c in plan.candidates):
        raise InputError(
            "the loss model was fitted across model sizes; rank a compute-aware plan with it"
        )

    def within_sizes(parameters: int | None) -> bool:
        return parameters is None or not sizes or min(sizes) <= parameters <= max(sizes)

    scored = [
        (
            c,
            Prediction(
                model.predict(c.noise_batch_ratio, c.steps, c.parameters, c.batch_size),
                model.error,
                low <= c.noise_batch_ratio <= high,
                fewest <= c.steps <= most,
                within_sizes(c.parameters),
            ),
        )
        for c in plan.candidates
    ]
    described = model.describe()
    spread = ranking_spread([p.loss for _, p in scored])
    if len(scored) > 1 and model.error >= spread:
        refused = (
            f"the loss model's leave-one-out error ({model.error:.3g}) is at least the spread "
            f"it would rank on ({spread:.3g}, from the best candidate's predicted loss to the "
            "median one's), so its order would be noise; run more or longer pilots"
        )
        return replace(
            plan,
            predictions=tuple(p for _, p in scored),
            loss_model={**described, "ranking_refused": refused},
            refused=refused,
        )
    scored.sort(key=lambda pair: (pair[1].loss, pair[0].noise_batch_ratio))
    return replace(
        plan,
        candidates=tuple(c for c, _ in scored),
        predictions=tuple(p for _, p in scored),
        loss_model=described,
    )


def ranking_spread(losses: Sequence[float]) -> float:
    """The median predicted loss less the best: what a ranking's error must stay under.

    >>> round(ranking_spread([0.5, 0.7, 0.6, 0.9]), 6)
    0.15
    """
    ordered = sorted(losses)
    if not ordered:
        return 0.0
    middle = len(ordered) // 2
    median = ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
    return median - ordered[0]


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
    skipped: dict[int | str, str] = {}
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


FLOPS_PER_PARAMETER_TOKEN = 6  # a forward and a backward pass (Kaplan et al. 2020)
MAX_MODEL_SIZES = 16


def plan_compute(
    records: int,
    epsilon: float,
    delta: float,
    *,
    tokens_per_record: int,
    flops: float,
    model_sizes: Sequence[int],
    batch_sizes: Sequence[int] | None = None,
    max_epochs: float | None = None,
    accountant: Accounting = "pld",
    tolerance: float = 5e-3,
    progress: Callable[[str, float], None] | None = None,
) -> Plan:
    """Configurations (model size, batch, steps, noise) that fit a compute budget.

    A step of batch B on a model of N parameters costs ``6 N B L`` FLOPs (L tokens per
    record, a forward and a backward pass; per-record clipping's extra work not counted),
    so each (N, B) takes ``flops // (6 N B L)`` steps, at most ``max_epochs`` passes over
    the ``records`` (the data budget) and :data:`MAX_PLANNED_STEPS`; the noise multiplier
    is calibrated exactly for them, as :func:`plan_training` does.  The candidates are
    listed by model size and batch, **not ranked**: at a fixed compute a larger batch takes
    fewer steps, which sigma/B does not weigh; :func:`rank_by_loss` with a loss model
    fitted across model sizes ranks them.  A budget that fits no step of any candidate is
    refused, naming the least that fits one.

    >>> plan = plan_compute(976_562, 2.0, 1e-10, tokens_per_record=1024, flops=1e19,
    ...                     model_sizes=[10**8, 10**9], batch_sizes=[4096, 65536],
    ...                     accountant="rdp")
    >>> [(c.parameters // 10**6, c.batch_size, c.steps) for c in plan.candidates]
    [(100, 4096, 3973), (100, 65536, 248), (1000, 4096, 397), (1000, 65536, 24)]
    """
    if (
        isinstance(tokens_per_record, bool)
        or not isinstance(tokens_per_record, int)
        or not (1 <= tokens_per_record <= 10**7)
    ):
        raise InputError(
            f"tokens per record must be a whole number in [1, 10,000,000], got "
            f"{tokens_per_record!r}"
        )
    if not (isinstance(flops, int | float) and math.isfinite(flops) and flops > 0):
        raise InputError(f"the compute budget must be a positive number of FLOPs, got {flops!r}")
    sizes = sorted(set(model_sizes))
    if (
        not sizes
        or len(sizes) > MAX_MODEL_SIZES
        or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in sizes)
    ):
        raise InputError(
            f"give 1 to {MAX_MODEL_SIZES} model sizes as positive parameter counts, got "
            f"{list(model_sizes)}"
        )
    if max_epochs is not None and not (math.isfinite(max_epochs) and 0 < max_epochs <= MAX_EPOCHS):
        raise InputError(f"max_epochs must be a positive number of at most {MAX_EPOCHS:,}")
    batches = sorted(set(DEFAULT_BATCH_SIZES if batch_sizes is None else batch_sizes))
    per_step = {
        (n, b): FLOPS_PER_PARAMETER_TOKEN * n * b * tokens_per_record
        for n in sizes
        for b in batches
    }
    if all(cost > flops for cost in per_step.values()):
        (n, b), least = min(per_step.items(), key=lambda item: item[1])
        raise InputError(
            f"the compute budget of {flops:.3g} FLOPs fits no step of any candidate: the "
            f"cheapest ({n:,} parameters, batch {b}, {tokens_per_record} tokens per record) "
            f"needs {least:.3g} FLOPs a step; give at least that, and many times it to train"
        )
    candidates: list[Candidate] = []
    skipped: dict[int | str, str] = {}
    done = 0
    for n in sizes:
        steps_cap = None
        for b in batches:
            key = f"{n} parameters, batch {b}"
            steps = int(flops // per_step[(n, b)])
            if max_epochs is not None:
                steps_cap = math.ceil(max_epochs * records / b)
                steps = min(steps, steps_cap)
            steps = min(steps, MAX_PLANNED_STEPS)
            if steps < 1:
                skipped[key] = "the compute budget fits no step"
                continue
            if progress is not None:
                progress(f"calibrating {key}", done / len(per_step))
            done += 1
            try:
                one = plan_training(
                    records, epsilon, delta, batch_sizes=[b], max_steps=steps,
                    accountant=accountant, tolerance=tolerance,
                )  # fmt: skip
            except (BudgetError, InputError) as err:
                skipped[key] = str(err)
                continue
            if not one.candidates:
                skipped[key] = one.skipped.get(b, "no configuration")
                continue
            found = one.best
            tokens = b * found.steps * tokens_per_record
            compute = Compute(n, tokens, float(FLOPS_PER_PARAMETER_TOKEN * n * tokens))
            candidates.append(replace(found, compute=compute))
    if not candidates:
        raise BudgetError(
            "no (model size, batch) reaches the budget: "
            + "; ".join(f"{k}: {v}" for k, v in list(skipped.items())[:3])
        )
    budget = {
        "flops": flops,
        "tokens_per_record": tokens_per_record,
        "model_sizes": sizes,
        "max_epochs": max_epochs,
        "flops_per_parameter_token": FLOPS_PER_PARAMETER_TOKEN,
        "counted": "forward and backward passes; per-record clipping's extra work is not",
    }
    return Plan(records, epsilon, delta, accountant, tuple(candidates), skipped, compute=budget)


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
