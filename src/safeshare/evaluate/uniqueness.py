"""Population uniqueness from a sample: Zayatz, Pitman and SNB estimators and Dankar's rule.

A record unique in the *sample* may still share its quasi-identifiers with others in the
population; what an attacker with a population register exploits is *population*
uniqueness.  From the sample's class-size histogram (``c_i`` classes of size ``i``, ``u``
classes in all, ``n`` records) and the sampling fraction ``pi = n / N``:

* **Zayatz** (1991): the population class-size distribution is taken to be the sample's;
  ``P(F=1 | f=1)`` follows from hypergeometric sampling, and ``N``'s uniques number
  ``c_1 * P(F=1 | f=1) / pi``.
* **Pitman** (Hoshino 2001): class sizes follow a Pitman sampling formula with parameters
  ``(theta, alpha)`` fitted by maximum likelihood; uniques number
  ``Gamma(theta + 1) / Gamma(theta + alpha) * N ** alpha``.
* **SNB** (Chen & Keller-McNulty 1998): ``K`` non-empty population classes (Shlosser's
  estimate) of sizes ``1 + NegBin(a, b)``; ``(a, b)`` solve the expected numbers of sample
  classes of sizes 1 and 2; uniques number ``K * b ** a``.
* **Dankar et al.** (2012) choose: Pitman when ``pi <= 0.1`` (Zayatz if Pitman fails), else the
  smaller of Zayatz and SNB (Zayatz if SNB fails).

>>> est = population_uniqueness(np.array([1, 1, 2]), population_size=10)   # c_1 = 2, c_2 = 1
>>> round(est.zayatz, 6)     # hand-computed in tests/evaluate/test_uniqueness.py
3.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import optimize, special, stats

SMALL_SAMPLING_FRACTION = 0.1


@dataclass(frozen=True)
class PopulationUniqueness:
    """Estimated numbers of population-unique records (``None`` where a model fails)."""

    population_size: int
    sample_size: int
    sample_uniques: int
    zayatz: float | None
    pitman: float | None
    snb: float | None
    dankar: float
    dankar_model: str

    @property
    def sampling_fraction(self) -> float:
        return self.sample_size / self.population_size

    @property
    def share(self) -> float:
        """Dankar's estimate as a share of the population."""
        return self.dankar / self.population_size

    def to_dict(self) -> dict[str, Any]:
        return {
            "population_size": self.population_size,
            "sampling_fraction": self.sampling_fraction,
            "sample_uniques": self.sample_uniques,
            "population_uniques": {
                "zayatz": self.zayatz,
                "pitman": self.pitman,
                "snb": self.snb,
                "dankar": self.dankar,
            },
            "dankar_model": self.dankar_model,
            "population_unique_share": self.share,
        }


def population_uniqueness(class_sizes: np.ndarray, population_size: int) -> PopulationUniqueness:
    """All three estimates and Dankar's choice, from the sizes of the sample's classes."""
    sizes = np.asarray(class_sizes, dtype=np.int64)
    sizes = sizes[sizes > 0]
    n = int(sizes.sum())
    if population_size < n:
        raise ValueError(
            f"the population ({population_size}) cannot be smaller than the sample ({n})"
        )
    uniques = int((sizes == 1).sum())
    if uniques == 0:
        return PopulationUniqueness(population_size, n, 0, 0.0, 0.0, 0.0, 0.0, "none")
    if population_size == n:
        exact = float(uniques)
        return PopulationUniqueness(
            population_size, n, uniques, exact, exact, exact, exact, "exact"
        )
    zay = zayatz(sizes, population_size)
    pit = pitman(sizes, population_size)
    snb = snb_estimate(sizes, population_size)
    model, value = dankar_choice(n / population_size, zay, pit, snb)
    return PopulationUniqueness(
        population_size, n, uniques, zay, pit, snb, float(value or 0.0), model
    )


def dankar_share(class_sizes: np.ndarray, population_size: int) -> float:
    """The share of the population Dankar's rule estimates unique, computing only the
    estimates the rule reads at this sampling fraction (what a search checks at every node).

    >>> sizes = np.array([1] * 40 + [2] * 10 + [5] * 4)
    >>> dankar_share(sizes, 1000) == population_uniqueness(sizes, 1000).share
    True
    """
    sizes = np.asarray(class_sizes, dtype=np.int64)
    sizes = sizes[sizes > 0]
    n = int(sizes.sum())
    uniques = int((sizes == 1).sum())
    if uniques == 0 or population_size <= n:
        return uniques / max(population_size, 1) if population_size <= n else 0.0
    if n / population_size <= SMALL_SAMPLING_FRACTION:
        value = pitman(sizes, population_size)
        if value is None:
            value = zayatz(sizes, population_size)
    else:
        _, value = dankar_choice(
            n / population_size, zayatz(sizes, population_size), None,
            snb_estimate(sizes, population_size),
        )  # fmt: skip
    return float(value or 0.0) / population_size


def dankar_choice(
    sampling_fraction: float, zay: float | None, pit: float | None, snb: float | None
) -> tuple[str, float | None]:
    """Dankar et al.'s decision rule: which estimate to trust at this sampling fraction."""
    if sampling_fraction <= SMALL_SAMPLING_FRACTION:
        return ("pitman", pit) if pit is not None else ("zayatz", zay)
    if snb is not None and (zay is None or snb < zay):
        return "snb", snb
    return "zayatz", zay


