"""The accountant: composes privacy events and reports what they cost together.

Composition runs through dp-accounting's RDP accountant (zCDP is RDP linear in the
order), plus the additive deltas of thresholded mechanisms, which approximate zCDP
adds up separately.

>>> from safeshare.dp.events import GaussianEvent
>>> accountant = Accountant().compose(GaussianEvent(10.0, label="a"), GaussianEvent(10.0, label="b"))
>>> round(accountant.rho, 6), round(accountant.epsilon(1e-9), 3)
(0.01, 0.81)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from safeshare.dp.budget import RDP_ORDERS, PrivacyBudget
from safeshare.dp.events import PrivacyEvent
from safeshare.errors import BudgetError, BudgetExceededError

# slack for floating-point rounding when checking a plan against its budget
_TOLERANCE = 1e-9


class Accountant:
    """An immutable record of events; ``compose`` returns a new accountant."""

    def __init__(self, events: Iterable[PrivacyEvent] = ()) -> None:
        self._events: tuple[PrivacyEvent, ...] = tuple(events)

    def compose(self, *events: PrivacyEvent) -> Accountant:
        return Accountant(self._events + events)

    @property
    def events(self) -> tuple[PrivacyEvent, ...]:
        return self._events

    @property
    def rho(self) -> float:
        return math.fsum(e.rho for e in self._events)

    @property
    def delta_extra(self) -> float:
        """Additive delta from thresholded mechanisms (outside the zCDP part)."""
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
        from dp_accounting.rdp import RdpAccountant

        accountant = RdpAccountant(orders=list(RDP_ORDERS))
        for event in self._events:
            accountant.compose(event.to_dp_accounting())
        return float(accountant.get_epsilon(remaining))

    def check_within(self, budget: PrivacyBudget) -> float:
        """The spent epsilon at ``budget.delta``; raises if it exceeds ``budget.epsilon``."""
        spent = self.epsilon(budget.delta)
        if spent > budget.epsilon * (1 + _TOLERANCE):
            raise BudgetExceededError(
                f"the planned steps cost epsilon={spent:.6g} at delta={budget.delta:g}, more than "
                f"the budget epsilon={budget.epsilon:g}"
            )
        return spent

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
