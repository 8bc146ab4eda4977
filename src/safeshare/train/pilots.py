"""Short pilot runs of the DP tabular MLP: held-out losses for the planner's loss model.

Each pilot trains :func:`~safeshare.train.tabular.train_tabular` (Poisson sampling,
linear-ghost clipping, Adam, the same defaults as ``safeshare train``) for a few steps
on a subsample, at a chosen noise-batch ratio sigma / B, and scores the mean
cross-entropy on held-out records the pilots never train on.  The ratios are spread
(log-evenly) over the candidates' range and the pilots alternate between a short and a
longer number of steps, so the loss model can tell the noise from the compute.

**The pilots are not differentially private.**  They train on the user's records and
their held-out losses are read without noise; the ranking built from them is tuning on
the private data that the final model's epsilon does not cover (:data:`NOT_PRIVATE`).
No budget is spent or recorded for them; every output that carries them says so.

>>> pilot_ratios(2e-3, 2e-2, 5)
[0.002, 0.003557, 0.006325, 0.011247, 0.02]
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from safeshare.data import Table
from safeshare.dp.budget import MAX_EPSILON
from safeshare.errors import InputError, SchemaError
from safeshare.train.accounting import calibrate_noise, dpsgd_epsilon
from safeshare.train.loss_model import MIN_PILOTS, PilotPoint
from safeshare.train.tabular import train_tabular

if TYPE_CHECKING:
    from safeshare.train.planner import Plan

NOT_PRIVATE = (
    "NOT differentially private: the pilot runs train on your records and their held-out "
    "losses are read without DP, so the ranking is non-private tuning on your data that the "
    "final model's epsilon does not cover; no budget is spent or recorded for them"
)
PILOT_STEPS: tuple[int, ...] = (60, 180)
PILOT_SIGMA = 2.0  # the pilot's batch is chosen so its noise multiplier is about this
CURVE_FLOOR = 20  # the first steps' fast fall from the initial loss follows no power law
# a pilot's least noise multiplier: below it the calibration that lands on it has no
# answer (a pilot with a smaller ratio takes a larger batch instead)
PILOT_LEAST_SIGMA = 0.15


def pilot_ratios(low: float, high: float, pilots: int) -> list[float]:
    """``pilots`` noise-batch ratios spread log-evenly over [low, high] (widened if equal)."""
    if not (0 < low <= high and math.isfinite(high)):
        raise InputError(f"noise-batch ratios must satisfy 0 < low <= high, got {low!r}, {high!r}")
    if isinstance(pilots, bool) or pilots < MIN_PILOTS:
        raise InputError(
            f"--pilots must be at least {MIN_PILOTS} (the loss model has 4 parameters and a "
            f"leave-one-out error), got {pilots!r}"
        )
    if high / low < 3:  # too narrow to see the curve: widen around the middle
        middle = math.sqrt(low * high)
        low, high = middle / 3, middle * 3
    return [round(float(r), 6) for r in np.geomspace(low, high, pilots)]


@dataclass(frozen=True)
class PilotRun:
    """One pilot: its configuration and its mean held-out cross-entropy; ``curve``, the
    same loss at earlier steps ((steps, loss) pairs, fewest steps first)."""

    batch_size: int
    steps: int
    noise_multiplier: float
    records: int
    loss: float
    parameters: int | None = None  # the model's size, when pilots span several
    curve: tuple[tuple[int, float], ...] = ()

    @property
    def noise_batch_ratio(self) -> float:
        return self.noise_multiplier / self.batch_size

    def describe(self) -> dict[str, Any]:
        return {
            **({} if self.parameters is None else {"parameters": self.parameters}),
            "batch_size": self.batch_size,
            "steps": self.steps,
            "noise_multiplier": self.noise_multiplier,
            "noise_batch_ratio": self.noise_batch_ratio,
            "held_out_loss": self.loss,
            **({"learning_curve": [list(p) for p in self.curve]} if self.curve else {}),
        }


@dataclass(frozen=True)
class PilotStudy:
    """The pilots, on how many records they trained and were scored, and their privacy."""

    runs: tuple[PilotRun, ...]
    train_records: int
    holdout_records: int
    loss: str = "mean cross-entropy on held-out records the pilots never train on"

    def points(self) -> list[PilotPoint]:
        """Every run's result and learning curve, as the loss model's points."""
        return [
            PilotPoint(
                r.noise_batch_ratio, steps, loss, r.parameters, run=i, batch_size=r.batch_size
            )
            for i, r in enumerate(self.runs)
            for steps, loss in (*r.curve, (r.steps, r.loss))
        ]

    def describe(self) -> dict[str, Any]:
        return {
            "privacy": NOT_PRIVATE,
            "differentially_private": False,
            "train_records": self.train_records,
            "holdout_records": self.holdout_records,
            "loss": self.loss,
            "runs": [r.describe() for r in self.runs],
        }


@contextmanager
def _quiet_rdp() -> Iterator[None]:
    """dp-accounting logs (through absl) every Renyi order it drops at large rates; the
    pilots' epsilons are only calibration targets, so those lines are noise here."""
    logger = logging.getLogger("absl")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _split(
    table: Table, target: str, train: int, holdout: int, rng: np.random.Generator
) -> tuple[Table, Table]:
    if target not in table.columns:
        raise SchemaError(f"target column {target!r} is not in the table; columns: {table.columns}")
    if np.unique(table.column(target)).size < 2:
        raise InputError(
            f"target column {target!r} has a single class; pilot runs of a classifier need at "
            "least two: choose another target"
        )
    rows = len(table)
    holdout = min(holdout, rows // 5)
    train = min(train, rows - holdout)
    if holdout < 50 or train < 200:
        raise InputError(
            f"pilot runs need at least 250 records (200 to train, 50 held out), got {rows}"
        )
    order = rng.permutation(rows)
    return table.take(order[holdout : holdout + train]), table.take(order[:holdout])


def run_pilots(
    table: Table,
    target: str,
    ratios: Sequence[float],
    *,
    steps: Sequence[int] = PILOT_STEPS,
    train_records: int = 5000,
    holdout_records: int = 2000,
    hidden: int = 64,
    learning_rate: float = 2e-3,
    max_grad_norm: float = 1.0,
    rng: np.random.Generator,
    progress: Callable[[str, float], None] | None = None,
) -> PilotStudy:
    """One short DP-SGD run per ratio in ``ratios``; NOT private (see :data:`NOT_PRIVATE`).

    Pilot i takes ``steps[i % len(steps)]`` steps on up to ``train_records`` records and
    is scored on up to ``holdout_records`` others (a fifth of the table at most).  Its
    batch is about :data:`PILOT_SIGMA` / ratio (within [8, half the pilot records]); the
    noise multiplier follows, and the run's actual ratio and steps are recorded.
    """
    if len(ratios) < MIN_PILOTS:
        raise InputError(f"--pilots must be at least {MIN_PILOTS}, got {len(ratios)}")
    if not steps or min(steps) < 1:
        raise InputError(f"pilot steps must be positive whole numbers, got {list(steps)}")
    fit_on, score_on = _split(table, target, train_records, holdout_records, rng)
    n = len(fit_on)
    runs: list[PilotRun] = []
    for i, ratio in enumerate(ratios):
        if progress is not None:
            progress(f"pilot run {i + 1} of {len(ratios)}", i / len(ratios))
        batch = int(min(max(round(PILOT_SIGMA / ratio), 8), n // 2))
        sigma = max(ratio * batch, 0.3)  # below 0.3 the epsilon to calibrate to is unwieldy
        count = int(steps[i % len(steps)])
        delta = 1.0 / (10 * n)
        # the pilot is not private: this epsilon only makes train_tabular's calibration
        # land on the wanted noise multiplier
        with _quiet_rdp():
            # the pilot is not private: this epsilon only makes train_tabular's calibration
            # land on the wanted noise multiplier
            epsilon = dpsgd_epsilon(sigma, batch / n, count, delta, accountant="rdp")
            model = train_tabular(
                fit_on,
                target,
                epsilon=epsilon,
                delta=delta,
                epochs=count * batch / n,
                batch_size=batch,
                max_grad_norm=max_grad_norm,
                learning_rate=learning_rate,
                hidden=hidden,
                accountant="rdp",
                seed=int(rng.integers(2**62)),
            )
        privacy = model.card["privacy"]
        loss = float(np.mean(model.losses(score_on)))
        runs.append(
            PilotRun(batch, int(privacy["steps"]), float(privacy["noise_multiplier"]), n, loss)
        )
    return PilotStudy(tuple(runs), n, len(score_on))


@dataclass(frozen=True)
class LanguageModelPilot:
    """One pilot of the byte-level language model: its width, noise-batch ratio, steps and
    noise multiplier (its batch follows: noise multiplier / ratio); ``checkpoints``, the
    steps after which it is also scored (empty: after 1/2, 1/4, ... of its steps)."""

    width: int
    noise_batch_ratio: float
    steps: int
    noise_multiplier: float = PILOT_SIGMA
    checkpoints: tuple[int, ...] = ()


def language_model_pilot_grid(
    widths: Sequence[int],
    ratios: Sequence[float],
    steps: Sequence[int] = PILOT_STEPS,
    noise_multipliers: Sequence[float] = (PILOT_SIGMA,),
) -> list[LanguageModelPilot]:
    """Every width at every ratio, the steps and the noise multipliers alternating along the
    ratios (shifted by one for each width): each size sees each ratio, short and long runs,
    and, with several noise multipliers, batches that the ratio alone does not fix (give
    the range of the candidates' noise multipliers, so the pilots span the plan).

    >>> grid = language_model_pilot_grid([32, 64], [1e-3, 3e-3, 1e-2])
    >>> [(p.width, p.steps) for p in grid]
    [(32, 60), (32, 180), (32, 60), (64, 180), (64, 60), (64, 180)]
    >>> [p.noise_multiplier for p in language_model_pilot_grid([32], [1e-3, 3e-3, 1e-2],
    ...                                                         noise_multipliers=(0.7, 1.4))]
    [0.7, 1.4, 0.7]
    """
    if not widths or len(set(ratios)) < 3 or not steps or not noise_multipliers:
        raise InputError(
            "language-model pilots need a width, at least 3 noise-batch ratios, a number of "
            f"steps and a noise multiplier, got widths {list(widths)}, ratios {list(ratios)}, "
            f"steps {list(steps)}, noise multipliers {list(noise_multipliers)}"
        )
    if any(not (math.isfinite(s) and s > 0) for s in noise_multipliers):
        raise InputError(f"noise multipliers must be positive, got {list(noise_multipliers)}")
    return [
        LanguageModelPilot(
            int(w),
            float(r),
            int(steps[(i + j) % len(steps)]),
            float(noise_multipliers[(i + j) % len(noise_multipliers)]),
        )
        for i, w in enumerate(widths)
        for j, r in enumerate(ratios)
    ]


def _least_batch(ratio: float, least: int) -> int:
    """The least batch, at least ``least``, at which ``ratio`` takes a noise multiplier of at
    least :data:`PILOT_LEAST_SIGMA`."""
    return max(least, math.ceil(PILOT_LEAST_SIGMA / ratio))


def noise_batch_pilot_grid(
    plan: Plan,
    widths: Mapping[int, int],
    *,
    ratios: int = 4,
    margin: float = 1.15,
    least_batch: int = 4,
) -> list[LanguageModelPilot]:
    """Pilots from which :class:`~safeshare.train.pilot_curves.PilotCurves` reads every
    candidate of a compute-aware ``plan`` (``widths``: each candidate size's width).

    For each size, ``ratios`` noise-batch ratios log-evenly over its candidates' range
    widened by ``margin``, each run at the least batch (at least ``least_batch``) whose
    noise multiplier is at least :data:`PILOT_LEAST_SIGMA`, so a pilot processes far fewer
    records than the candidates it stands for.  Each runs to 1.1 x the most steps of the
    candidates whose ratio lies below the next pilot's, so that two pilots reach every
    candidate's steps, and is scored every half-octave of steps (x 2^-1/2) down to the
    size's fewest candidate steps (so that a pilot left out can be read off its neighbours
    for the error).

    >>> from safeshare.train.planner import plan_compute
    >>> plan = plan_compute(2000, 8.0, 1e-5, tokens_per_record=64, flops=1e12,
    ...                     model_sizes=[56369], batch_sizes=[16, 64], accountant="rdp")
    >>> [(c.batch_size, c.steps, round(c.noise_batch_ratio, 4)) for c in plan.candidates]
    [(16, 2887, 0.0413), (64, 721, 0.0138)]
    >>> grid = noise_batch_pilot_grid(plan, {56369: 48}, ratios=3)
    >>> [(round(p.noise_batch_ratio, 4), round(p.noise_multiplier / p.noise_batch_ratio),
    ...   p.steps) for p in grid]
    [(0.012, 13, 794), (0.0239, 7, 3176), (0.0475, 4, 3176)]
    """
    if isinstance(ratios, bool) or ratios < 3:
        raise InputError(f"noise-batch pilots need at least 3 ratios a size, got {ratios!r}")
    if not margin >= 1:
        raise InputError(f"the ratios' margin must be at least 1, got {margin!r}")
    grid: list[LanguageModelPilot] = []
    for size in sorted({c.parameters for c in plan.candidates if c.parameters is not None}):
        if size not in widths:
            raise InputError(f"give the width of the candidates of {size:,} parameters")
        mine = [c for c in plan.candidates if c.parameters == size]
        low = min(c.noise_batch_ratio for c in mine) / margin
        high = max(c.noise_batch_ratio for c in mine) * margin
        levels = [float(r) for r in np.geomspace(low, high, ratios)]
        fewest = min(c.steps for c in mine)
        for j, ratio in enumerate(levels):
            reach = levels[j + 1] if j + 1 < len(levels) else math.inf
            served = [c for c in mine if c.noise_batch_ratio <= reach] or mine
            steps = math.ceil(1.1 * max(c.steps for c in served))
            checkpoints = []
            point = steps / math.sqrt(2)
            while point >= max(fewest / math.sqrt(2), 1):
                checkpoints.append(round(point))
                point /= math.sqrt(2)
            batch = _least_batch(ratio, least_batch)
            grid.append(
                LanguageModelPilot(
                    widths[size], ratio, steps, ratio * batch, tuple(sorted(checkpoints))
                )
            )
    if not grid:
        raise InputError("noise-batch pilots need a compute-aware plan (candidates with sizes)")
    return grid


class _LearningCurve:
    """A pilot's held-out loss per byte after its checkpoints (by default 1/2, 1/4, ... of
    its steps, ``points`` of them, none before :data:`CURVE_FLOOR`), as ``after_step`` sees
    the model."""

    def __init__(
        self, pilot: LanguageModelPilot, points: int, held_out: Sequence[str], scored: float
    ) -> None:
        halves = {pilot.steps >> k for k in range(1, points + 1)} - set(range(CURVE_FLOOR))
        wanted = set(pilot.checkpoints) if pilot.checkpoints else halves
        self.checkpoints = {s for s in wanted if 1 <= s < pilot.steps}
        self.held_out, self.scored = held_out, scored
        self.points: list[tuple[int, float]] = []

    def score(self, model: Any) -> float:
        """The model's mean loss per byte (nats) on the held-out texts."""
        return -float(model.log_likelihoods(self.held_out).sum()) / self.scored

    def __call__(self, taken: int, model: Any) -> None:
        if taken in self.checkpoints:
            self.points.append((taken, self.score(model)))


def run_language_model_pilots(
    texts: Sequence[str],
    grid: Sequence[LanguageModelPilot],
    *,
    held_out: Sequence[str],
    context: int = 64,
    layers: int = 1,
    learning_rate: float = 3e-3,
    max_grad_norm: float = 1.0,
    curve_points: int = 3,
    rng: np.random.Generator,
    progress: Callable[[str, float], None] | None = None,
) -> PilotStudy:
    """One short DP-SGD run of the byte-level language model per pilot of ``grid``, trained
    on ``texts`` and scored on ``held_out`` (mean loss per byte, in nats); NOT private
    (see :data:`NOT_PRIVATE`).

    A pilot's batch is about its noise multiplier / ratio (within [4, half the texts]), and
    larger where the noise multiplier would fall below :data:`PILOT_LEAST_SIGMA`, the
    epsilon its calibration lands on above :data:`~safeshare.dp.budget.MAX_EPSILON`, or
    that calibration would miss the noise multiplier; the noise multiplier follows, and the
    run's actual ratio, steps and parameters are recorded.  Each pilot is also scored at its
    checkpoints (by default after 1/2, 1/4, ... of its steps, ``curve_points`` of them, none
    before :data:`CURVE_FLOOR` steps; the learning rate is constant): that learning curve is
    what pins how the loss falls with the steps.
    """
    from safeshare.train.language_model import (
        LanguageModelSettings,
        encode_bytes,
        train_language_model,
    )

    n = len(texts)
    if n < 40 or len(held_out) < 10:
        raise InputError(
            f"language-model pilots need at least 40 texts to train and 10 held out, got "
            f"{n} and {len(held_out)}"
        )
    bytes_scored = float(sum(max(1, min(len(encode_bytes(t)), context)) for t in held_out))
    runs: list[PilotRun] = []
    for i, pilot in enumerate(grid):
        if progress is not None:
            progress(f"pilot run {i + 1} of {len(grid)}", i / len(grid))
        ratio = pilot.noise_batch_ratio
        batch = min(max(round(pilot.noise_multiplier / ratio), _least_batch(ratio, 4)), n // 2)
        delta = 1.0 / (10 * n)
        curve = _LearningCurve(pilot, curve_points, held_out, bytes_scored)
        with _quiet_rdp():
            # the pilot is not private: this epsilon only makes the calibration land on
            # the wanted noise multiplier; where it would pass the largest epsilon a budget
            # takes, or the calibration would land above it (its cheap RDP test is more
            # cautious than this epsilon at little noise and high sampling rates), a larger
            # batch keeps the ratio at more noise
            while True:
                sigma = max(ratio * batch, PILOT_LEAST_SIGMA)
                epsilon = dpsgd_epsilon(sigma, batch / n, pilot.steps, delta, accountant="rdp")
                if batch >= n // 2 or (
                    epsilon <= MAX_EPSILON
                    and calibrate_noise(epsilon, delta, batch / n, pilot.steps, accountant="rdp")
                    <= 1.01 * sigma
                ):
                    break
                batch = min(2 * batch, n // 2)
            settings = LanguageModelSettings(
                context=context,
                width=pilot.width,
                layers=layers,
                heads=2,
                epochs=pilot.steps * batch / n,
                batch_size=batch,
                learning_rate=learning_rate,
                max_grad_norm=max_grad_norm,
                accountant="rdp",
            )
            model = train_language_model(
                texts, epsilon=epsilon, delta=delta, settings=settings,
                seed=int(rng.integers(2**62)), after_step=curve,
            )  # fmt: skip
        privacy = model.card["privacy"]
        loss = curve.score(model)
        runs.append(
            PilotRun(
                batch,
                int(privacy["steps"]),
                float(privacy["noise_multiplier"]),
                n,
                loss,
                int(model.card["model"]["parameters"]),
                tuple(curve.points),
            )
        )
    return PilotStudy(
        tuple(runs),
        n,
        len(held_out),
        loss="mean loss per byte (nats) on held-out texts the pilots never train on",
    )
