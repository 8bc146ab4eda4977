"""The DuckDB engine: counts as SQL over codes stored on disk, for tables larger than memory.

A :class:`DuckDBEngine` owns one DuckDB database in a private temporary directory
(deleted on :meth:`~DuckDBEngine.close`) with a memory cap; DuckDB spills to disk
beyond it.  Files are opened with :meth:`DuckDBEngine.open` (see
:mod:`safeshare.engine.duckdb_source`), encoded once into a table of small integer
codes, and every count - a marginal, the sizes of equivalence classes - is one
``GROUP BY`` over that table.  Only counts come back to Python.

>>> import numpy as np
>>> from safeshare.data import Domain, Table
>>> table = Table({"a": np.array([0, 1, 1]), "b": np.array([1, 1, 0])}, Domain.from_sizes({"a": 2, "b": 2}))
>>> with DuckDBEngine() as engine:
...     stored = engine.store(table)
...     engine.counts(stored, ["a", "b"]).tolist(), sorted(engine.group_sizes(stored, ["a"]).tolist())
([[0, 1], [1, 1]], [1, 2])
"""

from __future__ import annotations

import itertools
import os
import shutil
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from safeshare.data.table import Table
from safeshare.engine.sql_engine import SqlEngine
from safeshare.engine.sql_table import SqlTable
from safeshare.errors import EngineJobError, InputError, MissingDependencyError

if TYPE_CHECKING:
    from safeshare.engine.duckdb_source import DuckDBSource

DEFAULT_MEMORY_LIMIT = "2GB"


def require_duckdb() -> Any:
    """The duckdb module, or a clear error naming the extra to install."""
    try:
        import duckdb
    except ImportError:
        raise MissingDependencyError(
            "the duckdb engine needs the duckdb package; install it with: "
            "pip install 'safeshare[scale]'"
        ) from None
    return duckdb


class DuckDBTable(SqlTable["DuckDBEngine"]):
    """Integer codes stored in a DuckDB table (see :class:`~safeshare.engine.sql_table.SqlTable`)."""

    def lookup(self, mapping: str, code: str) -> str:
        return f"([{mapping}])[({code}) + 1]"


