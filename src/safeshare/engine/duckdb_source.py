"""A file read by DuckDB where it lies: raw columns, row positions, encoding into stored codes.

CSV files are read as text with the delimiter and header :func:`~safeshare.data.readers.sniff_csv`
decides (as :func:`~safeshare.data.readers.read_frame` would); Parquet files keep
their types, and a folder of Parquet files is one table (files in name order; all
must share one schema).  Every row gets its position in the file, ``__row``, which
keyed :class:`~safeshare.data.row_order.RowOrder` ranks turn into train/holdout
parts and samples that numpy would pick identically.

>>> import tempfile, pathlib
>>> from safeshare.data import Column, Domain, Kind
>>> from safeshare.engine.duckdb_engine import DuckDBEngine
>>> path = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
>>> _ = path.write_text("sex;age\\nF;30\\nM;?\\nF;70\\n")
>>> domain = Domain((Column("sex", Kind.CATEGORICAL, categories=("F", "M")),
...                  Column("age", Kind.NUMERIC, edges=(0, 50, 100))))
>>> with DuckDBEngine() as engine:
...     source = engine.open(path)
...     encoded = source.encode(domain, holdout="FALSE")
...     len(source), engine.counts(encoded.train, ["sex", "age"]).tolist()
(3, [[1, 1, 0], [0, 0, 1], [0, 0, 0], [0, 0, 0]])
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from safeshare.data.codec import EncodeReport
from safeshare.data.domain import Domain
from safeshare.data.readers import MISSING_TOKENS, check_column_names, sniff_csv
from safeshare.data.row_order import MAX_ROWS, RowOrder
from safeshare.engine import distinct
from safeshare.engine.distinct import (
    as_read,
    count_sql,
    counted_frame,
    integers_sql,
    read_columns,
    rows_sql,
    with_missing,
)
from safeshare.engine.duckdb_engine import DuckDBEngine, DuckDBTable, require_duckdb
from safeshare.engine.sql_codec import (
    RawColumn,
    clipped_sql,
    code_sql,
    prepare,
    profile_report,
    profile_sql,
    quote_text,
    text_sql,
)
from safeshare.engine.sql_source import Encoded, SqlSource
from safeshare.errors import InputError, InputFileNotFoundError

PARQUET_SUFFIXES = (".parquet", ".pq")


class DuckDBSource(SqlSource[DuckDBEngine]):
    """A raw file as a DuckDB view with row positions; see the module docstring."""

    path: Path

    @classmethod
    def open(
        cls,
        engine: DuckDBEngine,
        path: Path,
        *,
        names: Sequence[str] | None = None,
        missing_values: Sequence[str] | None = None,
        header: bool | None = None,
    ) -> DuckDBSource:
        """Open ``path`` (CSV/TSV, Parquet, or a folder of Parquet files) without loading it."""
        tokens = tuple(MISSING_TOKENS if missing_values is None else missing_values)
        if not path.exists():
            raise InputFileNotFoundError(f"input file {str(path)!r} does not exist; check the path")
        files = _parquet_files(path)
        text_file = not files
        if files:
            _check_same_schema(engine, files)
            listed = ", ".join(quote_text(str(f)) for f in files)
            reader = f"read_parquet([{listed}])"
            header = True
        else:
            delimiter, header = sniff_csv(path, header)
            reader = _csv_reader(path, delimiter, header)
        view = engine.fresh_name("raw")
        where = str(path)
        _run(engine, f"CREATE VIEW {view} AS SELECT * FROM {reader}", where)
        described = _run(engine, f"DESCRIBE SELECT * FROM {view}", where).fetchall()
        found = [RawColumn(str(row[0]), str(row[1])) for row in described]
        if header:
            final = [r.name.strip() for r in found]
        elif names is not None and len(names) == len(found):
            final = [str(n) for n in names]
        else:
            final = [f"column_{i + 1}" for i in range(len(found))]
        check_column_names(final, str(path))
        raw = tuple(RawColumn(n, r.type) for n, r in zip(final, found, strict=True))
        numbered = engine.fresh_name("rows")
        columns = ", ".join(f"{r.ident} AS {n.ident}" for r, n in zip(found, raw, strict=True))
        _run(
            engine,
            f"CREATE VIEW {numbered} AS SELECT row_number() OVER () - 1 AS __row, {columns} "
            f"FROM {view}",
            where,
        )
        n_rows = int(_run(engine, f"SELECT count(*) FROM {view}", where).fetchone()[0])
        if n_rows == 0:
            raise InputError(f"{where!r} has a header but no rows; give at least one record")
        if n_rows > MAX_ROWS:
            raise InputError(f"{where!r} has {n_rows:,} rows; safeshare handles up to {MAX_ROWS:,}")
        return cls(engine, path, numbered, raw, n_rows, tokens, text_file)

    # -- choosing rows --------------------------------------------------------------------

    def rank_threshold(self, order: RowOrder, count: int) -> int:
        """The largest rank among the ``count`` rows of smallest rank (-1 when ``count`` is 0)."""
        return order.thresholds(self._n_rows, [count])[0]

    def frame(self, condition: str = "TRUE", *, as_written: bool = False) -> pd.DataFrame:
        """The rows meeting ``condition`` (over ``__row``) in file order, as ``read_frame`` gives
        them (``as_written``: a missing value's token, ``?`` or ``NA``, kept as text)."""
        tokens = () if as_written else self.missing_values
        parts = [f"{text_sql(r, tokens)} AS {r.ident}" if r.is_text else r.ident for r in self.raw]
        sql = f"SELECT {', '.join(parts)} FROM {self.view} WHERE {condition} ORDER BY __row"
        frame = _run(self.engine, sql, str(self.path)).df()
        for raw in self.raw:
            if raw.is_text:
                frame[raw.name] = frame[raw.name].astype("string")
        return frame

    # -- distinct rows and chunks (anonymization) -----------------------------------------

    def value_counts(self, columns: Sequence[str]) -> tuple[pd.DataFrame, np.ndarray]:
        """The distinct rows of ``columns`` (values as :meth:`frame` gives them) and how many
        records share each, in the order each first appears: one ``GROUP BY``."""
        raw = read_columns(self.raw, columns)
        sql = count_sql(self.view, raw, self.missing_values)
        with _reading(str(self.path)):
            return counted_frame(self.engine.arrow(sql), raw)

    def chunks(self, rows: int | None = None) -> Iterator[pd.DataFrame]:
        """Every row in file order, as :meth:`frame` gives them, at most ``rows`` at a time
        (default :data:`~safeshare.engine.distinct.CHUNK_ROWS`)."""
        integers, count = integers_sql(self.view, self.raw)
        sql = rows_sql(self.view, self.raw, self.missing_values, "TRUE")
        with _reading(str(self.path)):
            floats = with_missing(integers, None if count is None else self.engine.arrow(count))
            for batch in self.engine.stream(sql, rows or distinct.CHUNK_ROWS):
                frame = batch.to_pandas()
                frame.columns = list(self.names)
                yield as_read(frame, self.raw, floats)

    # -- encoding -------------------------------------------------------------------------

    def encode(self, domain: Domain, holdout: str) -> Encoded[DuckDBTable]:
        """Codes of every column of ``domain`` stored in DuckDB; ``holdout`` is a condition on ``__row``."""
        prepared, inner = prepare(domain, self.raw, self.missing_values)
        rows = f"(SELECT __row, CAST({holdout} AS BOOLEAN) AS __holdout, {inner} FROM {self.view})"
        codes = {
            c.name: code_sql(c, f"t{i}", None if p.value is None else f"x{i}")
            for i, (c, p) in enumerate(zip(domain, prepared, strict=True))
        }
        report = self._profile(domain, codes, rows)
        relation = self.engine.fresh_name("codes")
        stored = [
            f"CAST({codes[c.name]} AS {_code_type(c.size)}) AS c{i}" for i, c in enumerate(domain)
        ]
        self.engine.query(
            f"CREATE TABLE {relation} AS SELECT __row, __holdout, {', '.join(stored)} FROM {rows}"
        )
        n_holdout = int(
            self.engine.query(f"SELECT count(*) FROM {relation} WHERE __holdout").fetchone()[0]
        )
        expressions = {c.name: f"c{i}" for i, c in enumerate(domain)}
        train = DuckDBTable(
            self.engine, relation, domain, expressions, "NOT __holdout", self._n_rows - n_holdout
        )
        held = DuckDBTable(self.engine, relation, domain, expressions, "__holdout", n_holdout)
        return Encoded(train, held, report)

    def _profile(self, domain: Domain, codes: dict[str, str], rows: str) -> EncodeReport:
        """Refuse values the domain cannot hold; count (in train rows) what was folded or clipped."""
        parts = profile_sql(
            domain,
            lambda i, column: f"({codes[column.name]})",
            lambda i, column: clipped_sql(column, f"x{i}"),
        )
        result = self.engine.query(f"SELECT {', '.join(parts)} FROM {rows}").fetchnumpy()

        def count(key: str) -> int:
            return int(np.asarray(result[key])[0]) if key in result else 0

        return profile_report(domain, count)


@contextmanager
def _reading(where: str) -> Iterator[None]:
    """Around a query reading the file: a failure names the file and line, never the content."""
    duckdb = require_duckdb()
    try:
        yield
    except duckdb.Error as err:
        line = re.search(r"[Ll]ine:? (\d+)", str(err))
        at = f" near line {line.group(1)}" if line else ""
        raise InputError(
            f"{where!r} could not be read as a table{at} ({type(err).__name__}); check that every "
            "row has the same number of fields and that quotes are closed"
        ) from None


def _code_type(size: int) -> str:
    if size <= 255:
        return "UTINYINT"
    if size <= 65535:
        return "USMALLINT"
    return "INTEGER"


def _parquet_files(path: Path) -> list[Path]:
    """The Parquet files of ``path`` (itself, or a folder's, in name order); empty for a text file."""
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix.lower() in PARQUET_SUFFIXES)
        if not files:
            raise InputError(
                f"folder {str(path)!r} holds no .parquet files; give a file or a folder of them"
            )
        return files
    return [path] if path.suffix.lower() in PARQUET_SUFFIXES else []


