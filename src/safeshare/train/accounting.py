"""DP-SGD accounting: Poisson-subsampled Gaussian steps, their epsilon, and noise calibration.

One DP-SGD step adds Gaussian noise of scale ``noise_multiplier * clip`` to the sum of
per-record gradients clipped to norm ``clip``, over a batch drawn by Poisson sampling
(each record joins with probability ``sampling_rate``, independently).  The privacy
unit is one record (add/remove neighbours).  Epsilon comes from dp-accounting, by
Renyi DP (``"rdp"``, dp-accounting's default orders) or privacy loss distributions
(``"pld"``, tighter, the default), or from Opacus's privacy random variable accountant
(``"prv"``, Gopi et al. 2021: an independent numerical composition, reported as its
*upper bound*, so about ``PRV_EPS_ERROR`` above the tight figure, never below it).
:func:`calibrate_noise` inverts any of them by bisection.

>>> q = 256 / 50_000
>>> round(dpsgd_epsilon(1.0, q, 1960, 1e-5, accountant="rdp"), 4)
1.4762
>>> round(dpsgd_epsilon(1.0, q, 1960, 1e-5, accountant="pld"), 4)
1.2273
>>> round(dpsgd_epsilon(1.0, q, 1960, 1e-5, accountant="prv"), 4)
1.2374
>>> sigma = calibrate_noise(1.0, 1e-5, q, 1960, accountant="rdp")
>>> round(sigma, 2), dpsgd_epsilon(sigma, q, 1960, 1e-5, accountant="rdp") <= 1.0
(1.21, True)
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from safeshare.dp.budget import check_delta, check_epsilon
from safeshare.errors import BudgetError, MissingDependencyError

Accounting = Literal["pld", "rdp", "prv"]
ACCOUNTANTS: tuple[str, ...] = ("pld", "rdp", "prv")
# where each accountant comes from (for cards and messages)
ACCOUNTANT_SOURCE = {"pld": "dp-accounting", "rdp": "dp-accounting", "prv": "Opacus"}

# the bracket searched for a noise multiplier; beyond it DP-SGD is useless or not needed
_SIGMA_MIN = 1 / 16
_SIGMA_MAX = 1024.0
# PLD discretization of privacy losses: dp-accounting's default (exact figures), and a
# coarser one for the first bisection (pessimistic too, so only ever larger)
_FINE = 1e-4
_COARSE = 1e-3
# PRV: Opacus's default errors.  Its upper bound is epsilon(delta - delta_error) +
# eps_error of the discretized composition, a guarantee at delta; eps_error is absolute
PRV_EPS_ERROR = 0.01
_PRV_DELTA_ERROR = 1e-3  # relative to delta
# the PRV domain (grid points) grows with the privacy loss; beyond this it would take
# gigabytes, and such a configuration spends a very large epsilon anyway
_PRV_MAX_POINTS = 10_000_000


def _check(noise_multiplier: float, sampling_rate: float, steps: int) -> None:
    if not (math.isfinite(noise_multiplier) and noise_multiplier > 0):
        raise BudgetError(
            f"noise multiplier must be a positive number, got {noise_multiplier!r}; "
            "try 1.0 or calibrate it with calibrate_noise"
        )
    if not 0 < sampling_rate <= 1:
        raise BudgetError(
            f"sampling rate q must lie in (0, 1], got {sampling_rate!r}; q = batch size / records"
        )
    if isinstance(steps, bool) or not isinstance(steps, int) or steps < 1:
        raise BudgetError(f"steps must be a positive whole number, got {steps!r}")


def _check_accountant(accountant: str) -> None:
    if accountant not in ACCOUNTANTS:
        raise BudgetError(f"accountant {accountant!r} is unknown; use one of {list(ACCOUNTANTS)}")


def _dp_event(noise_multiplier: float, sampling_rate: float, steps: int) -> Any:
    from dp_accounting import dp_event

    step = dp_event.GaussianDpEvent(noise_multiplier)
    if sampling_rate < 1:
        step = dp_event.PoissonSampledDpEvent(sampling_rate, step)
    return dp_event.SelfComposedDpEvent(step, steps)


def dpsgd_epsilon(
    noise_multiplier: float,
    sampling_rate: float,
    steps: int,
    delta: float,
    *,
    accountant: Accounting = "pld",
) -> float:
    """Epsilon of ``steps`` Poisson-subsampled Gaussian steps at ``delta`` (per privacy unit).

    With ``accountant="prv"`` this is the upper end of the PRV accountant's error bar
    (Opacus's ``eps_upper``: at most ``PRV_EPS_ERROR`` above the exact epsilon of the
    composition, and never below it), so the claim is never optimistic.  A PRV
    configuration whose discretization would not fit in memory (a privacy loss far out of
    any useful range) raises :class:`BudgetError`.
    """
    _check(noise_multiplier, sampling_rate, steps)
    check_delta(delta)
    _check_accountant(accountant)
    if accountant == "prv":
        epsilon = _prv_epsilon(noise_multiplier, sampling_rate, steps, delta)
        if epsilon is None:
            raise BudgetError(
                f"the PRV accountant cannot evaluate noise multiplier {noise_multiplier:g} "
                f"over {steps} steps at sampling rate {sampling_rate:.4g}: the privacy loss "
                "is too spread out (epsilon would be very large); use more noise, fewer "
                "steps, or accountant='pld'"
            )
        return epsilon
    return _epsilon(noise_multiplier, sampling_rate, steps, delta, accountant, _FINE)


def _prv_epsilon(
    noise_multiplier: float, sampling_rate: float, steps: int, delta: float
) -> float | None:
    """Opacus's PRV upper bound on epsilon, or None where its grid would be too large."""
    import numpy as np

    try:
        from opacus.accountants import PRVAccountant
        from opacus.accountants.analysis.prv import (
            PoissonSubsampledGaussianPRV,
            compute_safe_domain_size,
        )
    except ImportError as err:
        raise MissingDependencyError(
            f"the PRV accountant comes with Opacus ({err.name} is missing); install it with: "
            "pip install 'safeshare[train]', or use accountant='pld'"
        ) from None

    delta_error = delta * _PRV_DELTA_ERROR
    # Opacus sizes the grid from an RDP bound and warns when its best order is at the end
    # of its range (a looser grid bound, still valid); numpy warns at log(1 - q), q = 1
    with (
        warnings.catch_warnings(),
        np.errstate(divide="ignore", over="ignore", invalid="ignore"),
    ):
        warnings.filterwarnings("ignore", message="Optimal order is the", category=UserWarning)
        # the grid Opacus would build (PRVAccountant._get_domain): checked before building
        half_width = compute_safe_domain_size(
            prvs=[PoissonSubsampledGaussianPRV(sampling_rate, noise_multiplier)],
            max_self_compositions=[steps],
            eps_error=PRV_EPS_ERROR,
            delta_error=delta_error,
        )
        mesh = PRV_EPS_ERROR / math.sqrt(steps * math.log(12 / delta_error) / 2)
        if not math.isfinite(half_width) or 2 * half_width / mesh > _PRV_MAX_POINTS:
            return None
        prv = PRVAccountant()
        prv.history = [(noise_multiplier, sampling_rate, steps)]
        try:
            upper = prv.get_epsilon(delta, eps_error=PRV_EPS_ERROR, delta_error=delta_error)
        except (ValueError, RuntimeError) as error:  # Opacus: delta too small for the grid
            raise BudgetError(
                f"the PRV accountant cannot compute epsilon at delta={delta:g} ({error}); "
                "use accountant='pld'"
            ) from error
    return float(upper)


