"""The sensitive table as a release reads it: in memory (numpy) or where it lies (DuckDB).

A release needs the same few things of its input whichever engine holds it: the
rows whose values are checked before the spend, the train rows that decide each
column's kind and feed DP domain discovery (never the holdout, which measures the
release), the train and holdout codes, and bounded samples to evaluate.  Rows are chosen by a
keyed :class:`~safeshare.data.row_order.RowOrder` (the holdout is the rows of
smallest rank, samples the next ones), so both inputs pick exactly the same rows and
a release is identical - same counts, same noise under the same seed - whichever
engine ran.  Tables larger than :data:`SAMPLE_ROWS` decide kinds and discover
domains on a uniform sample of that many training rows (DP still holds: each record adds to
at most one count), and evaluation runs on samples of :data:`EVALUATION_ROWS`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pandas as pd

from safeshare.data.codec import EncodeReport
from safeshare.data.domain import Domain
from safeshare.data.identity import Identity
from safeshare.data.readers import Layout, split_missing
from safeshare.data.row_order import RowOrder
from safeshare.data.schema import Schema
from safeshare.data.table import CodedTable, Table
from safeshare.engine.base import ClosesOnExit
from safeshare.engine.duckdb_engine import DuckDBEngine, default_memory_limit
from safeshare.errors import InputError
from safeshare.evaluate.split import holdout_size

if TYPE_CHECKING:
    from safeshare.engine.spark_engine import SparkEngine
    from safeshare.engine.spark_source import SparkSource

ENGINES = ("auto", "numpy", "duckdb", "spark")
SAMPLE_ROWS = 1_000_000  # rows that decide column kinds and discover domains, at most
EVALUATION_ROWS = 100_000  # rows of train, holdout and release that evaluation reads, at most
AUTO_DUCKDB_BYTES = 1 << 30  # inputs larger than this go to DuckDB when the engine is "auto"


@dataclass(frozen=True)
class Parts:
    """What encoding gives a release: codes to fit on, bounded tables to evaluate (as codes, and
    the same rows as read, for the scorer that reads values)."""

    train: CodedTable
    train_sample: Table
    holdout_sample: Table | None
    report: EncodeReport
    train_values: pd.DataFrame
    holdout_values: pd.DataFrame | None
    notes: list[str] = field(default_factory=list)


class EngineTable(CodedTable, Protocol):
    """A table an engine stores: it narrows to rows by a SQL condition and fetches them."""

    def where(self, condition: str, n_rows: int) -> EngineTable: ...

    def fetch(self, order_by: str = "__row") -> Table: ...


class EngineEncoded(Protocol):
    """What an engine's ``encode`` gives: train and holdout codes, and the encoding report."""

    @property
    def train(self) -> EngineTable: ...

    @property
    def holdout(self) -> EngineTable: ...

    @property
    def report(self) -> EncodeReport: ...


class EngineSource(Protocol):
    """A file an engine reads where it lies (DuckDB's or Spark's source)."""

    def __len__(self) -> int: ...

    def frame(self, condition: str = "TRUE", *, as_written: bool = False) -> pd.DataFrame: ...

    def encode(self, domain: Domain, holdout: str) -> EngineEncoded: ...

    @property
    def names(self) -> tuple[str, ...]: ...

    @property
    def missing_values(self) -> tuple[str, ...]:
        """The tokens that mean a missing value ('', '?', 'NA', ...)."""
        ...

    def value_counts(self, columns: Sequence[str]) -> tuple[pd.DataFrame, np.ndarray]:
        """Distinct rows of ``columns`` in first-seen order, and the records of each."""
        ...

    def chunks(self) -> Iterator[pd.DataFrame]:
        """Every row in file order, a chunk at a time."""
        ...


