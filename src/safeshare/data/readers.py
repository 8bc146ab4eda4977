"""Reading CSV and Parquet files into raw DataFrames.

CSV files are read as text: the delimiter is sniffed (``,`` ``;`` tab ``|``),
quoted fields and a UTF-8 byte-order mark are handled, leading spaces after a
delimiter are skipped, and the usual spellings of a missing value (``?``, empty,
``NA``, ``N/A``, ``NaN``, ``null``, ``None``) become missing.  Nothing is parsed
into numbers here: the Domain decides how each column is read.

>>> import tempfile, pathlib
>>> path = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
>>> _ = path.write_text("\\ufeffage;sex\\n39;M\\n?;F\\n", encoding="utf-8")
>>> frame = read_frame(path)
>>> list(frame.columns), frame["age"].isna().tolist()
(['age', 'sex'], [False, True])
"""

from __future__ import annotations

import csv
import hashlib
import io
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from safeshare.errors import InputError, InputFileNotFoundError

MISSING_TOKENS: tuple[str, ...] = ("", "?", "NA", "N/A", "NaN", "nan", "null", "NULL", "None")
_DELIMITERS = ",;\t|"
_SNIFF_BYTES = 64 * 1024
# how every CSV is parsed: every value as text, missing values decided by MISSING_TOKENS later
CSV_OPTIONS: dict[str, Any] = {
    "dtype": str,
    "keep_default_na": False,
    "skipinitialspace": True,
    "quotechar": '"',
    "engine": "c",
    # (a first row with more fields than the header would otherwise make the first column
    # the index and shift every column by one; such a row is refused instead)
    "index_col": False,
}
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
"""What a spreadsheet reads as the start of a formula in a CSV cell (written after a ``'``)."""
# a column name: a word or a few, no sentence punctuation (what a header of texts holds)
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-]*( [A-Za-z0-9_.\-]+){0,2}")


def read_frame(
    path: str | Path,
    *,
    header: bool | None = None,
    names: Sequence[str] | None = None,
    missing_values: Sequence[str] = MISSING_TOKENS,
) -> pd.DataFrame:
    """Read a CSV/TSV or Parquet file into a DataFrame of text (NA where missing).

    ``header=None`` detects whether the first row is a header (a guess: a headerless file
    whose first record looks like names is read as if they were; say ``header=False``); a file
    without one takes ``names`` (e.g. a schema's column order) or ``column_1``, ``column_2``, ...
    """
    path = Path(path)
    if not path.exists():
        raise InputFileNotFoundError(f"input file {str(path)!r} does not exist; check the path")
    if path.is_dir():
        raise InputError(f"{str(path)!r} is a directory; give a CSV or Parquet file")
    if path.suffix.lower() in (".parquet", ".pq"):
        return _read_parquet(path, missing_values)
    return _read_csv(path, header=header, names=names, missing_values=missing_values)


@dataclass(frozen=True)
class Layout:
    """How a table file is written: whether a header leads it (None: detected), the names its
    columns take without one, and the spellings of a missing value.

    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> _ = path.write_text("Ada,36\\nAlan,41\\n")
    >>> list(Layout(header=False, names=("name", "age")).read(path)["name"])
    ['Ada', 'Alan']
    """

    header: bool | None = None
    names: tuple[str, ...] | None = None
    missing_values: tuple[str, ...] = MISSING_TOKENS

    def read(self, path: str | Path) -> pd.DataFrame:
        """The file at ``path`` as :func:`read_frame` reads it with this layout."""
        return read_frame(
            path, header=self.header, names=self.names, missing_values=self.missing_values
        )

    def options(self) -> dict[str, Any]:
        """The keywords an engine's ``open`` takes."""
        return {"header": self.header, "names": self.names, "missing_values": self.missing_values}


