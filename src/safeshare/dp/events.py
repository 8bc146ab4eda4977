"""Privacy events: what a mechanism will spend, declared before it touches data.

Each event is immutable and knows its zCDP cost (``rho``) and any additive delta it
adds on top (``delta``: a thresholded histogram may reveal a rare key with small
probability).  An :class:`~safeshare.dp.accountant.Accountant` composes them.

>>> GaussianEvent(sigma=10.0).rho
0.005
>>> round(ExponentialEvent(epsilon=0.2).rho, 12)
0.005
>>> round(ComposedEvent((GaussianEvent(10.0), ExponentialEvent(0.2)), "both").rho, 12)
0.01
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from safeshare.errors import BudgetError


@runtime_checkable
class PrivacyEvent(Protocol):
    """The common face of every event."""

    @property
    def label(self) -> str: ...

    @property
    def rho(self) -> float: ...

    @property
    def delta(self) -> float: ...

    @property
    def mechanism(self) -> str: ...

    def to_dp_accounting(self) -> Any:
        """The equivalent ``dp_accounting.DpEvent`` (its delta part is not included)."""
        ...

    def describe(self) -> dict[str, Any]:
        """JSON-ready parameters for the privacy card."""
        ...


@dataclass(frozen=True)
class GaussianEvent:
    """(Discrete) Gaussian noise of scale ``sigma`` on a query of L2 sensitivity ``l2_sensitivity``.

    The discrete Gaussian satisfies the same zCDP bound as the continuous one
    (Canonne, Kamath & Steinke 2020): rho = sensitivity^2 / (2 sigma^2).
    """

    sigma: float
    l2_sensitivity: float = 1.0
    label: str = "gaussian"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.sigma) and self.sigma > 0):
            raise BudgetError(f"{self.label}: noise scale sigma must be positive, got {self.sigma}")
        if not self.l2_sensitivity > 0:
            raise BudgetError(f"{self.label}: sensitivity must be positive")

    @property
    def rho(self) -> float:
        return self.l2_sensitivity**2 / (2 * self.sigma**2)

    @property
    def delta(self) -> float:
        return 0.0

    @property
    def mechanism(self) -> str:
        return "discrete gaussian"

    def to_dp_accounting(self) -> Any:
        from dp_accounting import dp_event

        return dp_event.GaussianDpEvent(self.sigma / self.l2_sensitivity)

    def describe(self) -> dict[str, Any]:
        return {"sigma": self.sigma, "l2_sensitivity": self.l2_sensitivity}


@dataclass(frozen=True)
class ThresholdedGaussianEvent(GaussianEvent):
    """A Gaussian histogram over the keys *present* in the data, released above a threshold.

    Keys not in the data cannot appear, so a record whose key is new is revealed
    with probability at most ``tail`` (the chance that noise lifts a count of 1 to
    the threshold): an extra additive delta on top of the Gaussian's rho.
    """

    threshold: int = 0
    tail: float = 0.0

    @property
    def delta(self) -> float:
        return self.tail

    @property
    def mechanism(self) -> str:
        return "thresholded discrete gaussian"

    def describe(self) -> dict[str, Any]:
        return {**super().describe(), "threshold": self.threshold, "delta": self.tail}


@dataclass(frozen=True)
class ExponentialEvent:
    """The exponential mechanism at ``epsilon`` (scores of known sensitivity).

    As a bounded-range mechanism it is epsilon^2/8-zCDP (Cesar & Rogers 2021).
    """

    epsilon: float
    label: str = "exponential"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.epsilon) and self.epsilon > 0):
            raise BudgetError(f"{self.label}: epsilon must be positive, got {self.epsilon}")

    @property
    def rho(self) -> float:
        return self.epsilon**2 / 8

    @property
    def delta(self) -> float:
        return 0.0

    @property
    def mechanism(self) -> str:
        return "exponential mechanism"

    def to_dp_accounting(self) -> Any:
        from dp_accounting import dp_event

        return dp_event.ZCDpEvent(self.rho)

    def describe(self) -> dict[str, Any]:
        return {"epsilon": self.epsilon}


@dataclass(frozen=True)
class ZCDPEvent:
    """A zCDP budget ``rho`` spent by an adaptive mechanism whose steps are chosen as it runs.

    Adaptive algorithms such as AIM decide each round's noise from earlier noisy
    results but never exceed a total fixed in advance (a privacy filter), so the
    total is the cost to declare before the data is read.
    """

    rho_budget: float
    label: str = "zcdp"
    delta_budget: float = 0.0  # the additive delta its thresholds may spend, in total

    def __post_init__(self) -> None:
        if not (math.isfinite(self.rho_budget) and self.rho_budget > 0):
            raise BudgetError(f"{self.label}: rho must be positive, got {self.rho_budget}")
        if not 0 <= self.delta_budget < 1:
            raise BudgetError(f"{self.label}: delta must be in [0, 1), got {self.delta_budget}")

    @property
    def rho(self) -> float:
        return self.rho_budget

    @property
    def delta(self) -> float:
        return self.delta_budget

    @property
    def mechanism(self) -> str:
        return "adaptive zCDP mechanism"

    def to_dp_accounting(self) -> Any:
        from dp_accounting import dp_event

        return dp_event.ZCDpEvent(self.rho_budget)

    def describe(self) -> dict[str, Any]:
        if self.delta_budget:
            return {"rho": self.rho_budget, "delta": self.delta_budget}
        return {"rho": self.rho_budget}


@dataclass(frozen=True)
class ComposedEvent:
    """Several events run one after another (costs add in zCDP)."""

    events: tuple[PrivacyEvent, ...]
    label: str = "composed"

    @property
    def rho(self) -> float:
        return math.fsum(e.rho for e in self.events)

    @property
    def delta(self) -> float:
        return math.fsum(e.delta for e in self.events)

    @property
    def mechanism(self) -> str:
        kinds = sorted({e.mechanism for e in self.events})
        return " + ".join(kinds) if kinds else "nothing"

    def to_dp_accounting(self) -> Any:
        from dp_accounting import dp_event

        return dp_event.ComposedDpEvent([e.to_dp_accounting() for e in self.events])

    def describe(self) -> dict[str, Any]:
        return {"events": len(self.events)}
