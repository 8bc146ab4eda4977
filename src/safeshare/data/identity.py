"""A dataset's identity in the privacy ledger: its records, in any order.

The ledger charges a dataset by the records in it, not by how its file is written: the same
records re-saved with another row or column order, delimiter, quoting, line endings, header
names, number spelling (``40`` / ``40.0``) or missing-value spelling (``?`` / empty / ``NA``) get
the same identity, so re-saving a file does not buy it a fresh budget.  Each value is hashed as
a number where it reads as one, else as its trimmed text; a record is its values' hashes summed
and mixed (so neither the column order nor the names count); the dataset is the multiset of its
records (their count, sum and xor).  What still gets an identity of its own: a subset of the
records or an edit of them (another dataset, as far as the ledger can tell), and a change in
how dates or texts are spelled.

>>> a = pd.DataFrame({"age": ["39", "50"], "sex": ["M", "F"]})
>>> b = pd.DataFrame({"gender": ["F", "M"], "age": ["50.0", " 39"]})
>>> records_identity(a) == records_identity(b)
True
>>> records_identity(a) == records_identity(a.iloc[:1])
False
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from pandas.util import hash_array

from safeshare.data.readers import (
    CSV_OPTIONS,
    MISSING_TOKENS,
    fingerprint_file,
    fingerprint_frame,
    sniff_csv,
)
from safeshare.errors import InputError

PARQUET_SUFFIXES = (".parquet", ".pq")
_CHUNK_ROWS = 1 << 17
_MISSING = np.uint64(0x6D697373696E6721)  # one hash for every spelling of a missing value
_TEXT = np.uint64(0x7465787476616C75)  # keeps a text's hash apart from a number's
_SECOND = np.uint64(0x9E3779B97F4A7C15)
_MODULUS = 1 << 64


@dataclass(frozen=True)
class Identity:
    """How the ledger knows a dataset: by its ``records`` (:func:`records_identity`).

    ``sha256`` is the SHA-256 of the file's bytes (of a frame's values, in order): an exact
    check that a file is the one a model was trained on, and what the ledger knew the data by
    before, carried over to ``records`` on first use (:meth:`Ledger.carry_over
    <safeshare.dp.ledger.Ledger.carry_over>`).
    """

    records: str
    sha256: str = ""

    @classmethod
    def of_file(cls, path: str | Path, header: bool | None = None) -> Identity:
        """A CSV or Parquet file's identity, or a folder of Parquet files' (``header``: whether a
        CSV's first row is a header, None to detect it as :func:`~safeshare.data.readers.read_frame`
        does)."""
        return cls(file_identity(path, header), bytes_identity(Path(path)))

    @classmethod
    def of_frame(cls, frame: pd.DataFrame) -> Identity:
        """The identity of a table given in memory."""
        return cls(records_identity(frame), fingerprint_frame(frame))

    @property
    def formerly(self) -> tuple[str, ...]:
        """The keys the ledger may hold this dataset's spends under from before."""
        return (self.sha256,) if self.sha256 and self.sha256 != self.records else ()

    def card(self) -> dict[str, str]:
        """The card's record of the input: its bytes' SHA-256 and its ledger identity."""
        return {"sha256": self.sha256 or self.records, "records": self.records}


class RecordsDigest:
    """The identity of the records fed to :meth:`update`, in any order and in any chunks."""

    def __init__(self) -> None:
        self.count = 0
        self._sum = 0
        self._second_sum = 0
        self._xor = 0

    def update(self, frame: pd.DataFrame) -> None:
        """Add ``frame``'s records (its column names are not read)."""
        if len(frame) == 0:
            return
        summed = np.zeros(len(frame), dtype=np.uint64)
        for position in range(frame.shape[1]):
            summed += _cell_hashes(frame.iloc[:, position])
        records = _mix(summed)
        self.count += len(frame)
        self._sum = (self._sum + int(records.sum(dtype=np.uint64))) % _MODULUS
        self._second_sum = (
            self._second_sum + int(_mix(records ^ _SECOND).sum(dtype=np.uint64))
        ) % _MODULUS
        self._xor ^= int(np.bitwise_xor.reduce(records))

    def hexdigest(self) -> str:
        """A SHA-256 of the records' count, sums and xor."""
        summary = f"records:{self.count}:{self._sum}:{self._second_sum}:{self._xor}"
        return hashlib.sha256(summary.encode()).hexdigest()