def _check_same_schema(engine: DuckDBEngine, files: list[Path]) -> None:
    """Refuse a folder whose Parquet files disagree on column names or types, naming them."""
    first: list[tuple[str, str]] | None = None
    differ: list[str] = []
    for file in files:
        sql = f"DESCRIBE SELECT * FROM read_parquet({quote_text(str(file))})"
        columns = [(str(r[0]), str(r[1])) for r in _run(engine, sql, str(file)).fetchall()]
        if first is None:
            first = columns
        elif columns != first:
            differ.append(file.name)
    if differ:
        shown = ", ".join(differ[:5]) + (f" and {len(differ) - 5} more" if len(differ) > 5 else "")
        raise InputError(
            f"the Parquet files of {str(files[0].parent)!r} do not share one schema: {shown} "
            f"differ from {files[0].name} in column names or types; rewrite them with one schema"
        )


def _csv_reader(path: Path, delimiter: str, header: bool) -> str:
    options = [
        f"delim={quote_text(delimiter)}",
        f"header={'true' if header else 'false'}",
        "all_varchar=true",
        "quote='\"'",
        "escape='\"'",
        "strict_mode=true",
    ]
    return f"read_csv({quote_text(str(path))}, {', '.join(options)})"


def _run(engine: DuckDBEngine, sql: str, where: str) -> Any:
    """A statement reading the file; a parse failure names the file and line, never its content."""
    with _reading(where):
        result = engine.query(sql)
    return result
