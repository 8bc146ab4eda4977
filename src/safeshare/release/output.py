"""Writing a release: everything or nothing.

Files are written into a staging folder beside the target and renamed into place only
when all of them are complete, so a failed run leaves no half-written release; an existing
folder is replaced only when safeshare wrote it (:mod:`safeshare.output_folder`).

>>> import tempfile, pathlib, pandas as pd
>>> out = pathlib.Path(tempfile.mkdtemp()) / "release"
>>> write_release(out, {"data.csv": pd.DataFrame({"a": [1]}), "note.txt": "hi"}, force=False)
>>> sorted(p.name for p in out.iterdir())
['.safeshare-output', 'data.csv', 'note.txt']
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from safeshare.data.domain import Column, Domain, Kind
from safeshare.data.readers import FORMULA_START
from safeshare.data.table import Table
from safeshare.errors import InputError
from safeshare.output_folder import staged_output
from safeshare.report.card import write_card

if TYPE_CHECKING:
    from safeshare.synth.base import Synthesizer

CHUNK_ROWS = 1_000_000  # released records sampled, decoded and written at a time

_NUMBER = r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?"


def neutralize_formulas(frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` with every text cell and column name a spreadsheet would run as a formula
    prefixed with ``'`` (OWASP's advice for CSV files); numbers such as ``-5`` stay as they are.

    >>> frame = pd.DataFrame({"=A1": ["=HYPERLINK(1)", "-5", "@SUM(A1)", "ok"]})
    >>> neutralize_formulas(frame).to_dict("list")
    {"'=A1": ["'=HYPERLINK(1)", '-5', "'@SUM(A1)", 'ok']}
    """
    texts = [c for c in frame.columns if not pd.api.types.is_numeric_dtype(frame[c])]
    masks = {c: _formulas(frame[c]) for c in texts}
    names = _formulas(pd.Series([str(c) for c in frame.columns], dtype=object))
    if not names.any() and not any(m.any() for m in masks.values()):
        return frame
    out = frame.copy()
    for column, mask in masks.items():
        if mask.any():
            out[column] = _neutralized(out[column], mask)
    out.columns = [f"'{c}" if bad else c for c, bad in zip(frame.columns, names, strict=True)]
    return out


def write_csv(
    frame: pd.DataFrame, target: Path | Any, *, header: bool = True, delimiter: str = ","
) -> None:
    """Write ``frame`` as CSV to a path or an open text stream, formulas neutralized."""
    neutralize_formulas(frame).to_csv(target, header=header, index=False, sep=delimiter)


