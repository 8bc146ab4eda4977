"""Gaussian differential privacy: the exact (epsilon, delta) curve of a ``mu``-GDP mechanism.

Gaussian steps of L2 sensitivity 1 and noise scales ``sigma_i`` compose to ``mu``-GDP with
``mu^2 = sum 1 / sigma_i^2`` (Dong, Roth & Su 2022, Corollary 3.3), and ``mu``-GDP is
exactly the family of (epsilon, delta(epsilon)) guarantees with

    delta(epsilon) = Phi(-epsilon/mu + mu/2) - e^epsilon * Phi(-epsilon/mu - mu/2)

(their Corollary 2.13).  :class:`safeshare.dp.accountant.Accountant` composes Gaussian
events this way under ``accounting="gdp"``.

>>> round(gdp_epsilon(1.0, 1e-5), 4), round(gdp_mu(4.3772, 1e-5), 3)
(4.3772, 1.0)
"""

from __future__ import annotations

import math

from scipy.special import log_ndtr

from safeshare.errors import BudgetError

_BISECTIONS = 200  # halvings of the bracket: far below float resolution
_MU_MAX = 100.0  # mu beyond this gives delta = 1 - 1e-300: no privacy at all


def _check(name: str, value: float, upper: float | None = None) -> None:
    if not (math.isfinite(value) and value > 0 and (upper is None or value < upper)):
        bound = f" and below {upper:g}" if upper is not None else ""
        raise BudgetError(f"{name} must be a positive number{bound}, got {value!r}")


def gdp_delta(epsilon: float, mu: float) -> float:
    """The exact delta of a ``mu``-GDP mechanism at ``epsilon`` (computed in log space).

    >>> round(gdp_delta(1.0, 1.0), 6)
    0.126937
    """
    if epsilon < 0 or not math.isfinite(epsilon):
        raise BudgetError(f"epsilon must be a non-negative number, got {epsilon!r}")
    _check("mu", mu)
    first = math.exp(log_ndtr(-epsilon / mu + mu / 2))
    second = math.exp(epsilon + log_ndtr(-epsilon / mu - mu / 2))
    return max(first - second, 0.0)


def gdp_epsilon(mu: float, delta: float) -> float:
    """The smallest epsilon at which a ``mu``-GDP mechanism is (epsilon, ``delta``)-DP.

    >>> round(gdp_epsilon(1.0, 1e-5), 4)
    4.3772
    """
    _check("mu", mu)
    _check("delta", delta, 1.0)
    if gdp_delta(0.0, mu) <= delta:
        return 0.0
    low, high = 0.0, 1.0
    while gdp_delta(high, mu) > delta:  # delta(epsilon) decreases in epsilon
        low, high = high, 2 * high
    for _ in range(_BISECTIONS):
        middle = (low + high) / 2
        if middle in (low, high):
            break
        low, high = (middle, high) if gdp_delta(middle, mu) > delta else (low, middle)
    return high


def gdp_mu(epsilon: float, delta: float) -> float:
    """The largest ``mu`` such that ``mu``-GDP implies (``epsilon``, ``delta``)-DP.

    >>> round(gdp_mu(1.0, 1e-5), 4)
    0.2681
    """
    _check("epsilon", epsilon)
    _check("delta", delta, 1.0)
    low, high = 0.0, _MU_MAX  # delta(epsilon; mu) increases in mu
    for _ in range(_BISECTIONS):
        middle = (low + high) / 2
        if middle in (low, high):
            break
        low, high = (middle, high) if gdp_delta(epsilon, middle) <= delta else (low, middle)
    if low == 0.0:
        raise BudgetError(f"no mu > 0 reaches epsilon={epsilon:g} at delta={delta:g}")
    return low
