"""Files as Spark reads them where they lie: locations, CSV and Parquet readers, row positions.

A location is a local path or a URI that Hadoop reads (``hdfs://``, ``s3a://``,
``file://``...): on a cluster, give a URI (or a path mounted alike on every node).

Row positions (``__row``, the file order, contiguous from 0) are computed without
funnelling rows through one task.  Each row carries its file, the start of the split
that read it and an id that grows along the split (Spark's
``monotonically_increasing_id``; for Parquet, the row's index in its file).  One
aggregation brings back, per split, its row count and first id; the driver orders
the splits by file (in name order) and offset and turns them into one shift per
split, added to the id (inline for a few splits, else by a broadcast join):
``__row = id + shift``.  The splits'
sizes are pinned for an engine's lifetime (see ``SparkEngine``), and encoding checks
that every row found its split.
"""

from __future__ import annotations

import csv
import io
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path, PurePosixPath
from typing import Any
from urllib.parse import unquote, urlparse

import numpy as np

from safeshare.data.readers import sniff_csv
from safeshare.data.row_order import MAX_ROWS
from safeshare.engine.spark_engine import SparkEngine
from safeshare.engine.spark_session import pyspark_module
from safeshare.engine.sql_codec import SPARK, RawColumn
from safeshare.errors import InputError

PARQUET_SUFFIXES = (".parquet", ".pq")
CORRUPT = "__bad_record"  # Spark's column for CSV records it could not split into fields
CSV_HINT = "check that every row has the same number of fields and that quotes are closed"
PARQUET_HINT = "check that it is a Parquet file and that Spark can read it"
HEAD_BYTES = 64 * 1024  # what sniff_csv reads
SCAN_HERE_BYTES = 32 << 20  # smaller local CSV files are checked for quoted line breaks here
INLINE_SPLITS = 64  # files read in at most this many splits get their row shifts inline


class Location:
    """A file or folder: a local path, or a URI read through Hadoop's file systems."""

    def __init__(self, engine: SparkEngine, given: str | Path) -> None:
        self.engine = engine
        self.text = str(given)
        self.local: Path | None = None
        self._fs: Any = None  # Hadoop's FileSystem and Path, for a URI
        self._path: Any = None
        if isinstance(given, Path) or "://" not in self.text:
            self.local = Path(given)
            return
        spark = engine.spark
        self._path = self._hadoop(lambda: spark._jvm.org.apache.hadoop.fs.Path(self.text))
        conf = self._hadoop(spark._jsc.hadoopConfiguration)
        self._fs = self._hadoop(lambda: self._path.getFileSystem(conf))

    def _hadoop(self, call: Callable[[], Any]) -> Any:
        """A call into Hadoop's file system; its failures name the location, not a trace."""
        return self.engine.run(
            "reaching the file system",
            call,
            reading=self.text,
            hint="check the URI, its scheme and the cluster's Hadoop configuration",
        )

    def __str__(self) -> str:
        return self.text

    def exists(self) -> bool:
        if self.local is not None:
            return self.local.exists()
        return bool(self._hadoop(lambda: self._fs.exists(self._path)))

    def is_dir(self) -> bool:
        if self.local is not None:
            return self.local.is_dir()
        return bool(self._hadoop(lambda: self._fs.getFileStatus(self._path).isDirectory()))

    def size(self) -> int:
        if self.local is not None:
            return self.local.stat().st_size
        return int(self._hadoop(lambda: self._fs.getFileStatus(self._path).getLen()))

    def head(self) -> bytes:
        """The first bytes of a file (what decides its delimiter and header)."""
        if self.local is not None:
            with self.local.open("rb") as handle:
                return handle.read(HEAD_BYTES)

        def read() -> bytes:
            stream = self._fs.open(self._path)
            try:
                return bytes(stream.readNBytes(HEAD_BYTES))
            finally:
                stream.close()

        return bytes(self._hadoop(read))

    def files(self) -> list[str]:
        """Every file below a folder, in name order (compared part by part, as paths sort)."""
        if self.local is not None:
            return [str(p) for p in sorted(p for p in self.local.rglob("*") if p.is_file())]

        def listing() -> list[str]:
            found = []
            files = self._fs.listFiles(self._path, True)
            while files.hasNext():
                found.append(str(files.next().getPath().toString()))
            return found

        found = self._hadoop(listing)
        return sorted(found, key=lambda uri: PurePosixPath(unquote(urlparse(uri).path)))

    def key(self, file: str) -> str:
        """A file's identity, comparable between this listing and Spark's ``_metadata.file_path``."""
        path = unquote(urlparse(file).path) if "://" in file or file.startswith("file:") else file
        if self.local is not None:
            return str(Path(path).resolve())
        return os.path.normpath(path)


