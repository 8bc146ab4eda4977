"""The accountant: composes privacy events and reports what they cost together.

Every job plans its privacy events before it reads a value and asks one accountant what
they cost together.  Three named accountings, chosen per job:

- ``"rdp"`` (the default): Renyi DP over dp-accounting's RDP accountant at
  :data:`~safeshare.dp.budget.RDP_ORDERS`; composes every event, adaptive zCDP rounds
  (AIM) included.
- ``"pld"``: dp-accounting's privacy loss distributions, tight for Gaussian and
  Poisson-subsampled Gaussian steps (DP-SGD); refuses an event it cannot represent
  (adaptive zCDP rounds, the exponential mechanism).
- ``"gdp"``: Gaussian DP, exact for Gaussian steps of any sensitivity: ``mu^2 = sum
  (l2 / sigma_i)^2`` on the exact (epsilon, delta) curve (:mod:`safeshare.dp.gdp`); refuses
  any other event.

Each adds the additive deltas of thresholded mechanisms (``delta_extra``) on top.  Every
event is accounted under dp-accounting's ``ADD_OR_REMOVE_ONE`` neighbouring relation: the
guarantee is for adding or removing one privacy unit (a record, or a user's records).

>>> from safeshare.dp.events import GaussianEvent
>>> steps = (GaussianEvent(10.0, label="a"), GaussianEvent(10.0, label="b"))
>>> rdp = Accountant().compose(*steps)
>>> round(rdp.rho, 6), round(rdp.epsilon(1e-9), 3)
(0.01, 0.81)
>>> [round(Accountant(steps, accounting=a).epsilon(1e-9), 3) for a in ("pld", "gdp")]
[0.768, 0.768]
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any, Literal

from safeshare.dp.budget import RDP_ORDERS, PrivacyBudget
from safeshare.dp.events import PrivacyEvent
from safeshare.dp.gdp import gdp_epsilon
from safeshare.errors import BudgetError, BudgetExceededError

Accounting = Literal["rdp", "pld", "gdp"]
ACCOUNTINGS: tuple[str, ...] = ("rdp", "pld", "gdp")
NEIGHBOURING = "ADD_OR_REMOVE_ONE"  # dp-accounting's name of the relation every event uses
_DESCRIPTION = {
    "rdp": "Renyi DP (dp-accounting's RdpAccountant)",
    "pld": "privacy loss distributions (dp-accounting's PLDAccountant)",
    "gdp": "Gaussian DP: mu^2 = sum (l2/sigma_i)^2, converted exactly (Dong, Roth & Su 2022)",
}

# slack for floating-point rounding when checking a plan against its budget
_TOLERANCE = 1e-9


class Accountant:
    """An immutable record of events under one accounting; ``compose`` returns a new one."""

    def __init__(self, events: Iterable[PrivacyEvent] = (), accounting: Accounting = "rdp") -> None:
        if accounting not in ACCOUNTINGS:
            raise BudgetError(
                f"accounting {accounting!r} is unknown; use one of {list(ACCOUNTINGS)}"
            )
        self._events: tuple[PrivacyEvent, ...] = tuple(events)
        self.accounting: Accounting = accounting

    def compose(self, *events: PrivacyEvent) -> Accountant:
        return Accountant(self._events + events, self.accounting)

    @property
    def events(self) -> tuple[PrivacyEvent, ...]:
        return self._events

    @property
    def rho(self) -> float:
        return math.fsum(e.rho for e in self._events)

    @property
    def delta_extra(self) -> float:
        """Additive delta from thresholded mechanisms (outside the composed part)."""
        return math.fsum(e.delta for e in self._events)

    def epsilon(self, delta: float) -> float:
        """The epsilon of the composition at total ``delta`` (which must exceed ``delta_extra``)."""
        if not self._events:
            return 0.0
        remaining = delta - self.delta_extra
        if remaining <= 0:
            raise BudgetError(
                f"delta={delta} does not cover the {self.delta_extra:.3g} that thresholding spends; "
                "raise delta"
            )
        if self.accounting == "gdp":
            return gdp_epsilon(self.gdp_mu(), remaining)
        dp_events = [event.to_dp_accounting() for event in self._events]
        accountant = _dp_accounting(self.accounting, sampled=any(map(_sampled, dp_events)))
        for event, dp_event in zip(self._events, dp_events, strict=True):
            if not accountant.supports(dp_event):
                raise BudgetError(
                    f"the {self.accounting} accounting cannot compose {event.label!r} "
                    f"({event.mechanism}); use accounting 'rdp'"
                )
            accountant.compose(dp_event)
        return float(accountant.get_epsilon(remaining))

    def gdp_mu(self) -> float:
        """The composition's Gaussian DP parameter; only Gaussian events have one."""
        for event in self._events:
            if not _gaussian(event.to_dp_accounting()):
                raise BudgetError(
                    f"the gdp accounting composes Gaussian steps only, not {event.label!r} "
                    f"({event.mechanism}); use accounting 'rdp' or 'pld'"
                )
        return math.sqrt(math.fsum(2 * e.rho for e in self._events))

    def check_within(self, budget: PrivacyBudget) -> float:
        """The spent epsilon at ``budget.delta``; raises if it exceeds ``budget.epsilon``."""
        spent = self.epsilon(budget.delta)
        if spent > budget.epsilon * (1 + _TOLERANCE):
            raise BudgetExceededError(
                f"the planned steps cost epsilon={spent:.6g} at delta={budget.delta:g}, more than "
                f"the budget epsilon={budget.epsilon:g}"
            )
        return spent

    def describe(self) -> dict[str, Any]:
        """How the card says the steps were composed."""
        return {
            "accounting": self.accounting,
            "composition": _DESCRIPTION[self.accounting],
            "neighbouring": NEIGHBOURING,
        }

    def itemize(self, epsilon: float) -> list[dict[str, Any]]:
        """One entry per event, with its share of ``epsilon`` in proportion to its rho.

        In zCDP costs add up as rho, so each step's share of the total epsilon is
        its share of rho; the shares sum to ``epsilon``.
        """
        total = self.rho
        return [
            {
                "step": e.label,
                "mechanism": e.mechanism,
                "rho": e.rho,
                "epsilon_share": epsilon * e.rho / total if total else 0.0,
                **({"delta": e.delta} if e.delta else {}),
                **e.describe(),
            }
            for e in self._events
        ]


