"""``calibrate``: the least Gaussian noise that keeps a black box's MI with its secret under budget.

Runs the function on many secrets (random halves of the data, or draws of a user sampler),
re-runs two of them to check it is deterministic, and fits noise in rounds that double the
number of runs until the estimate has converged: its safety margin is under the tolerance and
another doubling no longer moves the noise power by more than it (see
:mod:`safeshare.pac.estimate`).

>>> import numpy as np, pandas as pd
>>> frame = pd.DataFrame({"x": np.arange(200.0)})
>>> release = calibrate(lambda d: d["x"].mean(), frame, mi_budget=0.25, samples=256, rng=1)
>>> release.calibration.runs, release.bound.success_rate < 0.84
(256, True)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from safeshare._progress import Progress, no_progress
from safeshare.dp.randomness import Randomness, RandomSource
from safeshare.errors import InputError
from safeshare.pac.bounds import MEMBERSHIP_PRIOR, check_mi
from safeshare.pac.errors import (
    InsufficientSamplesError,
    MechanismOutputError,
    NonDeterministicError,
)
from safeshare.pac.estimate import NoiseFit, fit_noise
from safeshare.pac.outputs import Layout, check_finite, flatten, flatten_like
from safeshare.pac.release import PACRelease
from safeshare.pac.runner import Mechanism, Runner
from safeshare.pac.sampling import SecretSampler, check_sampler, membership_mask, rows_of

MIN_RUNS = 64
"""Fewest black-box runs: half shape the noise, half check it (32 each for a usable bound)."""
FIRST_ROUND = 128
METHODS = ("auto", "anisotropic", "isotropic")


@dataclass(frozen=True)
class Round:
    """One round of the convergence procedure."""

    runs: int
    margin: float
    noise_power: float
    method: str


@dataclass(frozen=True)
class CalibrationReport:
    """How the noise was found: runs, rounds, the estimate's margin, the output's spread."""

    runs: int
    reruns: int
    rounds: tuple[Round, ...]
    method: str
    floor: float | None
    confidence: float
    tolerance: float
    margin: float
    converged: bool
    stable: bool
    """The noise power changed by at most the tolerance over the last round."""
    mi_estimate: float
    output_variances: tuple[float, ...]
    output_power: float
    signal_power: float
    seconds: float
    output_mean: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False, compare=False)
    """Mean output over the runs (private, unnoised: kept in memory, never in the card)."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "black_box_runs": self.runs,
            "determinism_reruns": self.reruns,
            "rounds": [vars(r) for r in self.rounds],
            "method": self.method,
            "relative_floor": self.floor,
            "confidence": self.confidence,
            "tolerance": self.tolerance,
            "safety_margin": self.margin,
            "converged": self.converged,
            "stable": self.stable,
            "mi_point_estimate": self.mi_estimate,
            "output_variances_top": list(self.output_variances),
            "output_power": self.output_power,
            "seconds": self.seconds,
        }


def calibrate(
    mechanism: Mechanism,
    data: Any = None,
    *,
    mi_budget: float,
    sampler: SecretSampler | None = None,
    prior: float = MEMBERSHIP_PRIOR,
    samples: int = 1000,
    confidence: float = 0.95,
    tolerance: float = 0.25,
    max_margin: float = 1.0,
    method: str = "auto",
    min_snr: float = 1.0,
    workers: int = 1,
    rng: RandomSource = None,
    progress: Progress = no_progress,
) -> PACRelease:
    """Calibrate PAC noise for ``mechanism`` so that MI(secret; release) <= ``mi_budget`` nats.

    ``data``: the records; secrets are random halves of them (membership, prior 1/2) unless a
    ``sampler(generator) -> dataset`` is given, whose draws are the secrets (``data`` is then
    the actual dataset to release on, assumed drawn from the same distribution).
    ``samples``: most black-box runs; ``confidence``: of the bound over the Monte-Carlo
    estimate; ``tolerance``: the safety margin, and the change of noise power between rounds,
    under which the estimate counts as converged;
    ``max_margin``: above it, refuse (too few runs); ``min_snr``: refuse to apply noise whose
    power exceeds the output's power divided by it; ``rng``: None for secure randomness.
    """
    started = time.perf_counter()
    _check_arguments(mi_budget, samples, confidence, tolerance, max_margin, method, min_snr)
    rand = rng if isinstance(rng, Randomness) else Randomness(rng)
    generator = rand.generator()
    draw: Callable[[], Any]
    if sampler is None:
        if data is None:
            raise InputError("give the data to calibrate on, or a sampler of datasets")
        rows = rows_of(data)
        if rows < 2:
            raise InputError(f"the data holds {rows} record(s); membership needs at least 2")
        draw = lambda: membership_mask(rows, generator)  # noqa: E731
        runner_data = data
    else:
        user_sampler = check_sampler(sampler)
        draw = lambda: user_sampler(generator)  # noqa: E731
        runner_data = None
    schedule = _schedule(samples)
    alpha = (1.0 - confidence) / len(schedule)
    rounds: list[Round] = []
    with Runner(mechanism, runner_data, workers) as runner:
        secrets = [draw() for _ in range(schedule[0])]
        first = runner.run([*secrets, *secrets[:2]], progress, total=samples + 2)
        layout, flat = flatten(first[0], run=0)
        matrix = _stack(layout, flat, first[1 : len(secrets)], start=1)
        _check_deterministic(layout, matrix[:2], first[len(secrets) :])
        fit: NoiseFit | None = None
        for target in schedule:
            if len(matrix) < target:
                more = [draw() for _ in range(target - len(matrix))]
                outputs = runner.run(more, progress, done=len(matrix) + 2, total=samples + 2)
                matrix = np.vstack([matrix, _stack(layout, None, outputs, start=len(matrix))])
            _check_varies(matrix)
            fit = fit_noise(matrix, beta=mi_budget, alpha=alpha, method=method)
            if fit is None:
                raise InsufficientSamplesError(
                    f"the output varied on too few of {len(matrix)} black-box runs to estimate "
                    f"its spread; pass samples={4 * len(matrix)} or more"
                )
            rounds.append(Round(len(matrix), fit.margin, fit.noise.power, fit.method))
            if _converged(rounds, tolerance):
                break
    progress("black-box runs", 1.0)
    if fit is None:  # pragma: no cover - the schedule is never empty
        raise InsufficientSamplesError("no calibration round ran")
    if fit.margin > max_margin:
        needed = math.ceil(len(matrix) * (fit.margin / tolerance) ** 2)
        raise InsufficientSamplesError(
            f"after {len(matrix)} black-box runs the estimate of how the output varies is not "
            f"stable: its safety margin would add {fit.margin:.0%} to the noise power (limit "
            f"{max_margin:.0%}); about {needed} runs would bring it under {tolerance:.0%}; "
            f"pass samples={needed}"
        )
    report = CalibrationReport(
        runs=len(matrix),
        reruns=2,
        rounds=tuple(rounds),
        method=fit.method,
        floor=fit.floor,
        confidence=confidence,
        tolerance=tolerance,
        margin=fit.margin,
        converged=_converged(rounds, tolerance),
        stable=_stable(rounds, tolerance),
        mi_estimate=fit.trace_estimate / 2.0,
        output_variances=tuple(float(v) for v in fit.eigenvalues[:20]),
        output_power=float(matrix.var(axis=0, ddof=1).sum()),
        signal_power=float((matrix.mean(axis=0) ** 2).sum()),
        seconds=time.perf_counter() - started,
        output_mean=matrix.mean(axis=0),
    )
    return PACRelease(
        mechanism=mechanism,
        data=data,
        sampler_given=sampler is not None,
        layout=layout,
        noise=fit.noise,
        mi_budget=mi_budget,
        prior=prior,
        calibration=report,
        randomness=rand,
        min_snr=min_snr,
    )


