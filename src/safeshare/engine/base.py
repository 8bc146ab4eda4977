"""The counting-engine interface every data-touching step goes through.

Nearly every step that reads data - measuring marginals, checking k-anonymity,
estimating uniqueness - reduces to counting records per combination of column
values.  An engine answers those counts; numpy is the default, and engines for
larger-than-memory files or clusters plug in behind the same two methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import TracebackType
from typing import Protocol, Self, runtime_checkable

import numpy as np

from safeshare.data.table import CodedTable


@runtime_checkable
class CountingEngine(Protocol):
    """Counts over a table's codes (an in-memory Table, or one the engine stores)."""

    name: str

    def counts(self, table: CodedTable, columns: Sequence[str]) -> np.ndarray:
        """The contingency table over ``columns``: shape ``domain.shape(columns)``, int64."""
        ...

    def counts_many(
        self, table: CodedTable, column_sets: Sequence[Sequence[str]]
    ) -> list[np.ndarray]:
        """Several contingency tables at once (engines that scan files do it in one pass)."""
        ...

    def group_sizes(self, table: CodedTable, columns: Sequence[str]) -> np.ndarray:
        """The sizes of the non-empty groups of records sharing values on ``columns``."""
        ...


class ClosesOnExit:
    """``with thing:`` closes ``thing`` at the end; a subclass says what ``close`` releases.

    >>> class Held(ClosesOnExit):
    ...     def close(self) -> None:
    ...         print("closed")
    >>> with Held() as held:
    ...     pass
    closed
    """

    def close(self) -> None:
        """Release what this holds (files, cached tables, a session)."""
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()
