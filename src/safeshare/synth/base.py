"""The Synthesizer protocol: scikit-learn habits for DP generators.

``__init__`` stores parameters only; ``privacy_events(domain)`` states the cost
before any data is read; ``fit(table)`` spends it (once: a DP synthesizer refuses
a second fit, which would spend the budget again); ``sample(n)`` draws a Table
and is free (post-processing).  Learned state ends in ``_``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Protocol, Self, runtime_checkable

from safeshare.data.domain import Domain
from safeshare.data.table import Table
from safeshare.dp.budget import PrivacyBudget
from safeshare.dp.events import PrivacyEvent
from safeshare.errors import BudgetError, NotFittedError, RefitError


def budget_rho(epsilon: float | None, delta: float, rho: float | None) -> float:
    """A synthesizer's zCDP budget: ``rho`` if given (a share of a larger budget), else (epsilon, delta).

    >>> round(budget_rho(1.0, 1e-9, None), 5), budget_rho(None, 1e-9, 0.25)
    (0.01497, 0.25)
    """
    if rho is not None:
        if not (math.isfinite(rho) and rho > 0):
            raise BudgetError(f"rho must be a positive number, got {rho!r}")
        return float(rho)
    if epsilon is None:
        raise BudgetError("give the synthesizer a budget: epsilon (with delta) or rho")
    return PrivacyBudget(epsilon, delta).rho()


@runtime_checkable
class Synthesizer(Protocol):
    def privacy_events(self, columns: Domain | Sequence[str]) -> list[PrivacyEvent]:
        """The cost of fitting, stated before any data is read."""
        ...

    def privacy_spent(self) -> list[PrivacyEvent]:
        """What fitting spent, step by step (for the card)."""
        ...

    def fit(self, table: Table) -> Self: ...

    def sample(self, n: int | None = None) -> Table: ...


class FitOnce:
    """Mixin for DP estimators: one fit per object, and no sampling before it."""

    fitted_: bool = False

    def _begin_fit(self) -> None:
        if self.fitted_:
            raise RefitError(
                f"{type(self).__name__} is already fitted; a second fit would spend the privacy "
                "budget again. Create a new synthesizer (and check the ledger) instead"
            )

    def _end_fit(self) -> None:
        self.fitted_ = True

    def _check_fitted(self) -> None:
        if not self.fitted_:
            raise NotFittedError(f"{type(self).__name__} is not fitted yet; call fit(table) first")
