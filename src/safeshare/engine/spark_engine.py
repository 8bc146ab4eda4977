"""The Spark engine: counts as Spark SQL over codes cached on a cluster (or locally).

A :class:`SparkEngine` holds a SparkSession: one it starts (``local[2]`` unless
``spark-submit`` or ``spark-defaults.conf`` names a master) or one it is given.
Files are opened with :meth:`SparkEngine.open` (see :mod:`safeshare.engine.spark_source`),
encoded once into a cached table of small integer codes, and every count - a
marginal, the sizes of equivalence classes - is one Spark job over that table.
Only counts come back to Python; :meth:`SparkTable.fetch` (and the source's
``frame``) bring rows back and are meant for bounded samples.

Usage (not run as a doctest: starting a JVM takes seconds)::

    with SparkEngine(**{"spark.sql.shuffle.partitions": "8"}) as engine:
        source = engine.open("big.parquet")
        encoded = source.encode(domain, holdout="FALSE")
        engine.counts(encoded.train, ["sex", "age"])

Spark's failures become safeshare errors naming the step and Spark's error class,
never a value from the data (Spark's own executor logs may quote a failing record:
keep them under the same access rules as the data).
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from safeshare.data.table import Table
from safeshare.engine.spark_session import (
    SparkJobError,
    pyspark_module,
    quietly,
    require_java,
    require_pyspark,
    spark_errors,
    spark_failure,
    start_session,
)
from safeshare.engine.sql_engine import SqlEngine
from safeshare.engine.sql_table import SqlTable
from safeshare.errors import InputError

if TYPE_CHECKING:
    from safeshare.engine.spark_source import SparkSource

__all__ = ["SparkEngine", "SparkJobError", "SparkTable", "require_java", "require_pyspark"]

T = TypeVar("T")


class SparkTable(SqlTable["SparkEngine"]):
    """Integer codes in a cached Spark table (see :class:`~safeshare.engine.sql_table.SqlTable`)."""

    def lookup(self, mapping: str, code: str) -> str:
        return f"element_at(array({mapping}), ({code}) + 1)"


class SparkEngine(SqlEngine[SparkTable]):
    """Counts with Spark SQL over codes cached where Spark runs; see the module docstring.

    ``master`` defaults to what ``spark-submit`` (or ``spark-defaults.conf``) says,
    else ``local[2]``; ``session`` uses a running SparkSession instead of starting
    one (it is then left running on :meth:`close`).  Further settings are Spark
    configuration keys, e.g. ``SparkEngine(**{"spark.sql.shuffle.partitions": "8"})``.
    """

    name = "spark"
    table_type = SparkTable

    def __init__(
        self,
        master: str | None = None,
        app_name: str = "safeshare",
        *,
        session: Any = None,
        **conf: str | int | float | bool,
    ) -> None:
        sql = require_pyspark()
        self._names = itertools.count()
        self._prefix = f"safeshare_{uuid.uuid4().hex[:8]}"  # engines may share one session
        self._views: dict[str, Any] = {}  # name -> its DataFrame if cached, else None
        if session is not None:
            self.spark: Any = session
            self._owns_session = False
        else:
            self.spark, self._owns_session = start_session(sql, master, app_name, conf)
        self._closed = False
        # row positions need file splits that stay put while a file is read more than once:
        # pin the one input that can move them (the cluster's parallelism) if nobody set it
        self.run("configuring Spark", self._pin_splits)

    def _pin_splits(self) -> None:
        runtime = self.spark.conf
        if runtime.get("spark.sql.files.minPartitionNum", None) is None:
            parallelism = self.spark.sparkContext.defaultParallelism
            runtime.set("spark.sql.files.minPartitionNum", str(parallelism))

    @property
    def parallelism(self) -> int:
        """How many tasks run at once (Spark's default parallelism)."""
        return int(self.spark.sparkContext.defaultParallelism)

    # -- lifecycle ------------------------------------------------------------------------

    def close(self) -> None:
        """Drop this engine's cached tables and views; stop Spark if this engine started it."""
        if self._closed:
            return
        self._closed = True
        if self._stopped():  # stopped under this engine: its views went with it
            self._views.clear()
            return
        for view in list(self._views):
            self.drop(view)
        if self._owns_session:
            quietly(self.spark.stop)

    def _stopped(self) -> bool:
        """Whether Spark's context was stopped under this engine (by its owner, or a crash)."""
        return getattr(self.spark.sparkContext, "_jsc", None) is None  # pyspark clears it

    # -- running Spark --------------------------------------------------------------------

    def run(
        self, step: str, work: Callable[[], T], *, reading: str | None = None, hint: str = ""
    ) -> T:
        """``work()``; a Spark failure becomes a safeshare error naming ``step`` (and the file read).

        The error carries Spark's error class, never its message (which may quote data).
        """
        if self._closed:
            raise InputError("this Spark engine is closed; open a new one")
        if self._stopped():
            raise SparkJobError(
                f"the Spark session was stopped before {step}; start it again and rerun"
            )
        try:
            return work()
        except spark_errors() as err:
            failure = spark_failure(err)
            if reading is not None:
                raise InputError(
                    f"{reading!r} could not be read as a table ({failure}) while {step}"
                    + (f"; {hint}" if hint else "")
                ) from None
            raise SparkJobError(
                f"Spark failed while {step} ({failure}); the driver and executor logs say more"
            ) from None

    def sql(self, statement: str, step: str, *, reading: str | None = None, hint: str = "") -> Any:
        """A DataFrame of one Spark SQL statement (planned now: mistakes surface here)."""
        return self.run(step, lambda: self.spark.sql(statement), reading=reading, hint=hint)

    def collect(
        self, statement: str, step: str, *, reading: str | None = None, hint: str = ""
    ) -> Any:
        """The (small) result of one statement, as a pyarrow Table."""
        return self.run(
            step, lambda: self.spark.sql(statement).toArrow(), reading=reading, hint=hint
        )

    def fetch_columns(self, statement: str, step: str) -> Mapping[str, np.ndarray]:
        """The (small) result of one statement as int64 numpy columns."""
        result = self.collect(statement, step)
        return {name: _ints(result, name) for name in result.column_names}

    def fresh_name(self, stem: str) -> str:
        """A new temporary view name in this engine's session."""
        return f"{self._prefix}_{stem}_{next(self._names)}"

    def register(self, frame: Any, stem: str, *, cache: bool = False) -> str:
        """Register a DataFrame as a temporary view (cached where asked); its name."""
        name = self.fresh_name(stem)

        def work() -> None:
            if cache:
                frame.persist(pyspark_module("pyspark").StorageLevel.MEMORY_AND_DISK)
            frame.createOrReplaceTempView(name)

        self.run(f"registering {stem}", work)
        self._views[name] = frame if cache else None
        return name

    def drop(self, name: str) -> None:
        """Forget a view this engine registered, and its cached data (failures are moot)."""
        frame = self._views.pop(name, None)
        if frame is not None:
            quietly(frame.unpersist)
        quietly(lambda: self.spark.catalog.dropTempView(name))

    # -- data in --------------------------------------------------------------------------

    def open(
        self,
        path: str | Path,
        *,
        names: Sequence[str] | None = None,
        missing_values: Sequence[str] | None = None,
        header: bool | None = None,
    ) -> SparkSource:
        """A CSV/TSV file, a Parquet file or a folder of Parquet files, read where it lies
        (``header``: whether a CSV's first row is a header; None detects it)."""
        from safeshare.engine.spark_source import SparkSource

        return SparkSource.open(
            self, path, names=names, missing_values=missing_values, header=header
        )

    def store(self, table: Table) -> SparkTable:
        """An in-memory Table copied into Spark (tests, and small tables beside large ones)."""
        import pyarrow as pa

        columns = {f"c{i}": table.column(n).astype(np.int32) for i, n in enumerate(table.columns)}
        arrow = pa.table({"__row": np.arange(len(table), dtype=np.int64), **columns})
        frame = self.run("copying a table into Spark", lambda: self.spark.createDataFrame(arrow))
        relation = self.register(frame, "stored", cache=True)
        expressions = {n: f"c{i}" for i, n in enumerate(table.columns)}
        return SparkTable(self, relation, table.domain, expressions, "TRUE", len(table))

    # -- counting -------------------------------------------------------------------------

    def _count_sets(
        self,
        table: SparkTable,
        column_sets: Sequence[Sequence[str]],
        shapes: Sequence[tuple[int, ...]],
    ) -> list[np.ndarray]:
        """Every table from one job.

        Each row is expanded (``stack``) into one ``(set, cell)`` pair per column set,
        the cell being the row-major index of the row's codes in that set's table;
        one ``GROUP BY set, cell`` then counts every table at once.  (GROUPING SETS
        would do the same, but its grouping id caps a job at 64 columns.)
        """
        names = sorted({n for s in column_sets for n in s}, key=table.domain.position)
        alias = {n: f"k{i}" for i, n in enumerate(names)}
        select = [f"CAST({table.expression(n)} AS BIGINT) AS {alias[n]}" for n in names]
        inner = table.select(select or ["1 AS one"])
        pairs = ", ".join(
            f"{i}, {_cell([alias[n] for n in s], shape)}"
            for i, (s, shape) in enumerate(zip(column_sets, shapes, strict=True))
        )
        expanded = f"SELECT stack({len(column_sets)}, {pairs}) AS (sid, cell) FROM ({inner})"
        result = self.fetch_columns(
            f"SELECT sid, cell, count(*) AS n FROM ({expanded}) GROUP BY sid, cell",
            "counting marginals",
        )
        sid, cell, n = result["sid"], result["cell"], result["n"]
        out = []
        for i, shape in enumerate(shapes):
            rows = sid == i
            dense = np.zeros(int(np.prod(shape, dtype=np.int64)) if shape else 1, dtype=np.int64)
            dense[cell[rows]] = n[rows]  # one row per (set, cell): GROUP BY made them distinct
            out.append(dense.reshape(shape))
        return out


def _cell(keys: Sequence[str], shape: tuple[int, ...]) -> str:
    """The row-major index of ``keys`` in a table of ``shape`` (0 for no keys)."""
    if not keys:
        return "CAST(0 AS BIGINT)"
    cell = keys[0]
    for key, size in zip(keys[1:], shape[1:], strict=True):
        cell = f"({cell} * {size} + {key})"
    return cell


def _ints(result: Any, name: str) -> np.ndarray:
    """One column of an arrow result as int64."""
    return np.asarray(result.column(name).to_numpy(zero_copy_only=False), dtype=np.int64)
