"""The Table: a dataset as integer codes per column, plus its Domain.

Every algorithm in safeshare works on codes; :meth:`Table.from_frame` encodes a
pandas DataFrame against a Domain and :meth:`Table.decode` turns codes back into
values.

>>> import numpy as np
>>> from safeshare.data.domain import Column, Domain, Kind
>>> domain = Domain((Column("sex", Kind.CATEGORICAL, categories=("F", "M")),))
>>> table = Table({"sex": np.array([0, 1, 1, 3])}, domain)
>>> len(table), table.column("sex").tolist()
(4, [0, 1, 1, 3])
>>> table.decode(np.random.default_rng(0))["sex"].tolist()
['F', 'M', 'M', None]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

from safeshare.data.domain import Domain
from safeshare.errors import EncodingError

if TYPE_CHECKING:
    import pandas as pd

    from safeshare.data.codec import EncodeReport


def _code_dtype(size: int) -> np.dtype:
    if size <= np.iinfo(np.uint8).max:
        return np.dtype(np.uint8)
    if size <= np.iinfo(np.uint16).max:
        return np.dtype(np.uint16)
    return np.dtype(np.int32)


@runtime_checkable
class CodedTable(Protocol):
    """What counting needs of a table: its Domain, its length and recoding.

    :class:`Table` holds the codes in memory; an engine's table (DuckDB's) holds
    them where the engine counts, larger than memory.  Synthesizers and checks that
    only count work on either.
    """

    @property
    def domain(self) -> Domain: ...

    @property
    def columns(self) -> tuple[str, ...]: ...

    def __len__(self) -> int: ...

    def recode(self, forward: Mapping[str, np.ndarray], domain: Domain) -> CodedTable:
        """The table with each column's codes mapped through ``forward[name]`` onto ``domain``."""
        ...


class Table:
    """An immutable table of integer codes, one array per column of ``domain``."""

    __slots__ = ("_codes", "_domain", "_n_rows")

    def __init__(self, codes: Mapping[str, np.ndarray], domain: Domain) -> None:
        missing = [n for n in domain.names if n not in codes]
        if missing:
            raise EncodingError(f"codes are missing for columns {missing}")
        lengths = {len(codes[n]) for n in domain.names}
        if len(lengths) > 1:
            raise EncodingError(f"columns have different lengths {sorted(lengths)}")
        stored: dict[str, np.ndarray] = {}
        for column in domain:
            values = np.asarray(codes[column.name])
            if values.size and (values.min() < 0 or values.max() >= column.size):
                raise EncodingError(
                    f"column {column.name!r}: codes must lie in [0, {column.size}); "
                    "encode values with Table.from_frame"
                )
            array = values.astype(_code_dtype(column.size), copy=True)
            array.flags.writeable = False
            stored[column.name] = array
        self._codes = stored
        self._domain = domain
        self._n_rows = lengths.pop() if lengths else 0

    @property
    def domain(self) -> Domain:
        return self._domain

    @property
    def columns(self) -> tuple[str, ...]:
        return self._domain.names

    def __len__(self) -> int:
        return self._n_rows

    def __repr__(self) -> str:
        return f"Table({self._n_rows} rows, columns={list(self.columns)})"

    def column(self, name: str) -> np.ndarray:
        """The (read-only) codes of one column."""
        self._domain[name]
        return self._codes[name]

    def matrix(self, names: Sequence[str] | None = None) -> np.ndarray:
        """Codes as an ``(n_rows, len(names))`` int64 array."""
        names = self.columns if names is None else names
        if not names:
            return np.zeros((self._n_rows, 0), dtype=np.int64)
        return np.stack([self.column(n).astype(np.int64) for n in names], axis=1)

    def project(self, names: Sequence[str]) -> Table:
        return Table({n: self._codes[n] for n in names}, self._domain.project(names))

    def take(self, rows: np.ndarray) -> Table:
        """The rows at the given positions (or boolean mask), in that order."""
        return Table({n: c[rows] for n, c in self._codes.items()}, self._domain)

    def recode(self, forward: Mapping[str, np.ndarray], domain: Domain) -> Table:
        """Each column's codes mapped through ``forward[name]`` (new code per old code).

        >>> from safeshare.data.domain import Domain
        >>> t = Table({"a": np.array([0, 1, 2])}, Domain.from_sizes({"a": 3}))
        >>> t.recode({"a": np.array([0, 0, 1])}, Domain.from_sizes({"a": 2})).column("a").tolist()
        [0, 0, 1]
        """
        return Table({n: np.asarray(forward[n])[self._codes[n]] for n in domain.names}, domain)

    def with_domain(self, domain: Domain) -> Table:
        """The same codes under a domain of the same names and sizes (e.g. new roles)."""
        if domain.names != self.columns or domain.shape() != self._domain.shape():
            raise EncodingError("with_domain needs the same columns and sizes")
        return Table(self._codes, domain)

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, domain: Domain) -> tuple[Table, EncodeReport]:
        """Encode ``frame`` against ``domain``; see :func:`safeshare.data.codec.encode_frame`."""
        from safeshare.data.codec import encode_frame

        return encode_frame(frame, domain)

    def decode(
        self, rng: np.random.Generator, orders: Sequence[Sequence[str]] = ()
    ) -> pd.DataFrame:
        """Values back from codes; numeric bins decode to a uniform value inside the bin
        (``orders``: see :func:`safeshare.data.codec.decode_table`)."""
        from safeshare.data.codec import decode_table

        return decode_table(self, rng, orders)
