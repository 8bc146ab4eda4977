"""Encoding values into codes inside a SQL engine, exactly as :mod:`safeshare.data.codec` does.

A file larger than memory is never loaded into pandas: each column's codes are a
SQL expression over the raw column, evaluated where the data lives.  The
expressions mirror the in-memory codec rule for rule, so the same file gives the
same codes (and counts) whichever engine reads it:

- text is trimmed, and the reader's missing-value spellings become missing;
- a categorical value maps to its category's code, else (when every category is
  a number) to the category of equal numeric value, else to ``other``;
- a number falls into the bin ``clip(searchsorted(edges, x, 'right') - 1)``, i.e.
  the count of interior edges at or below it; dates count days since 1970-01-01;
- values the domain cannot hold give negative sentinels that a profile query
  counts, so the error names the column and the count (never a value).

The SQL is DuckDB's; a :class:`Dialect` (:data:`SPARK`) respells the few places
where Spark SQL differs (quoting, ``trim`` with a character set, the text and
timestamp types, day numbers, and the number syntax its casts accept beyond
pandas').  A raw column carries its dialect; :func:`code_sql` takes one.

>>> from safeshare.data.domain import Column, Kind
>>> age = Column("age", Kind.NUMERIC, edges=(0, 50, 100), integer=True)
>>> prepared = Prepared.of(age, RawColumn("age", "VARCHAR"), ("", "?"))
>>> print(code_sql(age, "t0", "x0"))  # doctest: +NORMALIZE_WHITESPACE
CASE WHEN x0 IS NULL THEN (CASE WHEN t0 IS NULL THEN 2 ELSE -4 END)
ELSE CAST(x0 >= CAST('50.0' AS DOUBLE) AS INTEGER) END
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from safeshare.data.codec import (
    ColumnEncoding,
    EncodeReport,
    check_present,
    missing_refused,
    not_parsed,
    numeric_lookup,
    other_refused,
)
from safeshare.data.dates import ISO_DATE
from safeshare.data.domain import Column, Domain, Kind
from safeshare.errors import InputError

# sentinel codes for values the domain cannot hold (counted, then refused)
MISSING_REFUSED = -2
OTHER_REFUSED = -3
NOT_PARSED = -4

_WHITESPACE = "' \t\n\r\x0b\x0c'"
_TEXT_TYPES = ("VARCHAR", "STRING")  # DuckDB's, Spark's
_INTEGER_TYPES = (
    *("TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT"),
    "INT",  # Spark's name for INTEGER
)
_UNSIGNED = ("UINTEGER", "UBIGINT", "UHUGEINT")
_FLOAT_TYPES = ("FLOAT", "DOUBLE", "REAL")


@dataclass(frozen=True)
class Dialect:
    """The spellings where SQL engines differ; :data:`DUCKDB` and :data:`SPARK` are the two.

    ``number_guard`` is a regular expression matching (trimmed) text that the
    engine's ``TRY_CAST(... AS DOUBLE)`` accepts but pandas does not parse as a
    number (Spark's Java parser takes ``1.5d``, ``2f`` and hex floats, DuckDB takes
    ``1_000``); such text is not a number.

    >>> SPARK.ident("a`b"), SPARK.text("it's"), DUCKDB.text("it's")
    ('`a``b`', "'it\\\\'s'", "'it''s'")
    """

    name: str
    ident_quote: str = '"'
    backslash_escapes: bool = False
    text_type: str = "VARCHAR"
    timestamp_type: str = "TIMESTAMP"
    trim_template: str = "trim({x}, {chars})"
    days_template: str = "(epoch_us({x}) / 86400000000.0)"
    number_guard: str | None = None
    match_template: str = "{x} RLIKE {pattern}"
    strptime_template: str | None = None  # text in a date layout to a timestamp, else NULL
    java_layouts: bool = False  # the layout in Java's letters (Spark), not strftime codes

    def strptime(self, text: str, date_format: str) -> str | None:
        """``text`` read in the strftime layout ``date_format`` as a timestamp (NULL where it
        does not read), or None where this engine cannot."""
        if self.strptime_template is None:
            return None
        layout = _java_layout(date_format) if self.java_layouts else date_format.replace("%-", "%")
        if layout is None:
            return None
        return self.strptime_template.format(x=text, layout=self.text(layout))

    def ident(self, name: str) -> str:
        """A quoted identifier."""
        q = self.ident_quote
        return q + name.replace(q, q + q) + q

    def text(self, value: str) -> str:
        """A string literal."""
        if self.backslash_escapes:
            return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
        return "'" + value.replace("'", "''") + "'"

    def trim(self, x: str) -> str:
        """``x`` without leading and trailing ASCII whitespace."""
        return self.trim_template.format(x=x, chars=_WHITESPACE)

    def try_double(self, text: str) -> str:
        """``text`` as a DOUBLE where pandas would parse it as a number, else NULL."""
        if self.number_guard is None:
            return f"TRY_CAST({text} AS DOUBLE)"
        guard = self.match_template.format(x=text, pattern=self.text(self.number_guard))
        return f"TRY_CAST(CASE WHEN {guard} THEN NULL ELSE {text} END AS DOUBLE)"

    def days(self, stamp: str) -> str:
        """Days since 1970-01-01 (a DOUBLE) of a timestamp expression."""
        return self.days_template.format(x=stamp)


DUCKDB = Dialect(
    "duckdb",
    number_guard="_",
    match_template="regexp_matches({x}, {pattern})",
    strptime_template="try_strptime({x}, {layout})",
)
SPARK = Dialect(
    "spark",
    ident_quote="`",
    backslash_escapes=True,
    text_type="STRING",
    timestamp_type="TIMESTAMP_NTZ",  # no time zone: day numbers as pandas counts them
    trim_template="trim(BOTH {chars} FROM {x})",
    days_template=(
        "(CAST(timestampdiff(MICROSECOND, TIMESTAMP_NTZ'1970-01-01 00:00:00', {x}) AS DOUBLE)"
        " / 86400000000.0D)"
    ),
    number_guard="[0-9.][dDfF]$|[xX]",
    strptime_template="CAST(try_to_timestamp({x}, {layout}) AS TIMESTAMP_NTZ)",
    java_layouts=True,
)

_JAVA_LETTERS = {"Y": "yyyy", "y": "yy", "m": "M", "d": "d", "H": "H", "M": "m", "S": "s"}


def _java_layout(date_format: str) -> str | None:
    """A strftime layout in the letters of Java's (Spark's) parser, one-letter fields reading
    one or two digits: ``%d/%m/%Y`` is ``d/M/yyyy`` (None for a code it does not translate).

    >>> _java_layout("%Y-%m-%dT%H:%M:%S"), _java_layout("%d %b %Y")
    ("yyyy-M-d'T'H:m:s", None)
    """
    out, i = [], 0
    while i < len(date_format):
        if date_format[i] == "%":
            code = date_format[i + 1 : i + 3].lstrip("-")[:1]
            i += 3 if date_format[i + 1 : i + 2] == "-" else 2
            if code not in _JAVA_LETTERS:
                return None
            out.append(_JAVA_LETTERS[code])
        else:
            char = date_format[i]
            out.append(f"'{char}'" if char.isalpha() else char)
            i += 1
    return "".join(out)


@dataclass(frozen=True)
class RawColumn:
    """A column of the raw file as the engine types it (``VARCHAR`` for CSV text)."""

    name: str
    type: str
    dialect: Dialect = DUCKDB

    @property
    def ident(self) -> str:
        return self.dialect.ident(self.name)

    @property
    def is_text(self) -> bool:
        return self.type.upper() in _TEXT_TYPES

    @property
    def is_float(self) -> bool:
        return self.type.upper() in _FLOAT_TYPES

    @property
    def is_number(self) -> bool:
        upper = self.type.upper()
        return (
            upper in _INTEGER_TYPES
            or upper in _UNSIGNED
            or upper in _FLOAT_TYPES
            or (upper.startswith("DECIMAL"))
        )

    @property
    def is_temporal(self) -> bool:
        upper = self.type.upper()
        return upper == "DATE" or upper.startswith("TIMESTAMP")


def quote_ident(name: str, dialect: Dialect = DUCKDB) -> str:
    """A SQL identifier, quoted."""
    return dialect.ident(name)


def quote_text(value: str, dialect: Dialect = DUCKDB) -> str:
    """A SQL string literal."""
    return dialect.text(value)


def double(value: float) -> str:
    """A DOUBLE literal that round-trips exactly (``repr`` of the float)."""
    return f"CAST({quote_text(repr(float(value)))} AS DOUBLE)"


def text_sql(raw: RawColumn, missing_tokens: Sequence[str]) -> str:
    """The column as trimmed text, NULL where missing (as the readers and ``astype('string')`` give)."""
    x, dialect = raw.ident, raw.dialect
    if raw.is_text:
        tokens = ", ".join(dialect.text(t) for t in missing_tokens) or "NULL"
        trimmed = dialect.trim(x)
        return f"(CASE WHEN {trimmed} IN ({tokens}) THEN NULL ELSE {trimmed} END)"
    if raw.type.upper() == "BOOLEAN":
        return f"(CASE WHEN {x} THEN 'True' WHEN NOT {x} THEN 'False' END)"
    if raw.is_float:
        return f"(CASE WHEN isnan({x}) THEN NULL ELSE CAST({x} AS {dialect.text_type}) END)"
    return f"CAST({x} AS {dialect.text_type})"


def number_sql(
    raw: RawColumn, kind: Kind, missing_tokens: Sequence[str], date_format: str = ""
) -> str:
    """The column as a DOUBLE (days since 1970-01-01 for dates, read in ``date_format`` where the
    engine can, else as ISO 8601 in the forms pandas reads too: :data:`ISO_DATE`), NULL where
    missing or unparsable."""
    x, dialect = raw.ident, raw.dialect
    if kind is Kind.DATETIME:
        if raw.is_temporal:
            stamp = f"CAST({x} AS {dialect.timestamp_type})"
        else:
            text = text_sql(raw, missing_tokens)
            iso = dialect.match_template.format(x=text, pattern=dialect.text(f"^{ISO_DATE}$"))
            stamp = f"TRY_CAST(CASE WHEN {iso} THEN {text} END AS {dialect.timestamp_type})"
            read = dialect.strptime(text, date_format) if date_format else None
            if read is not None:
                stamp = f"coalesce({read}, {stamp})"
        return dialect.days(stamp)
    text = text_sql(raw, missing_tokens)
    value = f"CAST({x} AS DOUBLE)" if raw.is_number else dialect.try_double(text)
    return f"(CASE WHEN isnan({value}) THEN NULL ELSE {value} END)"


@dataclass(frozen=True)
class Prepared:
    """A column's text and (numeric columns) value, computed once in an inner SELECT."""

    text: str
    value: str | None

    @classmethod
    def of(cls, column: Column, raw: RawColumn, missing_tokens: Sequence[str]) -> Prepared:
        """The expressions over the raw column."""
        value = (
            None
            if column.is_categorical
            else number_sql(raw, column.kind, missing_tokens, column.date_format)
        )
        return cls(text_sql(raw, missing_tokens), value)

    def aliased(self, i: int) -> list[str]:
        """``expr AS t{i}`` (and ``x{i}``) for the inner SELECT."""
        parts = [f"{self.text} AS t{i}"]
        return parts if self.value is None else [*parts, f"{self.value} AS x{i}"]


