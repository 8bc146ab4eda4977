"""An empirical membership attack on PAC-noised outputs, measured against the bound.

The adversary knows everything but the secret: the pool of records, the function, the
noise's covariance.  It attacks one record (by default the most outlying one) with the
likelihood-ratio test that is optimal for Gaussian outputs: it runs the function on shadow
halves with the record in and out, fits the two means and a pooled covariance, and answers
"in" when ``w . (y - (mu_in + mu_out) / 2) > 0`` with ``w = (S + Sigma_B)^-1 (mu_in - mu_out)``.
Its success over many simulated releases (95% Wilson interval) must stay under the PAC bound
on posterior success; the same attack without noise shows how much it would win otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from safeshare.dp.randomness import Randomness, RandomSource
from safeshare.errors import InputError
from safeshare.evaluate.results import Proportion
from safeshare.pac.outputs import flatten_like
from safeshare.pac.release import PACRelease
from safeshare.pac.sampling import membership_mask, rows_of, take_rows

_DENSE_LIMIT = 400


@dataclass(frozen=True)
class AttackResult:
    """Success of the membership attack with and without the PAC noise, against the bound."""

    success: Proportion
    noise_free: Proportion
    bound: float
    target: int
    """Row position of the attacked record (never its values)."""

    @property
    def under_bound(self) -> bool:
        """The observed success is not above the bound (its 95% interval starts below it)."""
        return self.success.interval[0] <= self.bound

    def reading(self) -> str:
        low, high = self.success.interval
        return (
            f"membership attack on the most exposed record: {self.success.value:.1%} success "
            f"(95% CI {low:.1%}-{high:.1%}, {self.success.trials} trials) with PAC noise, "
            f"{self.noise_free.value:.1%} without; the PAC bound is {self.bound:.1%}"
        )

    def to_dict(self) -> dict[str, Any]:
        def prop(p: Proportion) -> dict[str, Any]:
            return {"value": p.value, "interval": list(p.interval), "trials": p.trials}

        return {
            "success": prop(self.success),
            "noise_free_success": prop(self.noise_free),
            "bound": self.bound,
            "under_bound": self.under_bound,
            "reading": self.reading(),
        }


def membership_attack(
    release: PACRelease,
    data: Any,
    *,
    target: int | None = None,
    trials: int = 1000,
    shadows: int = 200,
    rng: RandomSource = None,
) -> AttackResult:
    """Attack record ``target`` of ``data`` (the pool ``release`` was calibrated on)."""
    if not release.membership:
        raise InputError("the membership attack needs a release calibrated on membership secrets")
    if trials < 1 or shadows < 2:
        raise InputError(f"need trials >= 1 and shadows >= 2, got {trials}, {shadows}")
    rows = rows_of(data)
    target = most_outlying(data) if target is None else target
    if not 0 <= target < rows:
        raise InputError(f"target must be a row position in [0, {rows}), got {target}")
    generator = (rng if isinstance(rng, Randomness) else Randomness(rng)).generator()

    def run(member: bool) -> np.ndarray:
        mask = membership_mask(rows, generator)
        mask[target] = member
        return flatten_like(release.layout, release.mechanism(take_rows(data, mask)), run=-1)

    inside = np.vstack([run(True) for _ in range(shadows)])
    outside = np.vstack([run(False) for _ in range(shadows)])
    centre = (inside.mean(axis=0) + outside.mean(axis=0)) / 2
    pooled = np.vstack([inside - inside.mean(axis=0), outside - outside.mean(axis=0)])
    difference = inside.mean(axis=0) - outside.mean(axis=0)
    dense = release.layout.size <= _DENSE_LIMIT
    spread = np.cov(pooled.T, ddof=2).reshape(len(centre), -1) if dense else pooled.var(axis=0)
    noise = release.noise.covariance() if dense else release.noise.diagonal()
    noisy_weights = _weights(spread + noise, difference, dense)
    clean_weights = _weights(spread, difference, dense)
    hits = clean_hits = 0
    for _ in range(trials):
        member = bool(generator.random() < 0.5)
        exact = run(member)
        noisy = exact + release.noise.sample(generator)
        hits += (float(noisy_weights @ (noisy - centre)) > 0) == member
        clean_hits += (float(clean_weights @ (exact - centre)) > 0) == member
    return AttackResult(
        success=Proportion.of(hits, trials),
        noise_free=Proportion.of(clean_hits, trials),
        bound=release.bound.success_rate,
        target=target,
    )


def most_outlying(data: Any) -> int:
    """The record furthest from the mean in standardised numeric columns (0 if none)."""
    numbers: np.ndarray | None
    if isinstance(data, pd.DataFrame):
        numbers = data.select_dtypes("number").to_numpy(dtype=float)
    else:
        array = np.asarray(data)
        numbers = array.reshape(len(array), -1).astype(float) if array.dtype.kind in "iuf" else None
    if numbers is None or numbers.size == 0:
        return 0
    scale = numbers.std(axis=0)
    scaled = (numbers - numbers.mean(axis=0)) / np.where(scale > 0, scale, 1.0)
    return int(np.argmax((scaled**2).sum(axis=1)))


def _weights(covariance: np.ndarray, difference: np.ndarray, dense: bool) -> np.ndarray:
    if not dense:
        return np.asarray(difference / np.maximum(covariance, 1e-300))
    ridge = 1e-9 * max(float(np.trace(covariance)) / len(difference), 1e-300)
    return np.asarray(np.linalg.solve(covariance + ridge * np.eye(len(difference)), difference))
