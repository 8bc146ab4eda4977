"""What a mutual-information budget means: posterior success, DP-equivalent epsilon, composition.

PAC Privacy (Xiao & Devadas, CRYPTO 2023) bounds the mutual information (MI, in nats) between
the secret and the release.  Any adversary whose best blind guess succeeds with probability
``prior`` then succeeds after seeing the release with a probability ``p`` that obeys

    KL(Bern(p) || Bern(prior)) <= MI,

so :func:`posterior_success` is the largest such ``p``.  For membership (prior 1/2) an
(epsilon, delta)-DP release allows success up to ``(e^epsilon + delta) / (1 + e^epsilon)``;
:func:`dp_epsilon` inverts that, giving the epsilon whose worst-case membership bound equals
the PAC bound: ``epsilon = ln((p - delta) / (1 - p))``.  MI adds up over releases on the same
secret (:func:`compose`).

The published table for prior 1/2: one release at MI 2^-4 allows 67.5%; 10^3 releases at
2^-12 allow 83.4%; 10^6 releases at 2^-32 allow 51.08%, i.e. epsilon 0.0431 at delta 1e-5.

>>> round(posterior_success(2**-4), 3)
0.675
>>> round(posterior_success(compose(*[2**-12] * 1000)), 3)
0.834
>>> p = posterior_success(compose_repeated(2**-32, 10**6))
>>> round(p, 4), round(dp_epsilon(p, delta=1e-5), 4)
(0.5108, 0.0431)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from scipy.optimize import brentq

from safeshare.errors import BudgetError

MEMBERSHIP_PRIOR = 0.5
DEFAULT_DELTA = 1e-5


def kl_bernoulli(p: float, q: float) -> float:
    """KL(Bern(p) || Bern(q)) in nats (``0 log 0 = 0``)."""
    _check_probability(p, "p", open_interval=False)
    _check_probability(q, "q", open_interval=True)
    total = 0.0
    if p > 0:
        total += p * math.log(p / q)
    if p < 1:
        total += (1 - p) * math.log((1 - p) / (1 - q))
    return total


def posterior_success(mi: float, prior: float = MEMBERSHIP_PRIOR) -> float:
    """The largest success rate ``p >= prior`` with ``KL(Bern(p) || Bern(prior)) <= mi``.

    >>> posterior_success(0.0), posterior_success(10.0)
    (0.5, 1.0)
    """
    check_mi(mi, allow_zero=True)
    _check_probability(prior, "prior", open_interval=True)
    if mi == 0:
        return prior
    if mi >= -math.log(prior):  # KL(Bern(1) || Bern(prior)): certainty is affordable
        return 1.0
    return float(brentq(lambda p: kl_bernoulli(p, prior) - mi, prior, 1.0, xtol=1e-15))


def mi_for_success(success: float, prior: float = MEMBERSHIP_PRIOR) -> float:
    """The MI budget that caps posterior success at ``success`` (the inverse of the above).

    >>> round(mi_for_success(posterior_success(0.0625)), 6)
    0.0625
    """
    _check_probability(prior, "prior", open_interval=True)
    _check_probability(success, "success", open_interval=False)
    if success < prior:
        raise BudgetError(f"success rate {success} lies below the prior {prior}; use >= prior")
    return kl_bernoulli(success, prior)


def dp_epsilon(success: float, delta: float = DEFAULT_DELTA) -> float:
    """The epsilon at which (epsilon, delta)-DP caps membership success (prior 1/2) at ``success``.

    >>> round(dp_epsilon(0.5108, 1e-5), 4)
    0.0432
    """
    _check_probability(success, "success", open_interval=False)
    if not 0 <= delta < 0.5:
        raise BudgetError(f"delta must lie in [0, 0.5), got {delta!r}; try 1e-5")
    if success >= 1:
        return math.inf
    if success - delta <= 1 - success:  # no better than a coin flip: epsilon 0 suffices
        return 0.0
    return math.log((success - delta) / (1 - success))


def dp_success(epsilon: float, delta: float = DEFAULT_DELTA) -> float:
    """The membership success (prior 1/2) that (epsilon, delta)-DP allows: the inverse of above.

    >>> round(dp_success(dp_epsilon(0.6, 1e-5), 1e-5), 6)
    0.6
    """
    if not epsilon >= 0 or not 0 <= delta < 0.5:
        raise BudgetError(f"need epsilon >= 0 and delta in [0, 0.5), got {epsilon!r}, {delta!r}")
    if math.isinf(epsilon):
        return 1.0
    return min(1.0, (math.exp(epsilon) + delta) / (1 + math.exp(epsilon)))


def compose(*mis: float) -> float:
    """Total MI of several releases about the same secret: MI adds up (PAC composition)."""
    for mi in mis:
        check_mi(mi, allow_zero=True)
    return math.fsum(mis)


def compose_repeated(mi: float, releases: int) -> float:
    """Total MI of ``releases`` releases of ``mi`` each."""
    check_mi(mi, allow_zero=True)
    if releases < 0:
        raise BudgetError(f"the number of releases must be >= 0, got {releases}")
    return mi * releases


@dataclass(frozen=True)
class PACBound:
    """The guarantee of a release (or of several composed): MI and what it allows.

    >>> PACBound.of(2**-4).success_rate > 0.67
    True
    """

    mi: float
    prior: float
    success_rate: float
    dp_epsilon: float
    delta: float
    releases: int = 1

    @classmethod
    def of(
        cls,
        mi: float,
        *,
        prior: float = MEMBERSHIP_PRIOR,
        delta: float = DEFAULT_DELTA,
        releases: int = 1,
    ) -> PACBound:
        total = compose_repeated(mi, releases)
        success = posterior_success(total, prior)
        return cls(total, prior, success, dp_epsilon(success, delta), delta, releases)

    def reading(self) -> str:
        """One line for people."""
        return (
            f"mutual information <= {self.mi:.4g} nats over {self.releases} release(s): no "
            f"adversary whose blind guess succeeds {self.prior:.0%} of the time succeeds more "
            f"than {self.success_rate:.2%} (DP-equivalent epsilon {self.dp_epsilon:.4g} at "
            f"delta {self.delta:g})"
        )

    def to_dict(self) -> dict[str, float | int]:
        return {
            "mi": self.mi,
            "prior": self.prior,
            "posterior_success": self.success_rate,
            "dp_equivalent_epsilon": self.dp_epsilon,
            "dp_equivalent_delta": self.delta,
            "releases": self.releases,
        }


def table(entries: Iterable[tuple[int, float]], prior: float = MEMBERSHIP_PRIOR) -> list[PACBound]:
    """Bounds for ``(releases, mi_per_release)`` pairs, e.g. the published table."""
    return [PACBound.of(mi, prior=prior, releases=k) for k, mi in entries]


def check_mi(mi: float, *, allow_zero: bool = False) -> None:
    """A mutual-information budget must be a finite, positive number of nats."""
    ok = isinstance(mi, int | float) and math.isfinite(mi) and (mi >= 0 if allow_zero else mi > 0)
    if not ok:
        raise BudgetError(
            f"mutual information budget must be a positive number of nats, got {mi!r}; "
            "try 0.0625 (caps membership success at 67.5%)"
        )


def _check_probability(value: float, name: str, *, open_interval: bool) -> None:
    inside = 0 < value < 1 if open_interval else 0 <= value <= 1
    if not isinstance(value, int | float) or not inside:
        interval = "(0, 1)" if open_interval else "[0, 1]"
        raise BudgetError(f"{name} must lie in {interval}, got {value!r}")