def sniff_csv(path: str | Path, header: bool | None = None) -> tuple[str, bool]:
    """The delimiter of a CSV file and whether a header leads it, decided as :func:`read_frame`
    does (``header``, when given, is the owner's word and is not guessed).

    Only the first 64 KiB are read, so this serves files far larger than memory.
    """
    with Path(path).open("rb") as handle:
        head = handle.read(_SNIFF_BYTES)
    if b"\x00" in head:
        raise InputError(
            f"{str(path)!r} holds binary data, not a CSV; export the table as CSV or Parquet"
        )
    sample = head.decode("utf-8-sig", errors="replace")
    if not sample.strip():
        raise InputError(f"{str(path)!r} is empty; give a table with a header and at least one row")
    try:
        delimiter = _sniff_delimiter(sample)
        return delimiter, _has_header(sample, delimiter) if header is None else header
    except csv.Error as err:  # e.g. a lone carriage return inside an unquoted field
        raise _malformed(path, err) from None


def read_text(path: str | Path, what: str, encoding: str = "utf-8") -> str:
    """A text file's content, or one :class:`InputError` line naming ``what`` it should be
    when it is missing, a folder or not UTF-8 text."""
    path = Path(path)
    if not path.is_file():
        state = "is a folder" if path.is_dir() else "does not exist"
        raise InputFileNotFoundError(f"{what} {str(path)!r} {state}; check the path")
    try:
        return path.read_text(encoding=encoding)
    except UnicodeDecodeError as err:
        raise InputError(
            f"{what} {str(path)!r} is not UTF-8 text (invalid byte at offset {err.start}); "
            "save it as UTF-8"
        ) from None


def fingerprint_file(path: str | Path) -> str:
    """SHA-256 of a file's bytes: the identity of a dataset in the privacy ledger."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fingerprint_frame(frame: pd.DataFrame) -> str:
    """SHA-256 of a DataFrame's column names and values (for data given in memory)."""
    digest = hashlib.sha256()
    digest.update("\x1f".join(map(str, frame.columns)).encode())
    hashed = pd.util.hash_pandas_object(frame.astype("string"), index=False)
    digest.update(hashed.to_numpy().tobytes())
    return digest.hexdigest()


def _read_parquet(path: Path, missing_values: Sequence[str]) -> pd.DataFrame:
    try:
        frame = pd.read_parquet(path)
    except (OSError, ValueError) as err:
        raise InputError(
            f"{str(path)!r} is not a readable Parquet file ({type(err).__name__})"
        ) from None
    _check_not_empty(frame, path)
    for name in frame.columns:
        if frame[name].dtype == object or pd.api.types.is_string_dtype(frame[name].dtype):
            frame[name] = _clean_text(frame[name].astype("string"), missing_values)
    frame.columns = [str(c) for c in frame.columns]
    return frame


def _read_csv(
    path: Path, *, header: bool | None, names: Sequence[str] | None, missing_values: Sequence[str]
) -> pd.DataFrame:
    try:
        return _parse_csv(path, header=header, names=names, missing_values=missing_values)
    except csv.Error as err:  # e.g. a lone carriage return inside an unquoted field
        raise _malformed(path, err) from None


def _malformed(path: str | Path, err: csv.Error) -> InputError:
    return InputError(
        f"{str(path)!r} is not a well-formed table ({err}); quote fields that hold line "
        "breaks, or re-save the file as CSV"
    )


def _parse_csv(
    path: Path,
    *,
    header: bool | None,
    names: Sequence[str] | None,
    missing_values: Sequence[str],
) -> pd.DataFrame:
    text = _read_text(path)
    if not text.strip():
        raise InputError(f"{str(path)!r} is empty; give a table with a header and at least one row")
    dialect_delimiter = _sniff_delimiter(text[:_SNIFF_BYTES])
    if header is None:
        header = _has_header(text[:_SNIFF_BYTES], dialect_delimiter)
    reader = csv.reader(io.StringIO(text), delimiter=dialect_delimiter, skipinitialspace=True)
    first = next((row for row in reader if row), [])
    if header:  # before the parser renames a repeated name ('decile_score.1')
        check_column_names([name.strip() for name in first], str(path))
    _check_field_counts(text, dialect_delimiter, len(first), path)
    try:
        frame = pd.read_csv(
            io.StringIO(text), sep=dialect_delimiter, header=0 if header else None, **CSV_OPTIONS
        )
    except pd.errors.ParserError as err:
        line = _line_of(str(err))
        where = f" at line {line}" if line else ""
        raise InputError(
            f"{str(path)!r} is not a well-formed table{where}: rows have different numbers of "
            f"fields for the delimiter {dialect_delimiter!r}; fix that row or quote its fields"
        ) from None
    if not header:
        if names is not None and len(names) == frame.shape[1]:
            frame.columns = list(names)
        else:
            frame.columns = [f"column_{i + 1}" for i in range(frame.shape[1])]
    frame.columns = [str(c).strip() for c in frame.columns]
    check_column_names([str(c) for c in frame.columns], str(path))
    _check_not_empty(frame, path)
    for name in frame.columns:
        frame[name] = _clean_text(frame[name].astype("string"), missing_values)
    return frame