def _neutralized(values: pd.Series, formulas: pd.Series) -> pd.Series:
    """``values`` with the cells ``formulas`` marks prefixed with ``'`` (a categorical column,
    such as generalized labels ``-30--21``, by renaming its categories)."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        categories = values.cat.categories
        marked = _formulas(pd.Series(categories, dtype=object)).to_numpy()
        renamed = [f"'{c}" if bad else c for c, bad in zip(categories, marked, strict=True)]
        if len(set(renamed)) == len(renamed):
            return values.cat.rename_categories(renamed)
        values = values.astype(object)  # (a renamed category would meet another)
    return values.where(~formulas, "'" + values.astype(str))


def _formulas(values: pd.Series) -> pd.Series:
    text = values.where(values.map(lambda v: isinstance(v, str)), "")
    starts = text.str.startswith(FORMULA_START)
    return (starts & ~text.str.fullmatch(_NUMBER)).fillna(False).astype(bool)


def write_release(
    out: Path,
    files: Mapping[str, pd.DataFrame | dict[str, Any] | str | Path],
    force: bool,
    inputs: Iterable[object] = (),
) -> None:
    """Write ``files`` atomically (see :mod:`safeshare.output_folder`): CSV for frames, the
    privacy card for dicts, a finished file moved in for paths, text otherwise."""
    with staged_output(out, force=force, inputs=inputs) as staging:
        for name, content in files.items():
            if isinstance(content, Path):
                shutil.move(content, staging / name)
            elif isinstance(content, pd.DataFrame):
                write_csv(content, staging / name)
            elif isinstance(content, dict):
                write_card(content, staging / name)
            else:
                (staging / name).write_text(content, encoding="utf-8")


@dataclass(frozen=True)
class SampledRelease:
    """The released records: the first chunk in memory, and what ``synthetic.csv`` will hold."""

    first: Table
    first_frame: pd.DataFrame
    content: pd.DataFrame | Path
    rows: int  # records released in all

    def discard(self) -> None:
        """Remove a streamed file that was not moved into a release (a failed run)."""
        if isinstance(self.content, Path):
            self.content.unlink(missing_ok=True)


OUTPUT_FORMATS = ("csv", "parquet")


def sample_release(
    synthesizer: Synthesizer,
    rows: int,
    rng: np.random.Generator,
    workdir: Path,
    output_format: str = "csv",
    *,
    orders: Sequence[Sequence[str]] = (),
) -> SampledRelease:
    """Sample and decode ``rows`` records; beyond :data:`CHUNK_ROWS` (or as Parquet) they stream
    to a file, one chunk at a time (``orders``: columns each record keeps in order, see
    :func:`~safeshare.data.codec.decode_table`).

    Each chunk is an independent draw from the fitted model, so a release of any size
    needs memory for one chunk only.
    """
    if output_format not in OUTPUT_FORMATS:
        raise InputError(
            f"unknown output format {output_format!r}; choose one of {list(OUTPUT_FORMATS)}"
        )
    if rows <= CHUNK_ROWS and output_format == "csv":
        table = synthesizer.sample(rows)
        frame = table.decode(rng, orders)
        return SampledRelease(table, frame, frame, rows)
    workdir.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=".synthetic-", suffix=f".{output_format}", dir=workdir)
    os.close(handle)
    path = Path(name)
    try:
        with _ChunkWriter(path, output_format) as writer:
            first = synthesizer.sample(min(CHUNK_ROWS, rows))
            first_frame = first.decode(rng, orders)
            writer.write(first_frame, first.domain)
            for start in range(CHUNK_ROWS, rows, CHUNK_ROWS):
                chunk = synthesizer.sample(min(CHUNK_ROWS, rows - start))
                writer.write(chunk.decode(rng, orders), chunk.domain)
    except BaseException:
        path.unlink(missing_ok=True)
        raise
    return SampledRelease(first, first_frame, path, rows)


class _ChunkWriter:
    """Appends decoded chunks to one CSV or Parquet file (Parquet typed from the Domain)."""

    def __init__(self, path: Path, output_format: str) -> None:
        self._path = path
        self._format = output_format
        self._parquet: Any = None
        self._schema: Any = None
        self._wrote = False

    def __enter__(self) -> _ChunkWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._parquet is not None:
            self._parquet.close()

    def write(self, frame: pd.DataFrame, domain: Domain) -> None:
        if self._format == "csv":
            with self._path.open("a", encoding="utf-8", newline="") as stream:
                write_csv(frame, stream, header=not self._wrote)
            self._wrote = True
            return
        import pyarrow as pa
        import pyarrow.parquet as pq

        if self._schema is None:
            self._schema = pa.schema([(c.name, _arrow_type(c)) for c in domain])
            self._parquet = pq.ParquetWriter(str(self._path), self._schema)
        batch = pa.Table.from_pandas(frame, schema=self._schema, preserve_index=False)
        self._parquet.write_table(batch)


def _arrow_type(column: Column) -> Any:
    """The Parquet type of a decoded column: text for categories and dates, else numbers."""
    import pyarrow as pa

    if column.is_categorical or column.kind is Kind.DATETIME:
        return pa.string()
    return pa.int64() if column.integer else pa.float64()