def _epsilon(
    noise_multiplier: float,
    sampling_rate: float,
    steps: int,
    delta: float,
    accountant: str,
    discretization: float,
) -> float:
    event = _dp_event(noise_multiplier, sampling_rate, steps)
    if accountant == "rdp":
        from dp_accounting.rdp import RdpAccountant

        rdp = RdpAccountant()
        rdp.compose(event)
        return float(rdp.get_epsilon(delta))
    from dp_accounting.pld import PLDAccountant

    pld = PLDAccountant(value_discretization_interval=discretization)
    pld.compose(event)
    return float(pld.get_epsilon(delta))


def calibrate_noise(
    epsilon: float,
    delta: float,
    sampling_rate: float,
    steps: int,
    *,
    accountant: Accounting = "pld",
    tolerance: float = 1e-3,
) -> float:
    """The smallest noise multiplier (to ``tolerance``, relative) whose epsilon is <= ``epsilon``.

    Bisection on log(sigma); the value returned always meets the budget, so it is at
    most ``1 + tolerance`` times the exact optimum.  Raises :class:`BudgetError` when
    even sigma = 1024 cannot reach ``epsilon`` (too many steps or too high a rate).
    """
    check_epsilon(epsilon)
    check_delta(delta)
    _check(1.0, sampling_rate, steps)
    _check_accountant(accountant)
    if not 0 < tolerance < 1:
        raise BudgetError(f"tolerance must lie in (0, 1), got {tolerance!r}")

    if accountant == "prv":

        def prv_cost(sigma: float) -> float:
            spent = _prv_epsilon(sigma, sampling_rate, steps, delta)
            return math.inf if spent is None else spent

        # a configuration PRV cannot evaluate counts as over budget: more noise, never less
        return _bisect(
            epsilon,
            prv_cost,
            lambda s: prv_cost(s) <= epsilon,
            tolerance,
            sampling_rate,
            steps,
        )
    if accountant == "rdp":
        meets: Callable[[float], bool] = _RdpBudgetTest(epsilon, delta, sampling_rate, steps)
        return _bisect(
            epsilon,
            lambda s: _epsilon(s, sampling_rate, steps, delta, accountant, _COARSE),
            meets,
            tolerance,
            sampling_rate,
            steps,
        )

    def coarse_cost(sigma: float) -> float:
        return _epsilon(sigma, sampling_rate, steps, delta, accountant, _COARSE)

    coarse = _bisect(
        epsilon,
        coarse_cost,
        lambda s: coarse_cost(s) <= epsilon,
        tolerance,
        sampling_rate,
        steps,
    )

    def fine(sigma: float) -> float:
        return _epsilon(sigma, sampling_rate, steps, delta, accountant, _FINE)

    # the coarse answer meets the budget under the fine accountant too; refine below it
    low, high = coarse / 1.02, coarse
    while fine(high) > epsilon:  # never seen, but never trust a rounding argument blindly
        low, high = high, high * 1.02
    return _refine(lambda s: fine(s) <= epsilon, low, high, tolerance)