def records_identity(frame: pd.DataFrame) -> str:
    """The identity of a table given in memory."""
    digest = RecordsDigest()
    digest.update(frame)
    return digest.hexdigest()


def file_identity(path: str | Path, header: bool | None = None) -> str:
    """The identity of a CSV or Parquet file, or of a folder of Parquet files, read in chunks
    (a file larger than memory is read as it streams by)."""
    digest = RecordsDigest()
    for chunk in _chunks(Path(path), header):
        digest.update(chunk)
    return digest.hexdigest()


def bytes_identity(path: Path) -> str:
    """What the ledger knew a file by before: the SHA-256 of its bytes (of a folder of Parquet
    files: their names and bytes, in order)."""
    if not path.is_dir():
        return fingerprint_file(path)
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.suffix.lower() in PARQUET_SUFFIXES):
        digest.update(str(file.relative_to(path)).encode() + b"\x00")
        digest.update(bytes.fromhex(fingerprint_file(file)))
    return digest.hexdigest()


def _chunks(path: Path, header: bool | None) -> Iterator[pd.DataFrame]:
    if path.is_dir():
        files = sorted(p for p in path.rglob("*") if p.suffix.lower() in PARQUET_SUFFIXES)
        if not files:
            raise InputError(f"{str(path)!r} is a folder without Parquet files")
        for file in files:
            yield from _parquet_chunks(file)
    elif path.suffix.lower() in PARQUET_SUFFIXES:
        yield from _parquet_chunks(path)
    else:
        delimiter, has_header = sniff_csv(path, header)
        yield from pd.read_csv(
            path,
            sep=delimiter,
            header=0 if has_header else None,
            encoding="utf-8-sig",
            chunksize=_CHUNK_ROWS,
            **CSV_OPTIONS,
        )


def _parquet_chunks(path: Path) -> Iterator[pd.DataFrame]:
    import pyarrow.parquet as pq

    for batch in pq.ParquetFile(path).iter_batches(batch_size=_CHUNK_ROWS):
        yield batch.to_pandas()


def _cell_hashes(values: pd.Series) -> np.ndarray:
    """One hash per value: by its number where it reads as one, else by its trimmed text."""
    if pd.api.types.is_numeric_dtype(values.dtype) and not pd.api.types.is_bool_dtype(values):
        numbers = values.to_numpy(dtype=float, na_value=np.nan)
        missing = np.isnan(numbers)
        return np.where(missing, _MISSING, hash_array(np.where(missing, 0.0, numbers) + 0.0))
    text = _as_text(values)
    missing = (text.isna() | text.isin(MISSING_TOKENS)).to_numpy()
    numbers = pd.to_numeric(text.mask(missing), errors="coerce").to_numpy(
        dtype=float, na_value=np.nan
    )
    number = np.isfinite(numbers)
    hashes = hash_array(np.where(number, numbers, 0.0) + 0.0)
    if not number.all():
        words = text.fillna("").to_numpy(dtype=object)
        hashes = np.where(number, hashes, hash_array(words, categorize=False) ^ _TEXT)
    return np.where(missing, _MISSING, hashes)


def _as_text(values: pd.Series) -> pd.Series:
    if pd.api.types.is_datetime64_any_dtype(values.dtype):  # as a CSV writes it
        written = values.dt.strftime("%Y-%m-%d %H:%M:%S").str.removesuffix(" 00:00:00")
        return written.astype("string")
    return values.astype("string").str.strip()


def _mix(values: np.ndarray) -> np.ndarray:
    """SplitMix64's finalizer, elementwise: a record's hash from the sum of its values'."""
    mixed = values ^ (values >> np.uint64(30))
    mixed = mixed * np.uint64(0xBF58476D1CE4E5B9)
    mixed = mixed ^ (mixed >> np.uint64(27))
    mixed = mixed * np.uint64(0x94D049BB133111EB)
    return mixed ^ (mixed >> np.uint64(31))