def parquet_files(location: Location) -> list[str]:
    """The Parquet files of a location (itself, or a folder's, in name order); empty for text."""
    if location.is_dir():
        files = [f for f in location.files() if f.lower().endswith(PARQUET_SUFFIXES)]
        if not files:
            raise InputError(
                f"folder {location.text!r} holds no .parquet files; give a file or a folder of them"
            )
        return files
    return [location.text] if location.text.lower().endswith(PARQUET_SUFFIXES) else []


def read_parquet(engine: SparkEngine, files: list[str], where: str) -> Any:
    """Parquet files as one DataFrame, refusing files whose schemas differ (naming them)."""
    first: list[tuple[str, str]] | None = None
    differ: list[str] = []
    for file in files:
        schema = engine.run(
            "reading a Parquet schema",
            _schema_of(engine, file),
            reading=file,
            hint=PARQUET_HINT,
        )
        columns = [(str(f.name), str(f.dataType.simpleString())) for f in schema.fields]
        if first is None:
            first = columns
        elif columns != first:
            differ.append(PurePosixPath(file).name)
    if differ:
        shown = ", ".join(differ[:5]) + (f" and {len(differ) - 5} more" if len(differ) > 5 else "")
        head = PurePosixPath(files[0])
        raise InputError(
            f"the Parquet files of {str(head.parent)!r} do not share one schema: {shown} "
            f"differ from {head.name} in column names or types; rewrite them with one schema"
        )
    return engine.run(
        "opening the Parquet files",
        lambda: engine.spark.read.parquet(*files),
        reading=where,
        hint=PARQUET_HINT,
    )


def _schema_of(engine: SparkEngine, file: str) -> Callable[[], Any]:
    return lambda: engine.spark.read.parquet(file).schema


def sniff(location: Location, header: bool | None = None) -> tuple[str, bool, list[str]]:
    """A CSV file's delimiter, whether a header leads it (``header``, else as ``read_frame``
    decides) and its first record."""
    head = location.head()
    if location.local is not None:
        delimiter, header = sniff_csv(location.local, header)
    else:  # sniff_csv reads a local file: give it the same first bytes
        with tempfile.TemporaryDirectory(prefix="safeshare-sniff-") as folder:
            copy = Path(folder) / "head.csv"
            copy.write_bytes(head)
            delimiter, header = sniff_csv(copy, header)
    text = head.decode("utf-8-sig", errors="replace")
    first = next(csv.reader(io.StringIO(text), delimiter=delimiter, skipinitialspace=True), [])
    return delimiter, header, first


def has_quoted_line_breaks(engine: SparkEngine, location: Location) -> bool:
    """Whether a quoted field spans lines: a line opening one holds an odd number of quotes.

    Small local files are scanned here; others by a Spark job over their lines.
    """
    if location.local is not None and location.size() <= SCAN_HERE_BYTES:
        with location.local.open("rb") as handle:
            return any(line.count(b'"') % 2 for line in handle)
    sf = pyspark_module("pyspark.sql.functions")

    def work() -> bool:
        lines = engine.spark.read.text(location.text)
        quotes = sf.length("value") - sf.length(sf.regexp_replace("value", '"', ""))
        return bool(lines.select(sf.count_if(quotes % 2 == 1)).first()[0])

    return engine.run("looking for quoted line breaks", work, reading=location.text, hint=CSV_HINT)


def read_csv(
    engine: SparkEngine, location: Location, delimiter: str, header: bool, width: int
) -> Any:
    """A CSV file as text columns ``_c0..``; records Spark cannot split land in ``CORRUPT``.

    A file with quoted line breaks is read whole by one task; any other in parallel splits.
    """
    whole = has_quoted_line_breaks(engine, location)
    types = pyspark_module("pyspark.sql.types")
    text = types.StringType()
    schema = types.StructType(
        [types.StructField(f"_c{i}", text) for i in range(width)]
        + [types.StructField(CORRUPT, text)]
    )
    options = {
        "sep": delimiter,
        "header": header,
        "quote": '"',
        "escape": '"',
        "encoding": "UTF-8",
        "mode": "PERMISSIVE",
        "columnNameOfCorruptRecord": CORRUPT,
        "multiLine": whole,
        "ignoreLeadingWhiteSpace": True,
        "ignoreTrailingWhiteSpace": False,
        "enforceSchema": True,
    }
    return engine.run(
        "opening the CSV file",
        lambda: engine.spark.read.csv(location.text, schema=schema, **options),
        reading=location.text,
        hint=CSV_HINT,
    )