def check_reachable(
    epsilon: float,
    delta: float,
    sampling_rate: float,
    steps: int,
    *,
    accountant: Accounting = "pld",
) -> None:
    """Refuse a budget that even the most noise :func:`calibrate_noise` tries cannot meet:
    one accountant evaluation, cheap enough to run before a job's spend.

    >>> check_reachable(1e-300, 1e-5, 0.1, 90, accountant="rdp")
    Traceback (most recent call last):
    ...
    safeshare.errors.BudgetError: epsilon=1e-300 cannot be reached with 90 steps at sampling rate 0.1: ...
    """
    check_epsilon(epsilon)
    check_delta(delta)
    _check(1.0, sampling_rate, steps)
    _check_accountant(accountant)
    if accountant == "prv":
        spent = _prv_epsilon(_SIGMA_MAX, sampling_rate, steps, delta)
        spent = math.inf if spent is None else spent
    else:
        spent = _epsilon(_SIGMA_MAX, sampling_rate, steps, delta, accountant, _COARSE)
    if not spent <= epsilon:
        raise _unreachable(epsilon, steps, sampling_rate, _SIGMA_MAX, spent)


def _unreachable(
    epsilon: float, steps: int, sampling_rate: float, sigma: float, spent: float
) -> BudgetError:
    """The refusal of a budget that noise multiplier ``sigma`` (the most tried) cannot meet."""
    return BudgetError(
        f"epsilon={epsilon:g} cannot be reached with {steps} steps at sampling rate "
        f"{sampling_rate:.4g}: even noise multiplier {sigma:g} spends epsilon={spent:.3g}; "
        "use fewer steps, a smaller sampling rate (batch), or a larger epsilon"
    )