def _stable(rounds: list[Round], tolerance: float) -> bool:
    """The last round moved the noise power by at most ``tolerance`` (needs two rounds)."""
    if len(rounds) < 2:
        return False
    before, now = rounds[-2].noise_power, rounds[-1].noise_power
    return abs(now - before) <= tolerance * before


def _converged(rounds: list[Round], tolerance: float) -> bool:
    """Converged: a small safety margin, and a noise power that more runs no longer move."""
    return rounds[-1].margin <= tolerance and _stable(rounds, tolerance)


def _schedule(samples: int) -> list[int]:
    """Rounds of doubling size, from 128 runs (or fewer) up to ``samples``."""
    sizes = [min(samples, FIRST_ROUND)]
    while sizes[-1] < samples:
        sizes.append(min(samples, 2 * sizes[-1]))
    return sizes


def _stack(layout: Layout, first: np.ndarray | None, outputs: list[Any], start: int) -> np.ndarray:
    rows = [] if first is None else [first]
    if first is not None:
        check_finite(layout, first, 0)
    for offset, output in enumerate(outputs):
        flat = flatten_like(layout, output, run=start + offset)
        check_finite(layout, flat, start + offset)
        rows.append(flat)
    return np.vstack(rows)


def _check_deterministic(layout: Layout, originals: np.ndarray, reruns: list[Any]) -> None:
    for index, (original, output) in enumerate(zip(originals, reruns, strict=True)):
        again = flatten_like(layout, output, run=index)
        scale = max(1.0, float(np.abs(original).max()))
        gaps = np.abs(again - original)
        if np.any(gaps > 1e-9 * scale) and not np.allclose(again, original, rtol=1e-9):
            worst = int(np.argmax(gaps))
            raise NonDeterministicError(
                f"the function is not deterministic: run twice on the same input, its output "
                f"{layout.labels[worst]!r} differed (by {gaps[worst] / scale:.2g} of the "
                "output's scale); PAC calibration measures how the output varies with the data "
                "and cannot tell that apart from the function's own randomness: fix its seed "
                "(e.g. random_state=0), and do not modify the input"
            )


def _check_varies(matrix: np.ndarray) -> None:
    if not np.any(np.ptp(matrix, axis=0) > 0):
        raise MechanismOutputError(
            f"the output was identical on all {len(matrix)} black-box runs: there is no spread "
            "to calibrate against; if it does not depend on the data there is nothing to "
            "protect (release it as is), otherwise pass more samples"
        )


def _check_arguments(
    mi_budget: float,
    samples: int,
    confidence: float,
    tolerance: float,
    max_margin: float,
    method: str,
    min_snr: float,
) -> None:
    check_mi(mi_budget)
    if not isinstance(samples, int) or samples < MIN_RUNS:
        raise InsufficientSamplesError(
            f"PAC calibration needs at least {MIN_RUNS} black-box runs (half shape the noise, "
            f"half check it), got samples={samples!r}; 1000 is a good default"
        )
    if not 0.5 < confidence < 1:
        raise InputError(f"confidence must lie in (0.5, 1), got {confidence!r}; try 0.95")
    if not tolerance > 0 or not max_margin >= tolerance:
        raise InputError(
            f"need tolerance > 0 and max_margin >= tolerance, got {tolerance!r}, {max_margin!r}"
        )
    if method not in METHODS:
        raise InputError(f"method must be one of {METHODS}, got {method!r}")
    if not min_snr >= 0:
        raise InputError(f"min_snr must be >= 0, got {min_snr!r}")