def number_rows(
    engine: SparkEngine,
    frame: Any,
    found: Sequence[str],
    raw: tuple[RawColumn, ...],
    location: Location,
    files: list[str],
) -> tuple[str, int, int]:
    """A view of the file with ``__row`` (its file order) and ``raw``'s names; rows and splits."""
    sf = pyspark_module("pyspark.sql.functions")
    where, text = location.text, not files
    hint = CSV_HINT if text else PARQUET_HINT
    position = "monotonically_increasing_id()" if text else "_metadata.row_index"
    block = "_metadata.file_block_start" if text else "CAST(0 AS BIGINT)"
    columns = [sf.col(SPARK.ident(n)).alias(r.name) for n, r in zip(found, raw, strict=True)]
    scan = engine.run(
        "numbering rows",
        lambda: frame.select(
            sf.expr(position).alias("__id"),
            sf.col("_metadata.file_path").alias("__file"),
            sf.expr(block).alias("__block"),
            *columns,
            *([sf.col(CORRUPT)] if text else []),
        ),
        reading=where,
        hint=hint,
    )
    scanned = engine.register(scan, "scan")
    # naming every column makes Spark split every field, so malformed records show
    every = ", ".join(r.ident for r in raw)
    checks = (
        f", count_if({CORRUPT} IS NOT NULL) AS bad, "
        f"min(CASE WHEN {CORRUPT} IS NOT NULL THEN __id END) AS first_bad, "
        f"count_if(coalesce({every}) IS NULL) AS blank"
        if text
        else ""
    )
    splits = engine.collect(
        f"SELECT __file, __block, count(*) AS n, min(__id) AS first{checks} "
        f"FROM {scanned} GROUP BY __file, __block",
        "numbering rows",
        reading=where,
        hint=hint,
    ).to_pylist()
    order = {location.key(f): i for i, f in enumerate(files or [where])}
    for split in splits:
        key = location.key(split["__file"])
        if key not in order:
            raise InputError(f"Spark read {split['__file']!r}, which is not a file of {where!r}")
        split["order"] = (order[key], int(split["__block"]))
    splits.sort(key=lambda s: s["order"])
    sizes = np.array([int(s["n"]) for s in splits], dtype=np.int64)
    offsets = np.cumsum(sizes) - sizes
    shifts = [
        (s["__file"], int(s["__block"]), int(o) - int(s["first"]))
        for s, o in zip(splits, offsets, strict=True)
    ]
    n_rows = int(sizes.sum())
    bad = [(s, sh) for s, (_, _, sh) in zip(splits, shifts, strict=True) if s.get("bad")]
    if bad:
        first_bad = min(int(s["first_bad"]) + shift for s, shift in bad)
        raise InputError(
            f"{where!r} could not be read as a table: {sum(int(s['bad']) for s, _ in bad)} "
            f"record(s) do not split into {len(raw)} fields, the first at data row "
            f"{first_bad + 1}; {CSV_HINT}"
        )
    if n_rows == 0:
        raise InputError(f"{where!r} has a header but no rows; give at least one record")
    if n_rows > MAX_ROWS:
        raise InputError(f"{where!r} has {n_rows:,} rows; safeshare handles up to {MAX_ROWS:,}")
    names = ", ".join(r.ident for r in raw)
    if len(shifts) <= INLINE_SPLITS:  # a few splits: their shifts inline, no join
        cases = " ".join(
            f"WHEN __file = {SPARK.text(file)} AND __block = {block} THEN {shift}"
            for file, block, shift in shifts
        )
        statement = f"SELECT __id + CASE {cases} END AS __row, {names} FROM {scanned}"
    else:  # many: a broadcast join with the table of shifts
        import pyarrow as pa

        table = pa.table(
            {
                "__split_file": pa.array([f for f, _, _ in shifts], pa.string()),
                "__split_block": pa.array([b for _, b, _ in shifts], pa.int64()),
                "__shift": pa.array([sh for _, _, sh in shifts], pa.int64()),
            }
        )  # from Arrow: executors need no Python to read it
        lookup = engine.run("numbering rows", lambda: engine.spark.createDataFrame(table))
        split_view = engine.register(lookup, "splits", cache=True)
        statement = (
            f"SELECT /*+ BROADCAST(s) */ __id + __shift AS __row, {names} FROM {scanned} "
            f"LEFT JOIN {split_view} AS s ON __file = __split_file AND __block = __split_block"
        )
    numbered = engine.sql(statement, "numbering rows", reading=where, hint=hint)
    return engine.register(numbered, "rows"), n_rows, len(splits)