class ReleaseInput(Protocol):
    """The input table, whichever engine holds it."""

    engine_name: str
    name: str
    identity: Identity

    @property
    def fingerprint(self) -> str: ...

    def __len__(self) -> int: ...

    def checked_frame(self) -> pd.DataFrame:
        """The rows whose values are checked before the spend: all rows, or (beyond SAMPLE_ROWS)
        the discovery sample."""
        ...

    def split(self, holdout_fraction: float, order: RowOrder) -> tuple[int, int]:
        """Hold out the rows of smallest rank; the sizes of train and holdout."""
        ...

    def discovery_frame(self) -> pd.DataFrame:
        """The train rows column kinds are guessed from and DP discovery reads (all, or a sample
        of SAMPLE_ROWS); never a holdout row."""
        ...

    def discovery_spellings(self) -> pd.DataFrame | None:
        """For the rows of :meth:`discovery_frame`, how each missing value was written ('?',
        'NA', ...; NA elsewhere), for the columns that write one other than the empty field;
        None where the engine cannot tell (then no spelling is measured, for any input)."""
        ...

    def encode(self, domain: Domain) -> Parts:
        """Codes of train and holdout under ``domain``, with the samples evaluation reads."""
        ...

    def describe(self) -> dict[str, object]:
        """The engine line of the privacy card."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> ReleaseInput: ...

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None: ...


@dataclass(frozen=True, kw_only=True)
class Reading:
    """How a job reads its sensitive table: the schema, the name the ledger and the card give
    it, whether a CSV's first row is a header, and the engine that counts it.

    ``header``: True or False as the owner says (``--header``/``--no-header``), over the
    schema's ``header:``; None detects it (a headerless file whose first record looks like
    names would lose that record to the column names).

    ``engine``: ``numpy`` in memory, ``duckdb`` where the file lies (larger than memory, at
    most ``memory_limit`` of RAM), ``spark`` on a cluster (``spark_master``, else what
    ``spark-submit`` gives, else ``local[2]``; Spark also reads ``hdfs://`` and ``s3a://``
    URIs), ``auto`` DuckDB for files over 1 GiB when it is installed; the release is the same.

    >>> Reading(engine="duckdb", memory_limit="1GB").engine
    'duckdb'
    >>> Reading(engine="pandas").check()
    Traceback (most recent call last):
    ...
    safeshare.errors.InputError: unknown engine 'pandas'; choose one of ['auto', 'numpy', 'duckdb', 'spark']
    """

    schema: Schema | str | Path | None = None
    name: str | None = None
    engine: str = "auto"
    memory_limit: str | None = None
    spark_master: str | None = None
    header: bool | None = None

    def check(self) -> None:
        """Refuse an unknown engine before anything is read."""
        if self.engine not in ENGINES:
            raise InputError(f"unknown engine {self.engine!r}; choose one of {list(ENGINES)}")

    def files(self) -> tuple[Path, ...]:
        """The files this reading names beside the input (the output may not replace them)."""
        return (Path(self.schema),) if isinstance(self.schema, str | Path) else ()


def open_input(
    source: str | Path | pd.DataFrame, schema: Schema | None, reading: Reading
) -> ReleaseInput:
    """The input as ``reading`` asks (``schema`` is its loaded schema)."""
    reading.check()
    engine, name = reading.engine, reading.name
    layout = Schema.layout_of(schema, reading.header)
    if isinstance(source, pd.DataFrame):
        if engine in ("duckdb", "spark"):
            raise InputError(f"the {engine} engine reads files; give a CSV or Parquet path")
        return FrameInput.from_frame(source, name)
    if engine == "spark":
        return EngineInput.open_spark(source, layout, name, reading.spark_master)
    if isinstance(source, str) and "://" in source:
        raise InputError(
            f"{source!r} is a URI; only --engine spark reads URIs (give a local path otherwise)"
        )
    path = Path(source)
    if engine == "auto":
        engine = "duckdb" if _input_bytes(path) > AUTO_DUCKDB_BYTES and _has_duckdb() else "numpy"
    if engine == "numpy":
        return FrameInput.from_file(path, layout, name)
    return EngineInput.open_duckdb(
        path, layout, name, reading.memory_limit or default_memory_limit()
    )


class FrameInput(ClosesOnExit):
    """A table read into pandas; the numpy engine counts it."""

    engine_name = "numpy"

    def __init__(
        self,
        frame: pd.DataFrame,
        name: str,
        identity: Identity,
        spellings: pd.DataFrame | None = None,
    ) -> None:
        self._frame = frame
        self._spellings = spellings if spellings is not None else pd.DataFrame(index=frame.index)
        self.name = name
        self.identity = identity
        self._by_rank: np.ndarray | None = None
        self.n_holdout = 0

    @classmethod
    def from_frame(cls, frame: pd.DataFrame, dataset_name: str | None) -> FrameInput:
        if frame.shape[0] == 0 or frame.shape[1] == 0:
            raise InputError("the table is empty; give at least one column and one record")
        copy = frame.copy()
        copy.columns = [str(c) for c in copy.columns]
        return cls(copy, dataset_name or "dataframe", Identity.of_frame(copy))

    @classmethod
    def from_file(cls, path: Path, layout: Layout, dataset_name: str | None) -> FrameInput:
        raw = replace(layout, missing_values=()).read(path)
        frame, spellings = split_missing(raw, layout.missing_values)
        identity = Identity.of_file(path, layout.header)
        return cls(frame, dataset_name or path.name, identity, spellings)

    @property
    def fingerprint(self) -> str:
        return self.identity.records

    def __len__(self) -> int:
        return len(self._frame)

    @property
    def frame(self) -> pd.DataFrame:
        """The whole table, as read."""
        return self._frame

    def checked_frame(self) -> pd.DataFrame:
        if len(self._frame) <= SAMPLE_ROWS:
            return self._frame
        return self.discovery_frame()

    def split(self, holdout_fraction: float, order: RowOrder) -> tuple[int, int]:
        n = len(self._frame)
        self.n_holdout = holdout_size(n, holdout_fraction)
        self._by_rank = np.argsort(order.ranks(np.arange(n, dtype=np.int64)), kind="stable")
        return n - self.n_holdout, self.n_holdout

    def discovery_frame(self) -> pd.DataFrame:
        return self._rows(self._train_positions(SAMPLE_ROWS))

    def discovery_spellings(self) -> pd.DataFrame | None:
        # given even when no column writes a token: whether discovery counts the tokens must
        # not depend on the data (one '?' would otherwise decide it)
        positions = self._train_positions(SAMPLE_ROWS)
        return self._spellings.iloc[positions].reset_index(drop=True)

    def encode(self, domain: Domain) -> Parts:
        holdout = np.sort(self._ranked()[: self.n_holdout])
        in_holdout = np.zeros(len(self._frame), dtype=bool)
        in_holdout[holdout] = True
        train, report = Table.from_frame(self._rows(np.flatnonzero(~in_holdout)), domain)
        held = Table.from_frame(self._rows(holdout), domain)[0] if holdout.size else None
        sample = self._train_positions(EVALUATION_ROWS)
        train_sample = train if sample.size == len(train) else self._encode(sample, domain)
        held_rows = np.sort(self._ranked()[: min(self.n_holdout, EVALUATION_ROWS)])
        if held is not None and len(held) > EVALUATION_ROWS:
            held = self._encode(held_rows, domain)
        notes = _sample_notes(len(train), self.n_holdout)
        held_values = self._as_written(held_rows) if held_rows.size else None
        train_values = self._as_written(sample)
        return Parts(train, train_sample, held, report, train_values, held_values, notes)

    def describe(self) -> dict[str, object]:
        return {"name": self.engine_name}

    def close(self) -> None:
        return None

    def _ranked(self) -> np.ndarray:
        if self._by_rank is None:
            raise InputError("split the input before choosing rows by rank")
        return self._by_rank

    def _train_positions(self, at_most: int) -> np.ndarray:
        ranked = self._ranked()
        return np.sort(ranked[self.n_holdout : self.n_holdout + at_most])

    def _rows(self, positions: np.ndarray) -> pd.DataFrame:
        return self._frame.iloc[positions].reset_index(drop=True)

    def _as_written(self, positions: np.ndarray) -> pd.DataFrame:
        """Rows with each missing value spelled as the file spells it (what the scorer reads)."""
        rows = self._rows(positions)
        for name in self._spellings.columns:
            rows[name] = rows[name].fillna(
                self._spellings[name].iloc[positions].reset_index(drop=True)
            )
        return rows

    def _encode(self, positions: np.ndarray, domain: Domain) -> Table:
        return Table.from_frame(self._rows(positions), domain)[0]


class EngineInput(ClosesOnExit):
    """A file DuckDB or Spark reads where it lies; only counts and bounded samples reach Python."""

    def __init__(
        self,
        engine: DuckDBEngine | SparkEngine,
        source: EngineSource,
        name: str,
        identity: Identity,
        settings: dict[str, object],
    ) -> None:
        self.engine = engine
        self.engine_name = engine.name
        self.source = source
        self.name = name
        self.identity = identity
        self._settings = settings
        self._order: RowOrder | None = None
        self.n_holdout = 0
        self._discovery: tuple[pd.DataFrame, pd.DataFrame] | None = None
        self._thresholds: dict[int, int] = {}

    @classmethod
    def open_duckdb(
        cls, path: Path, layout: Layout, dataset_name: str | None, memory_limit: str
    ) -> EngineInput:
        """``path`` read by DuckDB under ``memory_limit``."""
        engine = DuckDBEngine(memory_limit=memory_limit)
        try:
            source = engine.open(path, **layout.options())
            identity = Identity.of_file(path, layout.header)
        except BaseException:
            engine.close()
            raise
        settings: dict[str, object] = {"memory_limit": memory_limit}
        return cls(engine, source, dataset_name or path.name, identity, settings)

    @classmethod
    def open_spark(
        cls,
        location: str | Path,
        layout: Layout,
        dataset_name: str | None,
        master: str | None,
    ) -> EngineInput:
        """``location`` (a path or a URI) read by Spark at ``master``."""
        from safeshare.engine.spark_engine import SparkEngine

        engine = SparkEngine(master)
        try:
            source = engine.open(location, **layout.options())
            remote = isinstance(location, str) and "://" in location
            identity = (
                Identity(_content_fingerprint(engine, source))
                if remote
                else Identity.of_file(Path(location), layout.header)
            )
        except BaseException:
            engine.close()
            raise
        settings: dict[str, object] = {"master": engine.spark.sparkContext.master}
        name = dataset_name or str(location).rstrip("/").rsplit("/", 1)[-1]
        return cls(engine, source, name, identity, settings)

    @property
    def fingerprint(self) -> str:
        return self.identity.records

    def __len__(self) -> int:
        return len(self.source)

    def checked_frame(self) -> pd.DataFrame:
        if len(self.source) <= SAMPLE_ROWS:
            return self.source.frame()
        return self.discovery_frame()

    def split(self, holdout_fraction: float, order: RowOrder) -> tuple[int, int]:
        n = len(self.source)
        self.n_holdout = h = holdout_size(n, holdout_fraction)
        self._order = order
        wanted = [h, h + SAMPLE_ROWS, h + EVALUATION_ROWS, min(h, EVALUATION_ROWS)]
        self._thresholds = dict(zip(wanted, order.thresholds(n, wanted), strict=True))
        return n - h, h

    def discovery_spellings(self) -> pd.DataFrame | None:
        # as the numpy engine gives them, so that discovery counts (and draws noise for) the
        # same cells whichever engine reads the file
        return self._discovery_rows()[1]

    def discovery_frame(self) -> pd.DataFrame:
        return self._discovery_rows()[0]

    def _discovery_rows(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The discovery sample (missing tokens as NA) and its missing values' spellings, from
        one read of the rows as the file writes them."""
        if self._discovery is None:
            written = self.source.frame(self._train_sample(SAMPLE_ROWS), as_written=True)
            self._discovery = split_missing(written, self.source.missing_values)
        return self._discovery

    def encode(self, domain: Domain) -> Parts:
        encoded = self.source.encode(domain, self._rank_at_most(self.n_holdout))
        train_sample = encoded.train.where(
            self._train_sample(EVALUATION_ROWS), min(len(encoded.train), EVALUATION_ROWS)
        ).fetch()
        held = None
        if self.n_holdout:
            held = encoded.holdout.where(
                self._rank_at_most(min(self.n_holdout, EVALUATION_ROWS)),
                min(self.n_holdout, EVALUATION_ROWS),
            ).fetch()
        notes = _sample_notes(len(encoded.train), self.n_holdout)
        train_values = self.source.frame(self._train_sample(EVALUATION_ROWS))
        held_values = None
        if self.n_holdout:
            held_values = self.source.frame(
                self._rank_at_most(min(self.n_holdout, EVALUATION_ROWS))
            )
        return Parts(
            encoded.train, train_sample, held, encoded.report, train_values, held_values, notes
        )

    def describe(self) -> dict[str, object]:
        return {"name": self.engine_name, **self._settings}

    def close(self) -> None:
        self.engine.close()

    def _rank(self) -> str:
        return self._order_or_fail().sql("__row")

    def _rank_at_most(self, count: int) -> str:
        """Rows among the ``count`` of smallest rank."""
        if count <= 0:
            return "FALSE"
        return f"{self._rank()} <= {self._threshold(count)}"

    def _train_sample(self, at_most: int) -> str:
        """Train rows among the ``at_most`` of smallest rank after the holdout."""
        low, high = self._threshold(self.n_holdout), self._threshold(self.n_holdout + at_most)
        return f"{self._rank()} > {low} AND {self._rank()} <= {high}"

    def _threshold(self, count: int) -> int:
        if count not in self._thresholds:
            order = self._order_or_fail()
            self._thresholds[count] = order.thresholds(len(self.source), [count])[0]
        return self._thresholds[count]

    def _order_or_fail(self) -> RowOrder:
        if self._order is None:
            raise InputError("split the input before choosing rows by rank")
        return self._order


