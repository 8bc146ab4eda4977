"""Distinct rows with their counts, and rows a chunk at a time: what anonymization asks of a file.

The anonymization search needs, of a table larger than memory, only its distinct rows over a
few columns and how many records share each (one ``GROUP BY``, :func:`count_sql`); its
release reads the records back in file order, one chunk at a time.  Both give values as
:func:`~safeshare.data.readers.read_frame` gives them (text trimmed, missing spellings as
missing; Parquet's typed columns kept), so a table counted by an engine anonymizes exactly
as the same table read into memory.  DuckDB's and Spark's sources share these pieces.

>>> from safeshare.engine.sql_codec import RawColumn
>>> raw = (RawColumn("zip", "VARCHAR"), RawColumn("age", "INTEGER"))
>>> print(count_sql("rows_0", read_columns(raw, ["age"]), ("",)))  # doctest: +NORMALIZE_WHITESPACE
SELECT c0, count(*) AS __n, min(__row) AS __first
FROM (SELECT __row, "age" AS c0 FROM rows_0) AS t GROUP BY c0
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np
import pandas as pd

from safeshare.engine.sql_codec import RawColumn, text_sql
from safeshare.errors import InputError

CHUNK_ROWS = 1_000_000  # records read back at a time


def read_columns(raw: Sequence[RawColumn], names: Sequence[str]) -> list[RawColumn]:
    """The raw columns named ``names`` (in that order); an absent one is refused by name."""
    by_name = {r.name: r for r in raw}
    absent = [n for n in names if n not in by_name]
    if absent:
        raise InputError(
            f"the table has no columns {absent}; it has {[r.name for r in raw]}. "
            "Name columns of the table"
        )
    return [by_name[n] for n in names]


def read_sql(raw: RawColumn, missing_values: Sequence[str]) -> str:
    """A column as the readers give it: trimmed text (NULL where missing), else its value."""
    return text_sql(raw, missing_values) if raw.is_text else raw.ident


def count_sql(view: str, columns: Sequence[RawColumn], missing_values: Sequence[str]) -> str:
    """One ``GROUP BY``: the distinct rows of ``columns`` with their count and first position."""
    if not columns:
        return f"SELECT count(*) AS __n, min(__row) AS __first FROM {view}"
    parts = ", ".join(f"{read_sql(r, missing_values)} AS c{i}" for i, r in enumerate(columns))
    keys = ", ".join(f"c{i}" for i in range(len(columns)))
    return (
        f"SELECT {keys}, count(*) AS __n, min(__row) AS __first "
        f"FROM (SELECT __row, {parts} FROM {view}) AS t GROUP BY {keys}"
    )


def rows_sql(view: str, raw: Sequence[RawColumn], missing_values: Sequence[str], where: str) -> str:
    """Every column of the rows meeting ``where``, as the readers give them, in file order."""
    parts = ", ".join(f"{read_sql(r, missing_values)} AS {r.ident}" for r in raw)
    return f"SELECT {parts} FROM {view} WHERE {where} ORDER BY __row"


def counted_frame(result: Any, columns: Sequence[RawColumn]) -> tuple[pd.DataFrame, np.ndarray]:
    """An Arrow result of :func:`count_sql` as the distinct rows in first-seen order and their
    counts."""
    frame = result.to_pandas()
    if len(frame):
        frame = frame.sort_values("__first", kind="stable").reset_index(drop=True)
    counts = frame["__n"].to_numpy(dtype=np.int64)
    named = pd.DataFrame({r.name: frame[f"c{i}"] for i, r in enumerate(columns)})
    return as_read(named, columns), counts


def as_read(
    frame: pd.DataFrame, columns: Sequence[RawColumn], floats: Collection[str] = ()
) -> pd.DataFrame:
    """Columns typed as the readers type the whole table: text as pandas' ``string``, and
    the integer columns named in ``floats`` (those with a missing value anywhere in the
    table, which a reader of the whole table gives as floats) as float64."""
    for raw in columns:
        if raw.name not in frame.columns:
            continue
        if raw.is_text:
            frame[raw.name] = frame[raw.name].astype("string")
        elif raw.name in floats and frame[raw.name].dtype.kind in "iu":
            frame[raw.name] = frame[raw.name].astype("float64")
    return frame


def integers_sql(view: str, raw: Sequence[RawColumn]) -> tuple[list[RawColumn], str | None]:
    """The integer columns, and a query counting the missing values of each (``n{i}``)."""
    integers = [r for r in raw if r.is_number and not r.is_float]
    if not integers:
        return integers, None
    parts = ", ".join(f"count_if({r.ident} IS NULL) AS n{i}" for i, r in enumerate(integers))
    return integers, f"SELECT {parts} FROM {view}"


def with_missing(integers: Sequence[RawColumn], result: Any) -> set[str]:
    """The integer columns a :func:`integers_sql` result finds a missing value in."""
    row = result.to_pylist()[0] if result is not None else {}
    return {r.name for i, r in enumerate(integers) if int(row.get(f"n{i}") or 0)}
