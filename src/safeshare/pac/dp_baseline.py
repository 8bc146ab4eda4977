"""The DP Gaussian mechanism, calibrated to the same posterior-success bound as a PAC release.

A PAC budget ``beta`` caps membership success (prior 1/2) at ``p = posterior_success(beta)``;
(epsilon, delta)-DP caps it at ``(e^epsilon + delta) / (1 + e^epsilon)``, so the DP
counterpart uses ``epsilon = dp_epsilon(p, delta)``.  Each shipped application gets its
standard DP Gaussian version, with public bounds and the record count treated as public:

* mean: clipped sum + noise (L2 sensitivity = largest clipped row norm), divided by n;
* histogram: counts + noise (sensitivity 1), divided by n;
* linear regression: sufficient statistics ``Z^T Z`` of clipped rows + symmetric noise
  (sensitivity ``max ||z||^2``), then solved;
* logistic regression: output perturbation of the L2-regularised minimiser (sensitivity
  ``2 / (n l2)``, Chaudhuri, Monteleoni & Sarwate 2011);
* k-means: DP Lloyd, noisy counts and sums per cluster per iteration (zCDP composition);
* the small network: full-batch DP gradient descent with per-example clipping (zCDP).

Single releases use the analytic Gaussian mechanism (Balle & Wang 2018); compositions add
zCDP rho, converted with safeshare's own :func:`~safeshare.dp.budget.rho_from_epsilon`.

>>> round(gaussian_sigma(1.0, 1e-5, 1.0), 3)
3.731
>>> round(dp_counterpart(2**-4), 4)
0.7305
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.optimize import brentq
from scipy.stats import norm

from safeshare.dp.budget import rho_from_epsilon
from safeshare.errors import BudgetError
from safeshare.pac.applications import (
    Bounds,
    Histogram,
    LinearRegression,
    LogisticRegression,
    Mean,
    columns_of,
)
from safeshare.pac.bounds import DEFAULT_DELTA, dp_epsilon, posterior_success
from safeshare.pac.models import KMeans, SmallMLP, align


def dp_counterpart(mi: float, delta: float = DEFAULT_DELTA) -> float:
    """The epsilon whose DP membership bound equals the PAC bound of ``mi`` (prior 1/2)."""
    return dp_epsilon(posterior_success(mi), delta)


def gaussian_sigma(epsilon: float, delta: float, sensitivity: float) -> float:
    """The least noise scale of the analytic Gaussian mechanism for (epsilon, delta)-DP."""
    if not epsilon > 0 or not 0 < delta < 1 or not sensitivity > 0:
        raise BudgetError(
            f"need epsilon > 0, 0 < delta < 1, sensitivity > 0; got {epsilon!r}, "
            f"{delta!r}, {sensitivity!r}"
        )

    def excess(log_sigma: float) -> float:
        sigma = math.exp(log_sigma)
        a, b = sensitivity / (2 * sigma), epsilon * sigma / sensitivity
        second = math.exp(epsilon + float(norm.logcdf(-a - b)))
        return float(norm.cdf(a - b)) - second - delta

    return math.exp(brentq(excess, math.log(sensitivity) - 20, math.log(sensitivity) + 20))


@dataclass(frozen=True)
class DPRelease:
    """A DP release: the value (same layout as the PAC mechanism's) and its added noise power."""

    value: np.ndarray
    noise_power: float
    """Expected squared length of the noise added to the released vector (None-free: 0 if n/a)."""
    mechanism: str


def dp_mean(
    mean: Mean, frame: Any, bounds: Bounds, epsilon: float, delta: float, gen: np.random.Generator
) -> DPRelease:
    values = _clipped(frame, mean.columns, bounds)
    reach = np.array([max(abs(bounds[c][0]), abs(bounds[c][1])) for c in mean.columns])
    sigma = gaussian_sigma(epsilon, delta, float(np.linalg.norm(reach)))
    n = len(values)
    noisy = (values.sum(axis=0) + gen.normal(0.0, sigma, size=values.shape[1])) / n
    return DPRelease(noisy, values.shape[1] * (sigma / n) ** 2, "clipped sum + Gaussian")


def dp_histogram(
    histogram: Histogram, frame: Any, epsilon: float, delta: float, gen: np.random.Generator
) -> DPRelease:
    n = len(frame)
    counts = histogram(frame).to_numpy() * n
    sigma = gaussian_sigma(epsilon, delta, 1.0)
    noisy = (counts + gen.normal(0.0, sigma, size=counts.size)) / n
    return DPRelease(noisy, counts.size * (sigma / n) ** 2, "counts + Gaussian")


def dp_linear_regression(
    model: LinearRegression,
    frame: Any,
    bounds: Bounds,
    epsilon: float,
    delta: float,
    gen: np.random.Generator,
) -> DPRelease:
    names = (*model.features, model.target)
    z = _clipped(frame, names, bounds)
    if model.intercept:
        z = np.hstack([np.ones((len(z), 1)), z])
    reach = np.array([max(abs(bounds[c][0]), abs(bounds[c][1])) for c in names])
    sensitivity = float((reach**2).sum() + (1.0 if model.intercept else 0.0))
    sigma = gaussian_sigma(epsilon, delta, sensitivity)
    noise = np.triu(gen.normal(0.0, sigma, size=(z.shape[1], z.shape[1])))
    stats = z.T @ z + noise + np.triu(noise, 1).T
    gram, moment = stats[:-1, :-1], stats[:-1, -1]
    values, vectors = np.linalg.eigh(gram)
    floor = max(float(values.max()) * 1e-6, sigma)  # keep the noisy Gram positive definite
    gram = (vectors * np.maximum(values, floor)) @ vectors.T
    return DPRelease(np.linalg.solve(gram, moment), 0.0, "sufficient statistics + Gaussian")


def dp_logistic_regression(
    model: LogisticRegression, frame: Any, epsilon: float, delta: float, gen: np.random.Generator
) -> DPRelease:
    exact = model(frame).to_numpy()
    sigma = gaussian_sigma(epsilon, delta, 2.0 / (len(frame) * model.l2))
    return DPRelease(
        exact + gen.normal(0.0, sigma, size=exact.size), exact.size * sigma**2, "output + Gaussian"
    )


def dp_kmeans(
    model: KMeans,
    frame: Any,
    start: np.ndarray,
    epsilon: float,
    delta: float,
    gen: np.random.Generator,
) -> DPRelease:
    """DP Lloyd from a public ``start``: each iteration releases noisy counts and sums."""
    points = model.points(frame)  # in [0, 1]^p: ||x||^2 <= p
    k, p = start.shape
    rho = rho_from_epsilon(epsilon, delta)
    sigma = math.sqrt(model.iterations * (1.0 + p) / (2.0 * rho))
    centroids = start.copy()
    for _ in range(model.iterations):
        nearest = ((points[:, None, :] - centroids[None]) ** 2).sum(axis=2).argmin(axis=1)
        for j in range(k):
            members = points[nearest == j]
            count = len(members) + gen.normal(0.0, sigma)
            total = members.sum(axis=0) + gen.normal(0.0, sigma, size=p)
            if count > 1.0:
                centroids[j] = np.clip(total / count, 0.0, 1.0)
    return DPRelease(align(centroids, model.reference), 0.0, "DP Lloyd (zCDP)")


def dp_mlp(
    model: SmallMLP,
    frame: Any,
    epsilon: float,
    delta: float,
    gen: np.random.Generator,
    clip: float = 1.0,
) -> DPRelease:
    """Full-batch DP gradient descent: per-example gradients clipped to ``clip``, zCDP."""
    x, y = model.design(frame)
    rho = rho_from_epsilon(epsilon, delta)
    sigma = clip * math.sqrt(model.steps / (2.0 * rho))
    params = model.initial()
    for _ in range(model.steps):
        grads = model.gradients(params, x, y)
        norms = np.linalg.norm(grads, axis=1, keepdims=True)
        clipped = grads * np.minimum(1.0, clip / np.maximum(norms, 1e-12))
        noisy = clipped.sum(axis=0) + gen.normal(0.0, sigma, size=params.size)
        params = params - model.rate * noisy / len(x)
    return DPRelease(params, 0.0, "DP gradient descent (zCDP)")


def _clipped(frame: Any, names: tuple[str, ...], bounds: Bounds) -> np.ndarray:
    low = np.array([bounds[c][0] for c in names], dtype=float)
    high = np.array([bounds[c][1] for c in names], dtype=float)
    return np.asarray(np.clip(columns_of(frame, names), low, high))
