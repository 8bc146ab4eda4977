"""A file read by Spark where it lies: raw columns, row positions, encoding into cached codes.

The Spark twin of :mod:`safeshare.engine.duckdb_source`, with the same semantics and
errors.  CSV files are read as text with the delimiter and header
:func:`~safeshare.data.readers.sniff_csv` decides (quote and escape ``"``); Parquet
files keep their types, and a folder of Parquet files is one table (files in name
order; all must share one schema).  A location may be a local path or a URI Hadoop
reads (``hdfs://``, ``s3a://``); see :mod:`safeshare.engine.spark_files`, which also
explains how every row gets ``__row``, its position in the file(s), in parallel.
Keyed :class:`~safeshare.data.row_order.RowOrder` ranks of those positions give
train/holdout parts and samples that numpy would pick identically.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from safeshare.data.codec import EncodeReport
from safeshare.data.domain import Domain
from safeshare.data.readers import MISSING_TOKENS, check_column_names
from safeshare.data.row_order import PRIME, RowOrder
from safeshare.engine import distinct
from safeshare.engine.distinct import (
    as_read,
    count_sql,
    counted_frame,
    integers_sql,
    read_columns,
    with_missing,
)
from safeshare.engine.spark_engine import SparkEngine, SparkTable
from safeshare.engine.spark_files import (
    CORRUPT,
    CSV_HINT,
    PARQUET_HINT,
    Location,
    number_rows,
    parquet_files,
    read_csv,
    read_parquet,
    sniff,
)
from safeshare.engine.sql_codec import (
    SPARK,
    RawColumn,
    clipped_sql,
    code_sql,
    prepare,
    profile_report,
    profile_sql,
    text_sql,
)
from safeshare.engine.sql_source import Encoded, SqlSource
from safeshare.errors import EncodingError, InputError, InputFileNotFoundError

_BUCKET = 1 << 15  # rank_threshold: ranks (< 2**31) fall in 2**16 buckets of 2**15
SPREAD_ROWS = 1_000_000  # codes of more rows read by fewer tasks than cores are spread out


class SparkSource(SqlSource[SparkEngine]):
    """A raw file as a Spark view with row positions; see the module docstring.

    ``n_splits``: how many tasks read the file (encoding spreads fewer than the cores out).
    """

    n_splits: int = 1

    @property
    def _hint(self) -> str:
        return CSV_HINT if self.text_file else PARQUET_HINT

    def _collect(self, statement: str, step: str) -> Any:
        """The engine's result of a statement over this file (errors name the file)."""
        return self.engine.collect(statement, step, reading=str(self.path), hint=self._hint)

    @classmethod
    def open(
        cls,
        engine: SparkEngine,
        path: str | Path,
        *,
        names: Sequence[str] | None = None,
        missing_values: Sequence[str] | None = None,
        header: bool | None = None,
    ) -> SparkSource:
        """Open ``path`` (CSV/TSV, Parquet, or a folder of Parquet files) without loading it.

        ``path`` is a local path or a URI (``hdfs://...``); text without a scheme is local.
        """
        tokens = tuple(MISSING_TOKENS if missing_values is None else missing_values)
        location = Location(engine, path)
        where = location.text
        if not location.exists():
            raise InputFileNotFoundError(f"input file {where!r} does not exist; check the path")
        files = parquet_files(location)
        if files:
            frame = read_parquet(engine, files, where)
            header, first = True, list[str]()
        else:
            delimiter, header, first = sniff(location, header)
            frame = read_csv(engine, location, delimiter, header, max(len(first), 1))
        fields = [f for f in frame.schema.fields if f.name != CORRUPT]
        found = [str(f.name) for f in fields]
        if header:
            final = [n.strip() for n in (found if files else first)]
        elif names is not None and len(names) == len(found):
            final = [str(n) for n in names]
        else:
            final = [f"column_{i + 1}" for i in range(len(found))]
        check_column_names(final, where)
        raw = tuple(
            RawColumn(n, str(f.dataType.simpleString()), SPARK)
            for n, f in zip(final, fields, strict=True)
        )
        view, n_rows, n_splits = number_rows(engine, frame, found, raw, location, files)
        source = cls(engine, path, view, raw, n_rows, tokens, not files)
        source.n_splits = n_splits
        return source

    # -- choosing rows --------------------------------------------------------------------

    def rank_threshold(self, order: RowOrder, count: int) -> int:
        """The largest rank among the ``count`` rows of smallest rank (-1 when ``count`` is 0).

        Two counting jobs, no sort: how many ranks fall in each of 2**16 buckets, then
        the (at most 2**15, distinct) ranks inside the bucket holding the answer.
        """
        if count <= 0:
            return -1
        count = min(count, self._n_rows)
        ranks = f"SELECT {order.sql('id')} AS r FROM range({self._n_rows})"
        step = "choosing rows by rank"
        buckets = self.engine.collect(
            f"SELECT r DIV {_BUCKET} AS b, count(*) AS n FROM ({ranks}) AS t GROUP BY b", step
        )
        bucket = np.asarray(buckets.column("b").to_numpy(zero_copy_only=False), dtype=np.int64)
        sizes = np.asarray(buckets.column("n").to_numpy(zero_copy_only=False), dtype=np.int64)
        by_bucket = np.argsort(bucket)
        bucket, sizes = bucket[by_bucket], sizes[by_bucket]
        reached = np.cumsum(sizes)
        at = int(np.searchsorted(reached, count))  # the first bucket reaching ``count`` ranks
        before = int(reached[at] - sizes[at])
        inside = self.engine.collect(
            f"SELECT r % {_BUCKET} AS v FROM ({ranks}) AS t WHERE r DIV {_BUCKET} = {bucket[at]}",
            step,
        )
        values = np.sort(np.asarray(inside.column("v").to_numpy(zero_copy_only=False)))
        threshold = int(bucket[at]) * _BUCKET + int(values[count - before - 1])
        if not 0 <= threshold < PRIME:
            raise InputError("rank_threshold found no rank; the row order is inconsistent")
        return threshold

    def frame(self, condition: str = "TRUE", *, as_written: bool = False) -> pd.DataFrame:
        """The rows meeting ``condition`` (over ``__row``) in file order, as ``read_frame`` gives
        them (``as_written``: a missing value's token, ``?`` or ``NA``, kept as text)."""
        tokens = () if as_written else self.missing_values
        parts = [f"{text_sql(r, tokens)} AS {r.ident}" if r.is_text else r.ident for r in self.raw]
        statement = f"SELECT {', '.join(parts)} FROM {self.view} WHERE {condition} ORDER BY __row"
        result = self._collect(statement, "reading rows")
        frame = result.to_pandas()
        for raw in self.raw:
            if raw.is_text:
                frame[raw.name] = frame[raw.name].astype("string")
        return frame

    # -- distinct rows and chunks (anonymization) -----------------------------------------

    def value_counts(self, columns: Sequence[str]) -> tuple[pd.DataFrame, np.ndarray]:
        """The distinct rows of ``columns`` (values as :meth:`frame` gives them) and how many
        records share each, in the order each first appears: one ``GROUP BY`` job."""
        raw = read_columns(self.raw, columns)
        result = self._collect(
            count_sql(self.view, raw, self.missing_values), "counting distinct rows"
        )
        return counted_frame(result, raw)

    def chunks(self, rows: int | None = None) -> Iterator[pd.DataFrame]:
        """Every row in file order, as :meth:`frame` gives them, at most ``rows`` at a time
        (default :data:`~safeshare.engine.distinct.CHUNK_ROWS`; one job per chunk, each
        selecting its range of positions)."""
        integers, count = integers_sql(self.view, self.raw)
        found = None
        if count is not None:
            found = self._collect(count, "reading rows")
        floats = with_missing(integers, found)
        size = rows or distinct.CHUNK_ROWS
        for start in range(0, self._n_rows, size):
            chunk = self.frame(f"__row >= {start} AND __row < {start + size}")
            yield as_read(chunk, self.raw, floats)

    # -- encoding -------------------------------------------------------------------------

    def encode(self, domain: Domain, holdout: str) -> Encoded[SparkTable]:
        """Codes of every column of ``domain`` cached in Spark; ``holdout`` is a condition on ``__row``.

        One pass over the file: the codes (negative where the domain cannot hold a
        value) and the clipping flags are cached, and one aggregation over the cache
        refuses what the domain cannot hold and counts what was folded or clipped.
        """
        prepared, inner = prepare(domain, self.raw, self.missing_values)
        rows = (
            f"(SELECT __row, CAST({holdout} AS BOOLEAN) AS __holdout"
            f"{', ' if inner else ''}{inner} FROM {self.view}) AS r"
        )
        stored = ["__row", "__holdout"]
        for i, (column, prep) in enumerate(zip(domain, prepared, strict=True)):
            code = code_sql(column, f"t{i}", None if prep.value is None else f"x{i}", SPARK)
            stored.append(f"CAST({code} AS {_code_type(column.size)}) AS c{i}")
            if not column.is_categorical:
                low, high = clipped_sql(column, f"x{i}")
                stored += [
                    f"coalesce({low}, FALSE) AS low{i}",
                    f"coalesce({high}, FALSE) AS high{i}",
                ]
        frame = self.engine.sql(
            f"SELECT {', '.join(stored)} FROM {rows}",
            "encoding",
            reading=str(self.path),
            hint=self._hint,
        )
        parallelism = self.engine.parallelism
        if self.n_splits < parallelism and self._n_rows >= SPREAD_ROWS:
            # e.g. a large CSV read whole by one task: count in parallel all the same
            frame = self.engine.run("encoding", lambda: frame.repartition(parallelism))
        relation = self.engine.register(frame, "codes", cache=True)
        try:
            report, n_holdout = self._profile(domain, relation)
        except (InputError, EncodingError):
            self.engine.drop(relation)  # nothing half-encoded stays cached
            raise
        expressions = {c.name: f"c{i}" for i, c in enumerate(domain)}
        train = SparkTable(
            self.engine, relation, domain, expressions, "NOT __holdout", self._n_rows - n_holdout
        )
        held = SparkTable(self.engine, relation, domain, expressions, "__holdout", n_holdout)
        return Encoded(train, held, report)

    def _profile(self, domain: Domain, relation: str) -> tuple[EncodeReport, int]:
        """Refuse values the domain cannot hold; count (in train rows) what was folded or clipped.

        Also checks that every row kept its position; returns the report and the holdout's size.
        """
        parts = [
            "count(*) AS rows_seen",
            "count_if(__row IS NULL) AS rows_lost",
            "count_if(__holdout) AS rows_held",
        ]
        parts += profile_sql(domain, lambda i, _: f"c{i}", lambda i, _: (f"low{i}", f"high{i}"))
        result = self._collect(
            f"SELECT {', '.join(parts)} FROM {relation}", "encoding and profiling the values"
        )
        found = {name: result.column(name)[0].as_py() for name in result.column_names}

        def count(key: str) -> int:
            return int(found.get(key) or 0)

        if count("rows_lost") or count("rows_seen") != self._n_rows:
            raise _moved(str(self.path))
        return profile_report(domain, count), count("rows_held")


def _moved(where: str) -> InputError:
    return InputError(
        f"{where!r} changed while it was read, or Spark split it differently between reads "
        "(row positions no longer match); keep the file unchanged and "
        "spark.sql.files.* settings fixed while an engine uses it, then open it again"
    )


def _code_type(size: int) -> str:
    return "SMALLINT" if size <= 32767 else "INT"
