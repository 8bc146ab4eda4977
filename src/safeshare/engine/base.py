"""The counting-engine interface every data-touching step goes through.

Nearly every step that reads data - measuring marginals, checking k-anonymity,
estimating uniqueness - reduces to counting records per combination of column
values.  An engine answers those counts; numpy is the default, and engines for
larger-than-memory files or clusters plug in behind the same two methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np

from safeshare.data.table import Table


@runtime_checkable
class CountingEngine(Protocol):
    """Counts over a Table's codes."""

    name: str

    def counts(self, table: Table, columns: Sequence[str]) -> np.ndarray:
        """The contingency table over ``columns``: shape ``domain.shape(columns)``, int64."""
        ...

    def group_sizes(self, table: Table, columns: Sequence[str]) -> np.ndarray:
        """The sizes of the non-empty groups of records sharing values on ``columns``."""
        ...