def _check_field_counts(text: str, delimiter: str, fields: int, path: Path) -> None:
    """Refuse a row with fewer fields than the header (the parser would fill it with missing
    values: a short row, or a row written with another delimiter) or with more (a stray
    delimiter: the parser would drop the extra field or shift the row's values)."""
    rows = csv.reader(io.StringIO(text), delimiter=delimiter, skipinitialspace=True)
    for row in rows:
        if row and len(row) != fields and (len(row) > fields or any(c.strip() for c in row)):
            raise InputError(
                f"{str(path)!r} is not a well-formed table at line {rows.line_num}: "
                f"{len(row)} field(s) where the header has {fields} (for the delimiter "
                f"{delimiter!r}); fix that row, quote its fields, or use one delimiter throughout"
            )


def _read_text(path: Path) -> str:
    raw = path.read_bytes()
    if b"\x00" in raw[:_SNIFF_BYTES]:
        raise InputError(
            f"{str(path)!r} holds binary data, not a CSV; export the table as CSV or Parquet"
        )
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputError(
            f"{str(path)!r} is not UTF-8 text (invalid byte at offset {err.start}); "
            "re-save it as UTF-8"
        ) from None


def _sniff_delimiter(sample: str) -> str:
    lines = sample.splitlines()
    if len(lines) > 1 and not sample.endswith("\n"):
        sample = "\n".join(lines[:-1])  # drop a partial last line
    try:
        return csv.Sniffer().sniff(sample, delimiters=_DELIMITERS).delimiter
    except csv.Error:
        counts = {d: sample.splitlines()[0].count(d) for d in _DELIMITERS} if sample else {}
        best = max(counts, key=lambda d: counts[d], default=",")
        return best if counts.get(best) else ","


def _has_header(sample: str, delimiter: str) -> bool:
    """A header row holds distinct non-numbers where the rows below hold numbers (or missing)."""
    rows = list(csv.reader(io.StringIO(sample), delimiter=delimiter, skipinitialspace=True))[:20]
    if len(rows) < 2:
        return True
    first, rest = rows[0], [r for r in rows[1:] if len(r) == len(rows[0])]
    numeric_below = [
        bool(rest)
        and all(_is_number(r[i]) or r[i].strip() in MISSING_TOKENS for r in rest)
        and any(_is_number(r[i]) for r in rest)
        for i in range(len(first))
    ]
    # a name above a column of numbers is a header, whatever its other names look like
    # (`id,2019,2020`; a repeated name is then refused by check_column_names, not misread)
    if any(below and not _is_number(v) for v, below in zip(first, numeric_below, strict=True)):
        return True
    if any(_is_number(v) for v in first) or len({v.strip() for v in first}) < len(first):
        return False
    if not rest:
        return True
    if len(rest) <= 2 or _sniffer_says_header(sample, delimiter):
        return True
    # The sniffer votes only on columns of one value length; a table of free texts has none,
    # so it abstains (False).  Names there that never reappear below are a header.  Where a
    # column has one value length, the sniffer's vote on lengths said no; it says nothing
    # when a name of that length stands over values of another kind: a few labels that
    # recur (`tag` over `pos, neg, ...`; `x` over `a, a, ...`), values without a letter
    # (`visit_date` over dates), or free text beside (`id` and `text` over `x0` and texts).
    names_apart = all(
        _NAME.fullmatch(v.strip()) is not None and all(r[i].strip() != v.strip() for r in rest)
        for i, v in enumerate(first)
    )
    fixed_length = any(len({len(r[i]) for r in rest}) == 1 for i in range(len(first)))
    return names_apart and (
        not fixed_length or any(_unlike(v, [r[i] for r in rest]) for i, v in enumerate(first))
    )