def _sample_notes(n_train: int, n_holdout: int) -> list[str]:
    notes = []
    if n_train > SAMPLE_ROWS:
        notes.append(
            f"column kinds and DP domain discovery read a uniform sample of {SAMPLE_ROWS:,} of the "
            f"{n_train:,} training records"
        )
    if max(n_train, n_holdout) > EVALUATION_ROWS:
        notes.append(
            f"utility and risk were evaluated on uniform samples of at most {EVALUATION_ROWS:,} "
            "records of the training split, the holdout and the release"
        )
    return notes


def _content_fingerprint(engine: SparkEngine, source: SparkSource) -> str:
    """The ledger identity of a table Spark reads remotely: a hash of its rows, in any order."""
    columns = ", ".join(r.ident for r in source.raw)
    rows = f"CAST(xxhash64({columns}) AS DECIMAL(38, 0))"
    result = engine.collect(
        f"SELECT count(*) AS n, sum({rows}) AS total, bit_xor(xxhash64({columns})) AS mix "
        f"FROM {source.view}",
        "fingerprinting the input",
    ).to_pylist()[0]
    digest = hashlib.sha256(f"{result['n']}:{result['total']}:{result['mix']}".encode())
    return "rows:" + digest.hexdigest()


def _input_bytes(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())
    return path.stat().st_size if path.exists() else 0


def _has_duckdb() -> bool:
    import importlib.util

    return importlib.util.find_spec("duckdb") is not None
