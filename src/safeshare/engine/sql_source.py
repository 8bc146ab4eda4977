"""What DuckDB's and Spark's file sources share: a file read where it lies, as a view.

A source is the engine, the file, the view that numbers its rows (``__row``), the raw
columns as the engine typed them, the row count and the tokens read as missing;
:class:`Encoded` is what encoding it under a domain gives back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, TypeVar

from safeshare.data.codec import EncodeReport
from safeshare.engine.sql_codec import RawColumn

E = TypeVar("E")
T = TypeVar("T")


@dataclass(frozen=True)
class Encoded(Generic[T]):
    """A source's codes: the train and holdout parts, and what encoding folded or clipped."""

    train: T
    holdout: T
    report: EncodeReport


class SqlSource(Generic[E]):
    """A raw file as an engine's view with row positions (see the engines' sources)."""

    def __init__(
        self,
        engine: E,
        path: str | Path,
        view: str,
        raw: tuple[RawColumn, ...],
        n_rows: int,
        missing_values: Sequence[str],
        text_file: bool,
    ) -> None:
        self.engine = engine
        self.path = path
        self.view = view
        self.raw = raw
        self._n_rows = n_rows
        self.missing_values = tuple(missing_values)
        self.text_file = text_file

    def __len__(self) -> int:
        return self._n_rows

    def __repr__(self) -> str:
        name, columns = type(self).__name__, list(self.names)
        return f"{name}({str(self.path)!r}, {self._n_rows} rows, columns={columns})"

    @property
    def names(self) -> tuple[str, ...]:
        """The columns' names, in the file's order."""
        return tuple(r.name for r in self.raw)