class _RdpBudgetTest:
    """Whether sigma meets ``epsilon`` under dp-accounting's RDP accountant, cheaply.

    The RDP epsilon is the minimum over orders of a per-order bound, computed order by
    order.  So sigma meets the budget exactly when some order's bound does (each "yes"
    is a certificate, one order suffices); and as each order's bound grows as sigma
    shrinks, below a sigma already met only the orders that met it there can meet it:
    a bisection evaluates all orders a few times, then a handful.  The answers are the
    full accountant's (a "no" rests on that monotonicity, which can only err towards
    more noise).
    """

    def __init__(self, epsilon: float, delta: float, sampling_rate: float, steps: int) -> None:
        from dp_accounting.rdp import rdp_privacy_accountant

        self._epsilon, self._delta = epsilon, delta
        self._rate, self._steps = sampling_rate, steps
        self._orders: tuple[float, ...] = tuple(rdp_privacy_accountant.DEFAULT_RDP_ORDERS)
        self._met: list[tuple[float, tuple[float, ...]]] = []  # (sigma, orders meeting there)
        self._answers: dict[float, bool] = {}

    def _order_epsilon(self, sigma: float, order: float) -> float:
        from dp_accounting.rdp import RdpAccountant

        rdp = RdpAccountant(orders=[order])
        rdp.compose(_dp_event(sigma, self._rate, self._steps))
        return float(rdp.get_epsilon(self._delta))

    def __call__(self, sigma: float) -> bool:
        if sigma in self._answers:
            return self._answers[sigma]
        above = [met for met in self._met if met[0] >= sigma]
        candidates = min(above)[1] if above else self._orders
        meeting = tuple(a for a in candidates if self._order_epsilon(sigma, a) <= self._epsilon)
        if meeting:
            self._met.append((sigma, meeting))
        self._answers[sigma] = bool(meeting)
        return bool(meeting)


def _bisect(
    epsilon: float,
    cost: Callable[[float], float],
    meets: Callable[[float], bool],
    tolerance: float,
    sampling_rate: float,
    steps: int,
) -> float:
    """The smallest sigma that ``meets`` the budget (``cost``: its epsilon, for the message)."""
    # bracket the answer by doubling from sigma = 1, then bisect on log(sigma)
    low, high = 1.0, 1.0
    if meets(1.0):
        while low > _SIGMA_MIN and meets(low / 2):
            low /= 2
        if low <= _SIGMA_MIN:
            return low
        high, low = low, low / 2
    else:
        while not meets(high):
            if high >= _SIGMA_MAX:
                raise _unreachable(epsilon, steps, sampling_rate, high, cost(high))
            low, high = high, high * 2
    return _refine(meets, low, high, tolerance)


def _refine(meets: Callable[[float], bool], low: float, high: float, tolerance: float) -> float:
    """Bisection on log(sigma) between ``low`` (too little noise) and ``high`` (enough)."""
    while high / low > 1 + tolerance:
        middle = math.sqrt(low * high)
        if meets(middle):
            high = middle
        else:
            low = middle
    return high


@dataclass(frozen=True)
class DPSGDEvent:
    """``steps`` DP-SGD steps: Poisson sampling at rate ``sampling_rate``, Gaussian noise.

    It follows :class:`safeshare.dp.events.PrivacyEvent`: ``to_dp_accounting`` is the
    exact event, so :class:`safeshare.dp.Accountant` composes it correctly with others.
    Its ``rho`` is the zCDP bound *without* amplification by sampling
    (steps / 2 sigma^2): valid but loose, used only where zCDP shares are needed;
    :meth:`epsilon` is the tight figure.

    >>> event = DPSGDEvent(1.0, 256 / 50_000, 196)
    >>> round(event.epsilon(1e-5), 4), round(event.epsilon(1e-5, accountant="rdp"), 4)
    (0.4478, 0.9755)
    """

    noise_multiplier: float
    sampling_rate: float
    steps: int
    label: str = "dp-sgd"

    def __post_init__(self) -> None:
        _check(self.noise_multiplier, self.sampling_rate, self.steps)

    @property
    def rho(self) -> float:
        return self.steps / (2 * self.noise_multiplier**2)

    @property
    def delta(self) -> float:
        return 0.0

    @property
    def mechanism(self) -> str:
        return "poisson-subsampled gaussian (dp-sgd)"

    def to_dp_accounting(self) -> Any:
        return _dp_event(self.noise_multiplier, self.sampling_rate, self.steps)

    def epsilon(self, delta: float, *, accountant: Accounting = "pld") -> float:
        """The tight epsilon at ``delta`` (privacy loss distributions by default)."""
        return dpsgd_epsilon(
            self.noise_multiplier, self.sampling_rate, self.steps, delta, accountant=accountant
        )

    def describe(self) -> dict[str, Any]:
        return {
            "noise_multiplier": self.noise_multiplier,
            "sampling_rate": self.sampling_rate,
            "steps": self.steps,
            "sampling": "poisson",
        }