def _unlike(name: str, below: list[str]) -> bool:
    """Whether ``name`` (a name that never reappears) is of another kind than the values
    ``below`` it: these are a few labels that recur, hold no letter where it has some, or are
    free text (most of several words)."""
    distinct = len({value.strip() for value in below})
    labels = distinct == 1 or distinct * 4 <= len(below)
    unlettered = any(c.isalpha() for c in name) and not any(c.isalpha() for v in below for c in v)
    texts = sum(len(value.split()) > 2 for value in below) * 2 > len(below)
    return labels or unlettered or texts


def _sniffer_says_header(sample: str, delimiter: str) -> bool:
    """The standard library's vote on value types and lengths, on the columns ``delimiter``
    splits (on its own it splits by the dialect it guesses, for texts often a space)."""
    try:
        return _KnownDelimiter(delimiter).has_header(sample)
    except csv.Error:  # it cannot tell the dialect of one column of short texts: no vote
        return False


class _KnownDelimiter(csv.Sniffer):
    """A sniffer whose dialect is the delimiter already found."""

    def __init__(self, delimiter: str) -> None:
        super().__init__()
        self.delimiter = delimiter

    def sniff(self, sample: str, delimiters: str | None = None) -> type[csv.Dialect]:
        class Known(csv.excel):
            delimiter = self.delimiter
            skipinitialspace = True

        return Known


def _is_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def _clean_text(values: pd.Series, missing_values: Sequence[str]) -> pd.Series:
    stripped = values.str.strip()
    return stripped.mask(stripped.isin(list(missing_values)))


def split_missing(
    raw: pd.DataFrame, missing_values: Sequence[str]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A frame read with no missing tokens, split into the frame with NA where a token stood and
    the token that stood there when it is not the empty field (NA elsewhere; only the columns
    where such a token occurs).

    >>> raw = pd.DataFrame({"job": ["nurse", "?", ""], "age": ["31", "", "40"]}, dtype="string")
    >>> frame, spelled = split_missing(raw, ("", "?"))
    >>> frame["job"].isna().tolist(), spelled["job"].tolist()
    ([False, True, True], [<NA>, '?', <NA>])
    >>> list(spelled.columns)
    ['job']
    """
    frame = raw.copy()
    spellings = {}
    tokens = list(missing_values)
    for name in raw.columns:
        values = raw[name]
        if not (values.dtype == object or pd.api.types.is_string_dtype(values.dtype)):
            continue
        missing = values.isin(tokens).fillna(False).to_numpy(dtype=bool)
        frame[name] = values.mask(missing)
        spelled = missing & values.ne("").fillna(False).to_numpy(dtype=bool)
        if spelled.any():
            spellings[name] = values.where(spelled)
    return frame, pd.DataFrame(spellings, index=raw.index)


def shown_columns(columns: Iterable[object]) -> str:
    """The column names for an error message: listed where they all look like names, else
    counted (a first row read as a header that is a record would be quoted).

    >>> shown_columns(["text", "label"])
    "['text', 'label']"
    >>> shown_columns(["ham", "Go until jurong point, crazy.. Available only in bugis"])
    '2 columns, whose header does not look like names (a record? pass --no-header)'
    """
    names = [str(c) for c in columns]
    if all(len(name) <= 40 and len(name.split()) <= 4 for name in names):  # (short, few words)
        return str(names)
    return (
        f"{len(names)} columns, whose header does not look like names (a record? pass --no-header)"
    )


def check_column_names(names: Sequence[str], where: str) -> None:
    """Refuse unnamed and repeated column names (every reader and engine alike)."""
    if any(not n or not n.strip() or n.startswith("Unnamed:") for n in names):
        raise InputError(f"{where!r} has a column without a name; name every column in the header")
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InputError(f"{where!r} has two columns named {name!r}; rename one")
        seen.add(name)


def _check_not_empty(frame: pd.DataFrame, path: Path) -> None:
    if frame.shape[1] == 0:
        raise InputError(f"{str(path)!r} has no columns")
    if frame.shape[0] == 0:
        raise InputError(f"{str(path)!r} has a header but no rows; give at least one record")


def _line_of(message: str) -> int | None:
    words = message.replace(",", " ").split()
    for before, word in itertools.pairwise(words):
        if before == "line" and word.isdigit():
            return int(word)
    return None