class DuckDBEngine(SqlEngine[DuckDBTable]):
    """Counts with DuckDB over codes stored on disk; ``memory_limit`` caps DuckDB's memory."""

    name = "duckdb"
    table_type = DuckDBTable

    def __init__(
        self,
        *,
        memory_limit: str = DEFAULT_MEMORY_LIMIT,
        threads: int | None = None,
        workdir: str | Path | None = None,
    ) -> None:
        duckdb = require_duckdb()
        self.memory_limit = memory_limit
        self._dir = Path(tempfile.mkdtemp(prefix="safeshare-duckdb-", dir=workdir))
        config: dict[str, Any] = {
            "memory_limit": memory_limit,
            "temp_directory": str(self._dir / "spill"),
            "preserve_insertion_order": True,
        }
        if threads is not None:
            config["threads"] = threads
        try:
            self._con: Any = duckdb.connect(str(self._dir / "codes.duckdb"), config=config)
        except duckdb.Error as err:
            shutil.rmtree(self._dir, ignore_errors=True)
            raise InputError(f"cannot start DuckDB ({type(err).__name__}): {err}") from None
        self._names = itertools.count()

    # -- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Close the database and delete its files."""
        if self._con is not None:
            self._con.close()
            self._con = None
        shutil.rmtree(self._dir, ignore_errors=True)

    def query(self, sql: str) -> Any:
        """Run one statement; DuckDB's errors become safeshare errors naming the step."""
        if self._con is None:
            raise InputError("this DuckDB engine is closed; open a new one")
        duckdb = require_duckdb()
        try:  # a cursor per statement: an unfinished result never blocks the next one
            return self._con.cursor().execute(sql)
        except duckdb.OutOfMemoryException:
            raise EngineJobError(
                f"DuckDB ran out of memory under its limit of {self.memory_limit}; "
                "raise it with --memory-limit or free disk space for spilling"
            ) from None

    def arrow(self, sql: str) -> Any:
        """The (small) result of one query as a pyarrow Table."""
        return next(self._arrow(sql, None))

    def stream(self, sql: str, rows: int) -> Iterator[Any]:
        """The result of one query as Arrow record batches of at most ``rows`` rows, streamed."""
        return self._arrow(sql, rows)

    def _arrow(self, sql: str, rows: int | None) -> Iterator[Any]:
        if self._con is None:
            raise InputError("this DuckDB engine is closed; open a new one")
        duckdb = require_duckdb()
        cursor = self._con.cursor()  # (kept alive while the batches are read)
        try:
            relation = cursor.sql(sql)
            if rows is None:
                yield relation.to_arrow_table()
            else:
                yield from relation.to_arrow_reader(rows)
        except duckdb.OutOfMemoryException:
            raise EngineJobError(
                f"DuckDB ran out of memory under its limit of {self.memory_limit}; "
                "raise it with --memory-limit or free disk space for spilling"
            ) from None
        finally:
            cursor.close()

    def fresh_name(self, stem: str) -> str:
        """A new table name in this engine's database."""
        return f"{stem}_{next(self._names)}"

    # -- data in --------------------------------------------------------------------------

    def open(
        self,
        path: str | Path,
        *,
        names: Sequence[str] | None = None,
        missing_values: Sequence[str] | None = None,
        header: bool | None = None,
    ) -> DuckDBSource:
        """A CSV/TSV file, a Parquet file or a folder of Parquet files, read where it lies
        (``header``: whether a CSV's first row is a header; None detects it)."""
        from safeshare.engine.duckdb_source import DuckDBSource

        return DuckDBSource.open(
            self, Path(path), names=names, missing_values=missing_values, header=header
        )

    def store(self, table: Table) -> DuckDBTable:
        """An in-memory Table copied into DuckDB (tests, and small tables beside large ones)."""
        import pandas as pd

        relation = self.fresh_name("stored")
        frame = pd.DataFrame({f"c{i}": table.column(n) for i, n in enumerate(table.columns)})
        frame.insert(0, "__row", np.arange(len(table), dtype=np.int64))
        if self._con is None:
            raise InputError("this DuckDB engine is closed; open a new one")
        cursor = self._con.cursor()
        cursor.register("_incoming", frame)
        try:
            cursor.execute(f"CREATE TABLE {relation} AS SELECT * FROM _incoming")
        finally:
            cursor.unregister("_incoming")
        expressions = {n: f"c{i}" for i, n in enumerate(table.columns)}
        return DuckDBTable(self, relation, table.domain, expressions, "TRUE", len(table))

    # -- counting -------------------------------------------------------------------------

    def fetch_columns(self, statement: str, step: str) -> Mapping[str, np.ndarray]:
        """The result of one statement as numpy columns (``step`` is for Spark's errors)."""
        return dict(self.query(statement).fetchnumpy())

    def _count_sets(
        self,
        table: DuckDBTable,
        column_sets: Sequence[Sequence[str]],
        shapes: Sequence[tuple[int, ...]],
    ) -> list[np.ndarray]:
        """Every table from one scan with ``GROUPING SETS``."""
        names = sorted({n for s in column_sets for n in s}, key=table.domain.position)
        alias = {n: f"k{i}" for i, n in enumerate(names)}
        select = [f"{table.expression(n)} AS {alias[n]}" for n in names]
        sets = ", ".join("(" + ", ".join(alias[n] for n in s) + ")" for s in column_sets)
        ids = [f"GROUPING({', '.join(alias.values())}) AS gid"] if names else ["0 AS gid"]
        inner = table.select(select) if names else table.select(["1 AS one"])
        group = f"GROUP BY GROUPING SETS ({sets})" if names else ""
        outer = ", ".join([*alias.values(), *ids, "count(*) AS n"])
        result = self.fetch_columns(f"SELECT {outer} FROM ({inner}) {group}", "counting")
        return [
            _dense(result, [alias[n] for n in s], names, alias, shape)
            for s, shape in zip(column_sets, shapes, strict=True)
        ]


def _dense(
    result: Mapping[str, Any],
    keys: list[str],
    names: list[str],
    alias: Mapping[str, str],
    shape: tuple[int, ...],
) -> np.ndarray:
    """One grouping set's rows of a GROUPING SETS result, as a dense array."""
    # GROUPING(k0..km) sets bit (m - i) for each column k_i that is NOT grouped
    width = len(names)
    wanted = sum(1 << (width - 1 - i) for i, n in enumerate(names) if alias[n] not in keys)
    gid = np.asarray(result["gid"], dtype=np.int64)
    rows = gid == wanted
    counts = np.asarray(result["n"], dtype=np.int64)[rows]
    out = np.zeros(shape, dtype=np.int64)
    if not keys:
        return np.asarray(counts.sum(), dtype=np.int64).reshape(shape)
    index = tuple(np.asarray(result[k])[rows].astype(np.int64) for k in keys)
    np.add.at(out, index, counts)
    return out


def default_memory_limit() -> str:
    """The memory cap from ``$SAFESHARE_DUCKDB_MEMORY`` (default 2GB)."""
    return os.environ.get("SAFESHARE_DUCKDB_MEMORY", DEFAULT_MEMORY_LIMIT)
