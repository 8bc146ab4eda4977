"""From black-box outputs to noise: shape it on some runs, check it on others, scale it.

The steps of Xiao & Devadas's Algorithm 1 (estimate the output covariance by Monte Carlo,
decompose it, give each direction noise in proportion to the square root of its variance,
fall back to isotropic noise), with the safety margin made empirical:

1. The runs are split in two interleaved halves, A and B.
2. On A: centre, SVD, eigenvalues ``l_j`` (the output's variance per direction).  Tiny
   variances are floored at ``tau * mean(l)`` (``tau`` in :data:`FLOORS`; directions A never
   saw get the floor too), and each candidate gets ``e_j = sqrt(l_j) sum_k sqrt(l_k) / (2 beta)``;
   one more candidate is isotropic.
3. On B, runs the shape never saw: ``T = E[c^T Sigma_B^-1 c]`` (``c`` the centred output)
   is estimated with an upper confidence bound ``T+``.  Since
   ``MI <= 1/2 log det(I + Sigma_B^-1 Sigma) <= T / 2``, scaling the noise by ``T+ / (2 beta)``
   makes ``MI <= beta`` whenever ``T <= T+``; the candidate with the least scaled noise power
   wins (confidence split over candidates and rounds, Bonferroni).
4. ``margin = T+ / T - 1`` is the price of the estimate; calibration is converged when the
   margin is under the tolerance.

>>> import numpy as np
>>> outputs = np.random.default_rng(0).normal(size=(400, 3)) * [3.0, 1.0, 0.1]
>>> fit = fit_noise(outputs, beta=0.5, alpha=0.05)
>>> fit.method, bool(fit.noise.power > 0), bool(0 < fit.margin < 0.5)
('anisotropic', True, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from safeshare.pac.noise import NoiseShape

FLOORS: tuple[float, ...] = (1e-6, 1e-3, 1e-1)
"""Relative floors for tiny variances, as a share of the mean variance per direction."""


@dataclass(frozen=True)
class NoiseFit:
    """The chosen noise and how it was checked."""

    noise: NoiseShape
    method: str
    """``anisotropic`` or ``isotropic``."""
    floor: float | None
    """The relative floor of the chosen anisotropic candidate (None when isotropic)."""
    trace_estimate: float
    """``T`` on the held-out half, for the noise as finally scaled (``MI <~ T / 2``)."""
    margin: float
    """``T+ / T - 1``: how much the confidence bound added to the noise power."""
    eigenvalues: np.ndarray
    """The output's variance per direction, estimated on half A (largest first)."""
    candidates: int


def fit_noise(
    outputs: np.ndarray, *, beta: float, alpha: float, method: str = "auto"
) -> NoiseFit | None:
    """Shape, check and scale the noise on ``outputs`` (runs x d); None if no candidate holds.

    ``alpha`` is the total error probability of the confidence bounds of this call.
    """
    dimension = outputs.shape[1]
    half_a, half_b = outputs[0::2], outputs[1::2]
    centred_a = half_a - half_a.mean(axis=0)
    _, singular, directions = np.linalg.svd(centred_a, full_matrices=False)
    eigenvalues = singular**2 / max(len(half_a) - 1, 1)
    mean_variance = float(eigenvalues.sum()) / dimension
    if mean_variance <= 0:
        return None
    shapes: list[tuple[str, float | None, NoiseShape]] = []
    if method in ("auto", "anisotropic") and dimension > 1:
        for tau in FLOORS:
            noise = _anisotropic(eigenvalues, directions, mean_variance * tau, dimension, beta)
            shapes.append(("anisotropic", tau, noise))
    if method in ("auto", "isotropic") or dimension == 1:
        shapes.append(
            (
                "isotropic",
                None,
                NoiseShape.isotropic(dimension, mean_variance * dimension / 2 / beta),
            )
        )
    z = float(norm.ppf(1.0 - alpha / len(shapes)))
    centred_b = half_b - half_b.mean(axis=0)
    correction = len(half_b) / max(len(half_b) - 1, 1)
    best: NoiseFit | None = None
    for kind, relative_floor, shape in shapes:
        q = shape.quadratic(centred_b) * correction
        if not np.all(np.isfinite(q)):
            continue
        estimate = float(q.mean())
        if estimate <= 0:
            continue
        upper = estimate + z * float(q.std(ddof=1)) / math.sqrt(len(q))
        scale = upper / (2.0 * beta)
        scaled = shape.scaled(scale)
        if best is None or scaled.power < best.noise.power:
            best = NoiseFit(
                noise=scaled,
                method=kind,
                floor=relative_floor,
                trace_estimate=estimate / scale,
                margin=upper / estimate - 1.0,
                eigenvalues=eigenvalues,
                candidates=len(shapes),
            )
    return best


def _anisotropic(
    eigenvalues: np.ndarray, directions: np.ndarray, floor: float, dimension: int, beta: float
) -> NoiseShape:
    """Square-root-shaped noise over the directions above ``floor``; the floor elsewhere."""
    keep = eigenvalues > floor
    kept = eigenvalues[keep]
    unseen = dimension - int(keep.sum())
    root_sum = float(np.sqrt(kept).sum()) + unseen * math.sqrt(floor)
    variances = np.sqrt(kept) * root_sum / (2.0 * beta)
    residual = math.sqrt(floor) * root_sum / (2.0 * beta) if unseen else 0.0
    return NoiseShape(directions[keep], variances, residual)