def prepare(
    domain: Domain, raw: Sequence[RawColumn], missing_tokens: Sequence[str]
) -> tuple[list[Prepared], str]:
    """Each domain column's prepared expressions, and their aliased list for an inner SELECT."""
    by_name = {r.name: r for r in raw}
    check_present(domain, by_name)
    prepared = [Prepared.of(c, by_name[c.name], missing_tokens) for c in domain]
    return prepared, ", ".join(p for i, prep in enumerate(prepared) for p in prep.aliased(i))


def code_sql(column: Column, text: str, value: str | None = None, dialect: Dialect = DUCKDB) -> str:
    """``column``'s code (or a negative sentinel) from its prepared ``text`` and ``value`` columns."""
    missing = column.missing_code if column.missing_code is not None else MISSING_REFUSED
    if column.is_categorical:
        return _categorical_sql(column, text, missing, dialect)
    if value is None:
        raise InputError(f"column {column.name!r} is {column.kind}: its code needs its value")
    interior = column.edges[1:-1]
    bins = " + ".join(f"CAST({value} >= {double(e)} AS INTEGER)" for e in interior) or "0"
    stray = missing if column.strays_missing else NOT_PARSED
    return (
        f"CASE WHEN {value} IS NULL THEN "
        f"(CASE WHEN {text} IS NULL THEN {missing} ELSE {stray} END) "
        f"ELSE {bins} END"
    )


