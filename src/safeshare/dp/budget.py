"""Typed privacy budgets and the conversions between zCDP and (epsilon, delta).

safeshare composes its mechanisms in zero-concentrated DP (rho-zCDP: costs add up)
and reports (epsilon, delta)-DP.  The conversion is dp-accounting's RDP-to-DP
bound (Canonne, Kamath & Steinke 2020; Asoodeh et al. 2020) over a dense grid of
Renyi orders, so planning (:func:`rho_from_epsilon`) and reporting
(:func:`epsilon_from_rho`) use the same function and agree exactly.

>>> rho = rho_from_epsilon(1.0, 1e-9)
>>> round(rho, 5), round(epsilon_from_rho(rho, 1e-9), 6)
(0.01497, 1.0)
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from safeshare.errors import BudgetError

# Renyi orders for the conversion: dense enough that the optimum over a continuous
# order is matched to ~1e-5 relative, from alpha ~ 1 (huge rho) to 1e6 (tiny rho).
RDP_ORDERS: tuple[float, ...] = tuple(float(a) for a in np.geomspace(1.02, 1e6, 4000))


@dataclass(frozen=True)
class PrivacyBudget:
    """An (epsilon, delta)-DP budget, validated on creation.

    >>> PrivacyBudget(1.0, 1e-9).epsilon
    1.0
    """

    epsilon: float
    delta: float

    def __post_init__(self) -> None:
        check_epsilon(self.epsilon)
        check_delta(self.delta)

    def rho(self, delta_reserved: float = 0.0) -> float:
        """The zCDP rho this budget affords, keeping ``delta_reserved`` aside."""
        if not 0 <= delta_reserved < self.delta:
            raise BudgetError(
                f"reserved delta {delta_reserved} must lie in [0, delta={self.delta})"
            )
        return rho_from_epsilon(self.epsilon, self.delta - delta_reserved)


MAX_EPSILON = 1000.0
"""The largest epsilon a budget takes: beyond it the bound e^epsilon says nothing, and the
accountants' conversions overflow."""


def check_epsilon(epsilon: float) -> None:
    if not isinstance(epsilon, int | float) or not math.isfinite(epsilon) or epsilon <= 0:
        raise BudgetError(f"epsilon must be a positive number, got {epsilon!r}; try --epsilon 1")
    if epsilon > MAX_EPSILON:
        raise BudgetError(
            f"epsilon={epsilon:g} protects no one (the guarantee bounds odds by e^epsilon); "
            f"use at most {MAX_EPSILON:g}, or a method without DP"
        )


def check_delta(delta: float) -> None:
    if not isinstance(delta, int | float) or not 0 < delta < 1:
        raise BudgetError(
            f"delta must lie strictly between 0 and 1, got {delta!r}; "
            "a common choice is 1e-9 or less than 1/(number of records)"
        )


def epsilon_from_rho(rho: float, delta: float) -> float:
    """The epsilon at which rho-zCDP implies (epsilon, delta)-DP."""
    if rho < 0:
        raise BudgetError(f"rho must be non-negative, got {rho!r}")
    check_delta(delta)
    if rho == 0:
        return 0.0
    return _epsilon_from_rho(float(rho), float(delta))


@lru_cache(maxsize=4096)
def _epsilon_from_rho(rho: float, delta: float) -> float:
    from dp_accounting import dp_event
    from dp_accounting.rdp import RdpAccountant

    accountant = RdpAccountant(orders=list(RDP_ORDERS))
    accountant.compose(dp_event.ZCDpEvent(rho))
    return float(accountant.get_epsilon(delta))


def rho_from_epsilon(epsilon: float, delta: float) -> float:
    """The largest rho whose (epsilon, delta) conversion stays within ``epsilon``."""
    check_epsilon(epsilon)
    check_delta(delta)
    lo, hi = 0.0, max(epsilon, 1.0)
    while epsilon_from_rho(hi, delta) <= epsilon:
        lo, hi = hi, hi * 2
    for _ in range(100):
        mid = (lo + hi) / 2
        if epsilon_from_rho(mid, delta) <= epsilon:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return lo
