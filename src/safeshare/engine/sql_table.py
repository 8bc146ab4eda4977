"""What DuckDB's and Spark's tables share: codes stored by the engine, columns as SQL expressions.

A :class:`SqlTable` is a view - a relation, a row condition and one SQL expression per
column - so :meth:`~SqlTable.recode` (compression) and :meth:`~SqlTable.where` (a part
or a sample) copy no data.  Each engine says how a list lookup is spelled; rows come back
through the engine's ``fetch_columns``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Generic, Protocol, Self, TypeVar

import numpy as np

from safeshare.data.domain import Domain
from safeshare.data.table import Table


class FetchesColumns(Protocol):
    """An engine that returns one statement's small result as numpy columns."""

    def fetch_columns(self, statement: str, step: str) -> Mapping[str, np.ndarray]: ...


E = TypeVar("E", bound=FetchesColumns)


class SqlTable(Generic[E]):
    """Integer codes an engine stores; satisfies :class:`~safeshare.data.table.CodedTable`."""

    def __init__(
        self,
        engine: E,
        relation: str,
        domain: Domain,
        expressions: Mapping[str, str],
        where: str,
        n_rows: int,
    ) -> None:
        self.engine = engine
        self._relation = relation
        self._domain = domain
        self._expressions = dict(expressions)
        self._where = where
        self._n_rows = n_rows

    @property
    def domain(self) -> Domain:
        return self._domain

    @property
    def columns(self) -> tuple[str, ...]:
        return self._domain.names

    def __len__(self) -> int:
        return self._n_rows

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._n_rows} rows, columns={list(self.columns)})"

    def expression(self, name: str) -> str:
        """The SQL expression of one column's codes."""
        self._domain[name]
        return self._expressions[name]

    def lookup(self, mapping: str, code: str) -> str:
        """The engine's spelling of ``[mapping][code]`` (0-based ``code``)."""
        raise NotImplementedError

    def recode(self, forward: Mapping[str, np.ndarray], domain: Domain) -> Self:
        """Each column's codes mapped through ``forward[name]``, as a list lookup in SQL."""
        expressions = {}
        for name in domain.names:
            mapping = ", ".join(str(int(v)) for v in np.asarray(forward[name]))
            expressions[name] = self.lookup(mapping, self._expressions[name])
        return type(self)(
            self.engine, self._relation, domain, expressions, self._where, self._n_rows
        )

    def where(self, condition: str, n_rows: int) -> Self:
        """The rows meeting a further SQL condition (``n_rows`` of them, as counted by the caller)."""
        return type(self)(
            self.engine,
            self._relation,
            self._domain,
            self._expressions,
            f"({self._where}) AND ({condition})",
            n_rows,
        )

    def select(self, expressions: Sequence[str], suffix: str = "") -> str:
        """A SELECT of ``expressions`` over this table's rows."""
        return f"SELECT {', '.join(expressions)} FROM {self._relation} WHERE {self._where} {suffix}"

    def fetch(self, order_by: str = "__row") -> Table:
        """All rows into memory as a Table, in ``order_by`` order (file order by default)."""
        names = list(self.columns)
        if not names:
            return Table({}, self._domain)
        expressions = [f"{self.expression(n)} AS c{i}" for i, n in enumerate(names)]
        statement = self.select(expressions, f"ORDER BY {order_by}")
        result = self.engine.fetch_columns(statement, "fetching coded rows")
        return Table({n: np.asarray(result[f"c{i}"]) for i, n in enumerate(names)}, self._domain)
