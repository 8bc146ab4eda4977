"""Gaussian noise shaped to an output's covariance, and the MI bound it gives.

For a release ``y = f(X) + B`` with ``B ~ N(0, Sigma_B)`` independent of the secret ``X``,
``MI(X; y) <= 1/2 log det(I + Sigma_B^-1 Sigma) <= 1/2 tr(Sigma_B^-1 Sigma)`` where ``Sigma``
is the covariance of ``f(X)`` (the Gaussian maximises entropy for a given covariance).  In the
eigenbasis of ``Sigma`` (eigenvalues ``lambda_j``) the least total noise power
``sum_j e_j`` with ``sum_j lambda_j / e_j = 2 beta`` is

    e_j = sqrt(lambda_j) * sum_k sqrt(lambda_k) / (2 beta)      (anisotropic)

against ``e_j = sum_k lambda_k / (2 beta)`` for the same noise in every direction
(isotropic).  Either way ``1/2 sum_j log(1 + lambda_j / e_j) <= beta``.

>>> import numpy as np
>>> lam = np.array([4.0, 1.0, 0.01])
>>> e = anisotropic_variances(lam, beta=0.5)
>>> bool(0.5 * np.log1p(lam / e).sum() <= 0.5), round(float((lam / e).sum()), 12)
(True, 1.0)
>>> round(float(e.sum()), 2), round(float(isotropic_variance(lam, 0.5)) * 3, 2)
(9.61, 15.03)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from safeshare.errors import BudgetError


def anisotropic_variances(eigenvalues: np.ndarray, beta: float) -> np.ndarray:
    """Per-direction noise variances ``e_j = sqrt(l_j) * sum_k sqrt(l_k) / (2 beta)``."""
    lam = _eigenvalues(eigenvalues)
    _check_beta(beta)
    root = np.sqrt(lam)
    return root * root.sum() / (2.0 * beta)


def isotropic_variance(eigenvalues: np.ndarray, beta: float) -> float:
    """One noise variance for every direction: ``sum_k l_k / (2 beta)``."""
    lam = _eigenvalues(eigenvalues)
    _check_beta(beta)
    return float(lam.sum() / (2.0 * beta))


def gaussian_mi_bound(eigenvalues: np.ndarray, variances: np.ndarray) -> float:
    """``1/2 sum_j log(1 + l_j / e_j)``: the MI bound when noise and output share a basis."""
    lam = _eigenvalues(eigenvalues)
    e = np.asarray(variances, dtype=float)
    if e.shape != lam.shape or np.any(e < 0):
        raise BudgetError("noise variances must be non-negative, one per eigenvalue")
    positive = lam > 0
    if np.any(e[positive] == 0):
        return math.inf
    return float(0.5 * np.log1p(lam[positive] / e[positive]).sum())


@dataclass(frozen=True)
class NoiseShape:
    """Gaussian noise ``N(0, V^T diag(e) V + r (I - V^T V))`` in ``d`` dimensions.

    ``basis`` holds ``k <= d`` orthonormal rows ``V``; ``variances`` their noise variances
    ``e``; ``residual`` the variance ``r`` in every direction orthogonal to them (isotropic
    noise is ``k = 0``).  Large outputs never need a ``d x d`` matrix.

    >>> shape = NoiseShape(np.eye(2)[:1], np.array([4.0]), residual=1.0)
    >>> shape.power, shape.covariance().tolist()
    (5.0, [[4.0, 0.0], [0.0, 1.0]])
    """

    basis: np.ndarray
    variances: np.ndarray
    residual: float

    def __post_init__(self) -> None:
        basis = np.atleast_2d(np.asarray(self.basis, dtype=float))
        variances = np.asarray(self.variances, dtype=float).reshape(-1)
        if basis.shape[0] != variances.size or basis.shape[0] > basis.shape[1]:
            raise BudgetError("noise basis must hold one row per variance and at most d rows")
        if np.any(~np.isfinite(variances)) or np.any(variances < 0) or not self.residual >= 0:
            raise BudgetError("noise variances must be finite and non-negative")
        object.__setattr__(self, "basis", basis)
        object.__setattr__(self, "variances", variances)
        object.__setattr__(self, "residual", float(self.residual))

    @classmethod
    def isotropic(cls, dimension: int, variance: float) -> NoiseShape:
        return cls(np.zeros((0, dimension)), np.zeros(0), variance)

    @property
    def dimension(self) -> int:
        return int(self.basis.shape[1])

    @property
    def free_directions(self) -> int:
        """How many directions get the residual variance."""
        return self.dimension - self.basis.shape[0]

    @property
    def power(self) -> float:
        """Total noise power ``tr(Sigma_B)``: the expected squared length of the noise."""
        return float(self.variances.sum() + self.free_directions * self.residual)

    def scaled(self, factor: float) -> NoiseShape:
        """The same shape with every variance multiplied by ``factor``."""
        if not factor > 0 or not math.isfinite(factor):
            raise BudgetError(f"noise scale factor must be positive and finite, got {factor!r}")
        return NoiseShape(self.basis, self.variances * factor, self.residual * factor)

    def quadratic(self, centred: np.ndarray) -> np.ndarray:
        """``c^T Sigma_B^-1 c`` for each row ``c`` (inf where a zero-variance direction moves)."""
        rows = np.atleast_2d(np.asarray(centred, dtype=float))
        projected = rows @ self.basis.T
        with np.errstate(divide="ignore", invalid="ignore"):
            inside = _safe_divide(projected**2, self.variances).sum(axis=1)
            total = inside
            if self.free_directions:
                rest = np.maximum((rows**2).sum(axis=1) - (projected**2).sum(axis=1), 0.0)
                total = inside + _safe_divide(rest, np.full_like(rest, self.residual))
        return np.asarray(total)

    def diagonal(self) -> np.ndarray:
        """The noise variance of each output coordinate (the diagonal of ``Sigma_B``)."""
        inside = (self.basis**2 * self.variances[:, None]).sum(axis=0)
        outside = self.residual * (1.0 - (self.basis**2).sum(axis=0))
        return np.asarray(inside + np.maximum(outside, 0.0))

    def covariance(self) -> np.ndarray:
        """The dense ``d x d`` covariance (for small outputs, tests and reports)."""
        projector = self.basis.T @ self.basis
        inside = self.basis.T @ (self.variances[:, None] * self.basis)
        return np.asarray(inside + self.residual * (np.eye(self.dimension) - projector))

    def sample(self, generator: np.random.Generator) -> np.ndarray:
        """One draw of the noise, from ``generator`` (pass a secure one for a release)."""
        inside = self.basis.T @ (np.sqrt(self.variances) * generator.standard_normal(len(self)))
        if not self.free_directions or self.residual == 0:
            return np.asarray(inside)
        free = generator.standard_normal(self.dimension)
        free -= self.basis.T @ (self.basis @ free)
        return np.asarray(inside + math.sqrt(self.residual) * free)

    def mi_bound(self, covariance: np.ndarray) -> float:
        """``1/2 log det(I + Sigma_B^-1 Sigma)`` for a dense output covariance ``Sigma``."""
        noise = self.covariance()
        values, vectors = np.linalg.eigh(noise)
        if values.min() <= 0:
            return math.inf
        whitening = vectors / np.sqrt(values)
        inner = whitening.T @ np.asarray(covariance, dtype=float) @ whitening
        eig = np.clip(np.linalg.eigvalsh((inner + inner.T) / 2), 0.0, None)
        return float(0.5 * np.log1p(eig).sum())

    def __len__(self) -> int:
        return int(self.basis.shape[0])


def _safe_divide(numerator: np.ndarray, denominator: np.ndarray) -> np.ndarray:
    """``n / d`` with ``0 / 0 = 0`` and ``x / 0 = inf`` for ``x > 0``."""
    out = np.divide(numerator, denominator, out=np.zeros_like(numerator), where=denominator > 0)
    out[(denominator <= 0) & (numerator > 0)] = np.inf
    return out


def _eigenvalues(eigenvalues: np.ndarray) -> np.ndarray:
    lam = np.asarray(eigenvalues, dtype=float).reshape(-1)
    if lam.size == 0 or np.any(~np.isfinite(lam)) or np.any(lam < 0):
        raise BudgetError("output variances must be finite, non-negative and not empty")
    return lam


def _check_beta(beta: float) -> None:
    if not isinstance(beta, int | float) or not math.isfinite(beta) or beta <= 0:
        raise BudgetError(f"mutual information budget must be positive, got {beta!r}")
