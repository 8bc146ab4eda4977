"""Private Evolution's privacy accounting, exactly, as Gaussian differential privacy.

PE releases ``T`` noisy nearest-neighbour histograms, each of L2 sensitivity 1 with
Gaussian noise of scale ``sigma``.  Composed, they are ``mu``-GDP with
``mu = sqrt(T) / sigma`` (Dong, Roth & Su 2022, Corollary 3.3), whose exact
(epsilon, delta) curve is :mod:`safeshare.dp.gdp`.  This is tighter than going through Renyi DP: the noise
multipliers published with Aug-PE (Xie et al. 2024) for Yelp at epsilon 1, 2, 4 with
``T = 10`` and ``delta = 1/(N log N)``, ``N = 1,939,290`` are reproduced:

>>> import math
>>> from safeshare.dp.gdp import gdp_epsilon
>>> delta = 1 / (1_939_290 * math.log(1_939_290))
>>> [round(noise_multiplier(e, delta, 10), 2) for e in (1, 2, 4)]
[15.4, 8.04, 4.25]
>>> round(gdp_epsilon(math.sqrt(10) / 15.40, delta), 4)
1.0003

As zCDP the same mechanism costs ``rho = T / (2 sigma^2) = mu^2 / 2``; it is declared to
the project's accountant as ``T`` :class:`~safeshare.dp.events.GaussianEvent` (see
:func:`histogram_events`).
"""

from __future__ import annotations

import math

from safeshare.dp.events import GaussianEvent
from safeshare.dp.gdp import gdp_mu
from safeshare.errors import BudgetError


def _check(name: str, value: float, upper: float | None = None) -> None:
    if not (math.isfinite(value) and value > 0 and (upper is None or value < upper)):
        bound = f" and below {upper:g}" if upper is not None else ""
        raise BudgetError(f"{name} must be a positive number{bound}, got {value!r}")


def noise_multiplier(epsilon: float, delta: float, iterations: int) -> float:
    """The noise scale ``sigma`` of each of ``iterations`` sensitivity-1 histograms.

    The smallest sigma whose composition is (``epsilon``, ``delta``)-DP exactly:
    ``sigma = sqrt(T) / gdp_mu(epsilon, delta)``.

    >>> round(noise_multiplier(1.0, 1e-9, 1), 3)
    5.495
    """
    if not isinstance(iterations, int) or isinstance(iterations, bool) or iterations < 1:
        raise BudgetError(f"iterations must be a positive integer, got {iterations!r}")
    return math.sqrt(iterations) / gdp_mu(epsilon, delta)


def noise_from_rho(rho: float, iterations: int) -> float:
    """The noise scale when the budget is a zCDP share ``rho``: ``sqrt(T / (2 rho))``.

    >>> noise_from_rho(0.5, 4)
    2.0
    """
    _check("rho", rho)
    if not isinstance(iterations, int) or isinstance(iterations, bool) or iterations < 1:
        raise BudgetError(f"iterations must be a positive integer, got {iterations!r}")
    return math.sqrt(iterations / (2 * rho))


def histogram_events(sigma: float, iterations: int) -> list[GaussianEvent]:
    """The spend of PE as project events: one sensitivity-1 Gaussian histogram per iteration.

    >>> events = histogram_events(15.4, 10)
    >>> len(events), round(sum(e.rho for e in events), 6), events[0].label
    (10, 0.021083, 'pe: nearest-neighbour histogram 1/10')
    """
    _check("sigma", sigma)
    return [
        GaussianEvent(sigma, 1.0, f"pe: nearest-neighbour histogram {t}/{iterations}")
        for t in range(1, iterations + 1)
    ]