def _histogram(sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    values, counts = np.unique(sizes, return_counts=True)
    return values, counts


def zayatz(sizes: np.ndarray, population_size: int) -> float | None:
    """Zayatz's estimate of the number of population uniques."""
    n = int(sizes.sum())
    values, counts = _histogram(sizes)
    if values[0] != 1:
        return 0.0
    likelihood = stats.hypergeom.pmf(1, population_size, values, n)
    weights = counts / counts.sum()
    evidence = float(np.sum(weights * likelihood))
    if evidence <= 0:
        return None
    posterior = weights[0] * likelihood[0] / evidence
    return float(counts[0] * posterior / (n / population_size))


def pitman_log_likelihood(theta: float, alpha: float, sizes: np.ndarray) -> float:
    """Log-likelihood of a partition with class sizes ``sizes`` under Pitman's formula."""
    return _pitman_log_likelihood(theta, alpha, *_histogram(np.asarray(sizes)))


def _pitman_log_likelihood(
    theta: float, alpha: float, values: np.ndarray, counts: np.ndarray
) -> float:
    """:func:`pitman_log_likelihood` from the class-size histogram (``counts[i]`` classes of
    ``values[i]`` records): one term per distinct size, not per class."""
    n, u = int(values @ counts), int(counts.sum())
    classes = (
        (u - 1) * math.log(alpha)
        + special.gammaln(theta / alpha + u)
        - special.gammaln(theta / alpha + 1)
    )
    records = special.gammaln(theta + n) - special.gammaln(theta + 1)
    within = float(counts @ (special.gammaln(values - alpha) - special.gammaln(1 - alpha)))
    return float(classes - records + within)


def pitman_fit(sizes: np.ndarray) -> tuple[float, float] | None:
    """Maximum-likelihood ``(theta, alpha)``; ``None`` when the fit does not converge."""
    values, counts = _histogram(np.asarray(sizes))

    def negative(params: np.ndarray) -> float:
        alpha = float(special.expit(params[1]))
        if not 0 < alpha < 1 or not -700 < params[0] < 700:  # outside the model (or float)
            return math.inf
        theta = -alpha + math.exp(params[0])
        with np.errstate(invalid="ignore", over="ignore"):  # inf - inf at the model's edge
            value = -_pitman_log_likelihood(theta, alpha, values, counts)
        return value if math.isfinite(value) else math.inf

    best = None
    for start in ((math.log(len(sizes)), 0.0), (0.0, 1.0), (math.log(10 * len(sizes)), -1.0)):
        result = optimize.minimize(
            negative,
            np.array(start),
            method="Nelder-Mead",
            options={"xatol": 1e-9, "fatol": 1e-11, "maxiter": 4000},
        )
        if result.success and (best is None or result.fun < best.fun):
            best = result
    if best is None or not math.isfinite(best.fun):
        return None
    alpha = float(special.expit(best.x[1]))
    return float(-alpha + math.exp(best.x[0])), alpha


def pitman(sizes: np.ndarray, population_size: int) -> float | None:
    """Pitman's estimate of the number of population uniques (Hoshino 2001)."""
    fitted = pitman_fit(sizes)
    if fitted is None:
        return None
    theta, alpha = fitted
    if alpha <= 1e-6 or population_size < 1:
        return None
    log_value = (
        special.gammaln(theta + 1)
        - special.gammaln(theta + alpha)
        + alpha * math.log(population_size)
    )
    value = math.exp(log_value) if log_value < 700 else math.inf
    return value if 0 <= value <= population_size else None


def shlosser(sizes: np.ndarray, sampling_fraction: float) -> float:
    """Shlosser's estimate of the number of non-empty classes in the population."""
    values, counts = _histogram(sizes)
    q = sampling_fraction
    c1 = float(counts[values == 1].sum())
    numerator = float(np.sum((1 - q) ** values * counts))
    denominator = float(np.sum(values * q * (1 - q) ** (values - 1) * counts))
    return len(sizes) + c1 * numerator / denominator if denominator > 0 else float(len(sizes))


def snb_expected(a: float, b: float, k: float, pi: float) -> tuple[float, float]:
    """Expected numbers of sample classes of size 1 and 2 under the SNB model."""
    s = 1 - pi
    d = s * (1 - b)
    g = (b / (1 - d)) ** a
    first = a * (1 - b) / (1 - d) * g
    second = a * (a + 1) * (1 - b) ** 2 / (1 - d) ** 2 * g
    c1 = k * pi * g * (1 + a * d / (1 - d))
    c2 = k * pi**2 / 2 * (2 * first + s * second)
    return c1, c2


def snb_estimate(sizes: np.ndarray, population_size: int) -> float | None:
    """The SNB estimate of the number of population uniques; ``None`` if it does not solve."""
    pi = int(sizes.sum()) / population_size
    values, counts = _histogram(sizes)
    c1 = float(counts[values == 1].sum())
    c2 = float(counts[values == 2].sum())
    if c2 == 0:
        return None
    k = shlosser(sizes, pi)

    def residual(params: np.ndarray) -> np.ndarray:
        e1, e2 = snb_expected(params[0], params[1], k, pi)
        return np.array([e1 / c1 - 1, e2 / c2 - 1])

    for start in ((1.0, 0.5), (0.1, 0.1), (5.0, 0.9), (0.5, 0.01)):
        try:
            fit = optimize.least_squares(
                residual,
                np.array(start),
                bounds=([1e-8, 1e-12], [1e4, 1 - 1e-12]),
                xtol=1e-14,
                ftol=1e-14,
                gtol=1e-14,
            )
        except (ValueError, FloatingPointError):
            continue
        if fit.success and np.max(np.abs(fit.fun)) < 1e-6:
            a, b = fit.x
            value = float(k * b**a)
            if 0 <= value <= population_size:
                return value
    return None
