"""The default engine: counts with numpy's bincount over flattened codes.

>>> import numpy as np
>>> from safeshare.data import Column, Domain, Kind, Table
>>> domain = Domain((Column("a", Kind.CATEGORICAL, categories=("x", "y"), other=False, missing=False),
...                  Column("b", Kind.CATEGORICAL, categories=("u", "v"), other=False, missing=False)))
>>> table = Table({"a": np.array([0, 0, 1]), "b": np.array([1, 1, 0])}, domain)
>>> NumpyEngine().counts(table, ["a", "b"]).tolist()
[[0, 2], [1, 0]]
>>> sorted(NumpyEngine().group_sizes(table, ["a", "b"]).tolist())
[1, 2]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from safeshare.data.table import CodedTable, Table
from safeshare.errors import InputError

# above this many cells a dense bincount wastes memory: count the distinct keys instead
_DENSE_LIMIT = 1 << 26


class NumpyEngine:
    """Counts in memory with numpy."""

    name = "numpy"

    def counts(self, table: CodedTable, columns: Sequence[str]) -> np.ndarray:
        table = _in_memory(table)
        shape = table.domain.shape(columns)
        cells = int(np.prod(shape, dtype=np.float64)) if shape else 1
        if cells > _DENSE_LIMIT:
            raise MemoryError(
                f"a contingency table over {list(columns)} has {cells:,} cells; "
                "count group sizes instead or use fewer columns"
            )
        keys = self._keys(table, columns, shape)
        return np.bincount(keys, minlength=cells).reshape(shape).astype(np.int64)

    def counts_many(
        self, table: CodedTable, column_sets: Sequence[Sequence[str]]
    ) -> list[np.ndarray]:
        """Several contingency tables (one pass each: bincount is already one scan)."""
        return [self.counts(table, s) for s in column_sets]

    def group_sizes(self, table: CodedTable, columns: Sequence[str]) -> np.ndarray:
        table = _in_memory(table)
        shape = table.domain.shape(columns)
        cells = float(np.prod(shape, dtype=np.float64)) if shape else 1.0
        if cells >= 2**62:
            _, sizes = np.unique(table.matrix(columns), axis=0, return_counts=True)
            return sizes.astype(np.int64)
        keys = self._keys(table, columns, shape)
        if cells <= _DENSE_LIMIT:
            sizes = np.bincount(keys, minlength=int(cells))
            return sizes[sizes > 0].astype(np.int64)
        _, sizes = np.unique(keys, return_counts=True)
        return sizes.astype(np.int64)

    @staticmethod
    def _keys(table: Table, columns: Sequence[str], shape: tuple[int, ...]) -> np.ndarray:
        keys = np.zeros(len(table), dtype=np.int64)
        for name, size in zip(columns, shape, strict=True):
            keys *= size
            keys += table.column(name)
        return keys


def _in_memory(table: CodedTable) -> Table:
    if not isinstance(table, Table):
        raise InputError(
            f"the numpy engine counts in-memory tables; this one ({type(table).__name__}) is "
            "counted by its own engine"
        )
    return table
