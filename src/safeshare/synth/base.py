"""The Synthesizer protocol: scikit-learn habits for DP generators.

``__init__`` stores parameters only; ``privacy_events(domain)`` states the cost
before any data is read; ``fit(table)`` spends it (once: a DP synthesizer refuses
a second fit, which would spend the budget again); ``sample(n)`` draws a Table
and is free (post-processing).  Learned state ends in ``_``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, Self, runtime_checkable

from safeshare.data.domain import Domain
from safeshare.data.table import Table
from safeshare.dp.events import PrivacyEvent
from safeshare.errors import NotFittedError, RefitError


@runtime_checkable
class Synthesizer(Protocol):
    def privacy_events(self, columns: Domain | Sequence[str]) -> list[PrivacyEvent]: ...

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