def _categorical_sql(column: Column, text: str, missing: int, dialect: Dialect) -> str:
    other = column.other_code if column.other_code is not None else OTHER_REFUSED
    if not column.categories:
        return f"CASE WHEN {text} IS NULL THEN {missing} ELSE {other} END"
    exact = " ".join(f"WHEN {dialect.text(c)} THEN {i}" for i, c in enumerate(column.categories))
    numeric = {v: i for v, i in numeric_lookup(column.categories).items() if not math.isnan(v)}
    fallback = str(other)
    if numeric:
        by_value = " ".join(f"WHEN {double(v)} THEN {i}" for v, i in numeric.items())
        fallback = f"coalesce(CASE {dialect.try_double(text)} {by_value} END, {other})"
    return (
        f"CASE WHEN {text} IS NULL THEN {missing} "
        f"ELSE coalesce(CASE {text} {exact} END, {fallback}) END"
    )


def clipped_sql(column: Column, value: str) -> tuple[str, str]:
    """Conditions true where a value falls below / above the column's bounds (numeric columns)."""
    low, high = column.bounds
    return f"({value} < {double(low)})", f"({value} > {double(high)})"


def profile_sql(
    domain: Domain,
    code: Callable[[int, Column], str],
    clipped: Callable[[int, Column], tuple[str, str]],
) -> list[str]:
    """The aggregates :func:`profile_report` reads, over rows flagged ``__holdout``: column
    ``i``'s codes are ``code(i, column)``, its below / above conditions ``clipped(i, column)``.

    >>> column = Column("age", Kind.NUMERIC, edges=(0, 50, 100))
    >>> profile_sql(Domain((column,)), lambda i, c: f"c{i}", lambda i, c: ("lo", "hi"))[-1]
    'count_if(NOT __holdout AND hi) AS high_0'
    """
    train = "NOT __holdout"
    parts: list[str] = []
    for i, column in enumerate(domain):
        codes = code(i, column)
        parts += [
            f"count_if({codes} = {MISSING_REFUSED}) AS refused_missing_{i}",
            f"count_if({codes} = {OTHER_REFUSED}) AS refused_other_{i}",
            f"count_if({codes} = {NOT_PARSED}) AS not_parsed_{i}",
            f"count_if({train} AND {codes} = {_or_minus(column.missing_code)}) AS missing_{i}",
            f"count_if({train} AND {codes} = {_or_minus(column.other_code)}) AS other_{i}",
        ]
        if not column.is_categorical:
            low, high = clipped(i, column)
            parts += [
                f"count_if({train} AND {low}) AS low_{i}",
                f"count_if({train} AND {high}) AS high_{i}",
            ]
    return parts


def _or_minus(code: int | None) -> int:
    return -1 if code is None else code


def profile_report(domain: Domain, count: Callable[[str], int]) -> EncodeReport:
    """Refuse what the domain cannot hold, in the in-memory codec's order; else the report.

    ``count(key)`` reads a profile query's result, whose columns are named per column ``i``:
    ``refused_other_i``, ``not_parsed_i``, ``refused_missing_i`` (sentinel counts, all rows)
    and ``missing_i``, ``other_i``, ``low_i``, ``high_i`` (training rows).
    """
    columns: dict[str, ColumnEncoding] = {}
    for i, column in enumerate(domain):
        if count(f"refused_other_{i}"):
            raise other_refused(column.name, count(f"refused_other_{i}"))
        if count(f"not_parsed_{i}"):
            raise not_parsed(column.name, column.kind, count(f"not_parsed_{i}"))
        if count(f"refused_missing_{i}"):
            raise missing_refused(column.name, count(f"refused_missing_{i}"))
        columns[column.name] = ColumnEncoding(
            missing=count(f"missing_{i}"),
            other=count(f"other_{i}"),
            clipped_low=count(f"low_{i}"),
            clipped_high=count(f"high_{i}"),
        )
    return EncodeReport(columns)