def _dp_accounting(accounting: str, *, sampled: bool) -> Any:
    """dp-accounting's accountant of that name, under the add/remove-one relation.

    RDP uses the project's dense orders (:data:`RDP_ORDERS`, up to 1e6) for unsampled
    steps, and dp-accounting's default orders once a step is Poisson-sampled (its RDP at
    orders in the thousands does not converge, and the default ones are where its optimum
    lies).
    """
    from dp_accounting import NeighboringRelation

    relation = NeighboringRelation[NEIGHBOURING]
    if accounting == "pld":
        from dp_accounting.pld import PLDAccountant

        return PLDAccountant(relation)
    from dp_accounting.rdp import RdpAccountant

    orders = None if sampled else list(RDP_ORDERS)
    return RdpAccountant(orders=orders, neighboring_relation=relation)


def _parts(event: Any) -> list[Any]:
    """The events a dp-accounting composition is made of (itself when it is none)."""
    from dp_accounting import dp_event

    if isinstance(event, dp_event.ComposedDpEvent):
        return [part for e in event.events for part in _parts(e)]
    if isinstance(event, dp_event.SelfComposedDpEvent):
        return _parts(event.event)
    return [event]


def _gaussian(event: Any) -> bool:
    """Whether a dp-accounting event is Gaussian steps only (no sampling, no other noise)."""
    from dp_accounting import dp_event

    return all(isinstance(part, dp_event.GaussianDpEvent) for part in _parts(event))


def _sampled(event: Any) -> bool:
    """Whether a dp-accounting event has a Poisson-sampled step."""
    from dp_accounting import dp_event

    return any(isinstance(part, dp_event.PoissonSampledDpEvent) for part in _parts(event))
