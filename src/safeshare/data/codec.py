"""Encoding values into codes and decoding codes back into values.

Values outside a column's declared categories map to its ``other`` code and
numeric values outside its bounds are clipped into the first or last bin; both
are counted in the :class:`EncodeReport` (counts only, never the values).

>>> import pandas as pd
>>> from safeshare.data.domain import Column, Domain, Kind
>>> domain = Domain((Column("age", Kind.NUMERIC, edges=(0, 50, 100), integer=True),))
>>> table, report = encode_frame(pd.DataFrame({"age": ["20", "70", "150", None]}), domain)
>>> table.column("age").tolist(), report.columns["age"].clipped_high
([0, 1, 1, 2], 1)
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from safeshare.data.dates import ISO, parse_dates, write_dates
from safeshare.data.domain import OTHER_LABEL, Column, Domain, Kind
from safeshare.data.table import Table
from safeshare.errors import EncodingError

_DAY = np.timedelta64(1, "D")


@dataclass(frozen=True)
class ColumnEncoding:
    """What encoding changed in one column (counts of records, no values)."""

    missing: int = 0
    other: int = 0
    clipped_low: int = 0
    clipped_high: int = 0


@dataclass(frozen=True)
class EncodeReport:
    columns: dict[str, ColumnEncoding] = field(default_factory=dict)

    def warnings(self, columns: Collection[str] | None = None) -> list[str]:
        """One readable line per column (of ``columns``, default all) whose values were folded or clipped."""
        lines = []
        for name, enc in self.columns.items():
            if columns is not None and name not in columns:
                continue
            if enc.other:
                lines.append(
                    f"column {name!r}: {enc.other} value(s) outside the declared categories "
                    f"were mapped to {OTHER_LABEL!r}"
                )
            if enc.clipped_low or enc.clipped_high:
                lines.append(
                    f"column {name!r}: {enc.clipped_low} value(s) below and {enc.clipped_high} "
                    "above the declared bounds were clipped into the edge bins"
                )
        return lines


def encode_frame(frame: pd.DataFrame, domain: Domain) -> tuple[Table, EncodeReport]:
    """Encode every column of ``domain`` from ``frame`` (extra frame columns are ignored)."""
    check_present(domain, frame.columns)
    codes: dict[str, np.ndarray] = {}
    report: dict[str, ColumnEncoding] = {}
    for column in domain:
        codes[column.name], report[column.name] = _encode_column(frame[column.name], column)
    return Table(codes, domain), EncodeReport(report)


def check_present(domain: Domain, names: Collection[str]) -> None:
    """Refuse a domain that declares columns the data does not have."""
    absent = [n for n in domain.names if n not in names]
    if absent:
        raise EncodingError(
            f"columns {absent} are declared but absent from the data; "
            "remove them from the schema or check the file's header"
        )


def _encode_column(values: pd.Series, column: Column) -> tuple[np.ndarray, ColumnEncoding]:
    if not column.encodable:
        raise EncodingError(
            f"column {column.name!r} is {column.kind}/{column.role} and is not modelled as codes; "
            "drop it before encoding"
        )
    if column.is_categorical:
        return _encode_categorical(values, column)
    numbers = as_numbers(
        values, column.name, column.kind, date_format=column.date_format,
        strays_missing=column.strays_missing,
    )  # fmt: skip
    return _encode_bins(numbers, column)


def _missing_mask(values: pd.Series) -> np.ndarray:
    mask = values.isna().to_numpy(copy=True)
    if values.dtype == object or pd.api.types.is_string_dtype(values.dtype):
        mask |= values.astype("string").str.strip().eq("").fillna(True).to_numpy(dtype=bool)
    return mask


def missing_refused(name: str, count: int) -> EncodingError:
    """The error for missing values in a column declared without a missing code."""
    return EncodingError(
        f"column {name!r} has {count} missing value(s) but is declared "
        "with missing: false; allow missing values in the schema or fill them"
    )


def other_refused(name: str, count: int) -> EncodingError:
    """The error for values outside the categories of a column without an 'other' code."""
    return EncodingError(
        f"column {name!r}: {count} value(s) are outside the declared categories "
        "and the column allows no 'other'; add the categories or set other: true"
    )


def not_parsed(name: str, kind: Kind, count: int, guessed: bool = False) -> EncodingError:
    """The error for values of a numeric or datetime column that are not numbers or dates
    (``guessed``: the kind was read from the values, no schema declares it)."""
    what = "dates (YYYY-MM-DD)" if kind is Kind.DATETIME else "numbers"
    if guessed:
        return EncodingError(
            f"column {name!r} reads as {kind} (most of its values are {what}) but {count} of "
            "its values are not; clean those values, or declare the column in a schema "
            "(kind: categorical keeps them as text)"
        )
    return EncodingError(
        f"column {name!r} is declared {kind} but {count} of its values "
        f"are not {what}; declare it categorical in the schema or clean those values"
    )


def _finish(codes: np.ndarray, missing: np.ndarray, column: Column) -> np.ndarray:
    if missing.any():
        if column.missing_code is None:
            raise missing_refused(column.name, int(missing.sum()))
        codes[missing] = column.missing_code
    return codes


def _encode_categorical(values: pd.Series, column: Column) -> tuple[np.ndarray, ColumnEncoding]:
    missing = _missing_mask(values)
    text = values.astype("string").str.strip()
    lookup = {c: i for i, c in enumerate(column.categories)}
    codes = text.map(lookup).to_numpy(dtype=float, na_value=np.nan, copy=True)
    unseen = np.isnan(codes) & ~missing
    if unseen.any():
        by_value = numeric_lookup(column.categories)
        if by_value:
            as_numbers = pd.to_numeric(text[unseen], errors="coerce")
            codes[unseen] = as_numbers.map(by_value).to_numpy(dtype=float, na_value=np.nan)
            unseen = np.isnan(codes) & ~missing
    n_other = int(unseen.sum())
    if n_other:
        if column.other_code is None:
            raise other_refused(column.name, n_other)
        codes[unseen] = column.other_code
    codes[missing] = 0
    result = _finish(codes.astype(np.int64), missing, column)
    return result, ColumnEncoding(missing=int(missing.sum()), other=n_other)


def numeric_lookup(categories: tuple[str, ...]) -> dict[float, int]:
    """Maps numeric categories by value, so '32' matches '32.0' (empty if any is not a number)."""
    lookup: dict[float, int] = {}
    for code, category in enumerate(categories):
        try:
            number = float(category)
        except ValueError:
            return {}
        lookup.setdefault(number, code)
    return lookup


def as_numbers(
    values: pd.Series,
    name: str,
    kind: Kind,
    guessed: bool = False,
    date_format: str = ISO,
    *,
    strays_missing: bool = False,
) -> np.ndarray:
    """Floats (day numbers for datetimes, read in ``date_format``); NaN where missing, and
    where a value is no number (no date) with ``strays_missing``; else an error names the count
    of such values (and, ``guessed``, that the kind was read from the values)."""
    missing = _missing_mask(values)
    if kind is Kind.DATETIME:
        parsed = parse_dates(values, date_format)
        numbers = ((parsed - pd.Timestamp("1970-01-01")) / _DAY).to_numpy(
            dtype=float, na_value=np.nan
        )
    else:
        numbers = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
    bad = np.isnan(numbers) & ~missing
    if bad.any() and not strays_missing:
        raise not_parsed(name, kind, int(bad.sum()), guessed)
    return numbers


def _encode_bins(numbers: np.ndarray, column: Column) -> tuple[np.ndarray, ColumnEncoding]:
    edges = np.asarray(column.edges)
    missing = np.isnan(numbers)
    filled = np.where(missing, edges[0], numbers)
    low = int((filled < edges[0]).sum())
    high = int((filled > edges[-1]).sum())
    codes = np.clip(np.searchsorted(edges, filled, side="right") - 1, 0, len(edges) - 2)
    result = _finish(codes.astype(np.int64), missing, column)
    return result, ColumnEncoding(missing=int(missing.sum()), clipped_low=low, clipped_high=high)


def decode_table(
    table: Table, rng: np.random.Generator, orders: Sequence[Sequence[str]] = ()
) -> pd.DataFrame:
    """Values from codes; a bin decodes to a value inside it, drawn from the column's finer
    histogram where it has one (:attr:`Column.cells`), else uniformly (integers: a uniform
    integer).

    ``orders``: groups of numeric or date columns whose values every record keeps in
    non-decreasing order (a public rule: admitted <= released); each record's values in a
    group are sorted after decoding (missing ones stay missing, columns the table lacks are
    skipped).

    >>> from safeshare.data.domain import Column, Domain, Kind
    >>> domain = Domain(tuple(Column(c, Kind.NUMERIC, edges=(0, 10), integer=True, missing=False)
    ...                       for c in ("start", "end")))
    >>> table = Table({"start": np.zeros(50, int), "end": np.zeros(50, int)}, domain)
    >>> frame = decode_table(table, np.random.default_rng(0), orders=[("start", "end")])
    >>> bool((frame["start"] <= frame["end"]).all())
    True
    """
    values = {c.name: _values(table.column(c.name), c, rng) for c in table.domain}
    for group in orders:
        present = [n for n in group if n in values]
        if len(present) > 1:
            sorted_rows = _in_order(np.stack([values[n] for n in present], axis=1))
            for j, name in enumerate(present):
                values[name] = sorted_rows[:, j]
    data = {c.name: _written(values[c.name], c) for c in table.domain}
    return pd.DataFrame(data, index=pd.RangeIndex(len(table)))


def _values(codes: np.ndarray, column: Column, rng: np.random.Generator) -> np.ndarray:
    """A column's decoded values: labels (categories), else numbers (day numbers for dates),
    NaN where missing."""
    codes = codes.astype(np.int64)
    missing = codes == column.missing_code if column.missing_code is not None else None
    if column.is_categorical:
        labels = np.array(list(column.labels()), dtype=object)
        out = labels[codes]
        if missing is not None:
            out[missing] = column.missing_label or None
        return out
    bins = np.minimum(codes, column.n_values - 1)
    values = _uniform_in_bins(bins, column, rng)
    if column.cells:
        values = _follow_cells(bins, values, column, rng)
    values = values.astype(float)
    if missing is not None:
        values[missing] = np.nan
    return values


def _written(values: np.ndarray, column: Column) -> pd.Series:
    """Decoded values as the release writes them: dates in the column's layout, integers as
    integers."""
    if column.is_categorical:
        return pd.Series(values, dtype=object)
    if column.kind is Kind.DATETIME:
        days = np.full(len(values), np.datetime64("NaT"), dtype="datetime64[s]")
        present = ~np.isnan(values)  # (seconds: any year a schema may name, not only 1677-2262)
        days[present] = np.floor(values[present]).astype(np.int64).astype("datetime64[D]")
        return write_dates(pd.Series(days), column.date_format)
    if column.integer:
        return pd.Series(values).round().astype("Int64")
    return pd.Series(values)


def _in_order(rows: np.ndarray) -> np.ndarray:
    """Each row's present (non-NaN) values sorted into its present positions, left to right."""
    present = ~np.isnan(rows)
    ranked = np.sort(np.where(present, rows, np.inf), axis=1)  # present values first, sorted
    positions = np.argsort(~present, axis=1, kind="stable")  # present positions first
    out = np.empty_like(rows)
    np.put_along_axis(out, positions, ranked, axis=1)
    out[~present] = np.nan
    return out


def _uniform_in_bins(bins: np.ndarray, column: Column, rng: np.random.Generator) -> np.ndarray:
    edges = np.asarray(column.edges)
    lo, hi = edges[bins], edges[bins + 1]
    if not column.integer and column.kind is not Kind.DATETIME:
        return lo + rng.random(len(bins)) * (hi - lo)
    # integers (or whole days) inside [lo, hi); the last bin includes its upper edge
    first = np.ceil(lo)
    last_bin = bins == len(edges) - 2
    stop = np.where(last_bin, np.floor(hi) + 1, np.ceil(hi))
    count = np.maximum(stop - first, 0)
    picks = first + np.floor(rng.random(len(bins)) * np.maximum(count, 1))
    return np.where(count > 0, picks, np.round((lo + hi) / 2)).astype(float)


def _follow_cells(
    bins: np.ndarray, uniform: np.ndarray, column: Column, rng: np.random.Generator
) -> np.ndarray:
    """Values inside each bin drawn from the column's finer histogram: a cell by its weight
    (the share of it inside the bin), then a uniform value (or integer) inside that part.
    The first and last bins also reach the cells beyond the bounds (the tails of the values
    clipped into them).  A bin the histogram gives no weight keeps its ``uniform`` draw."""
    edges, cells = np.asarray(column.edges), np.asarray(column.cells)
    weights = np.asarray(column.weights)
    whole = column.integer or column.kind is Kind.DATETIME
    out = uniform.copy()
    last = len(edges) - 2
    for b in np.unique(bins):
        rows = np.flatnonzero(bins == b)
        lo, hi = edges[b], edges[b + 1]
        if whole:  # integers in [lo, hi), the last bin closed
            lo, hi = np.ceil(lo), (np.floor(hi) + 1 if b == last else np.ceil(hi))
        lo = min(lo, cells[0]) if b == 0 else lo
        hi = max(hi, cells[-1]) if b == last else hi
        starts, stops = np.maximum(cells[:-1], lo), np.minimum(cells[1:], hi)
        if whole:
            starts, stops = np.ceil(starts), np.ceil(stops)
        width = np.maximum(stops - starts, 0.0)
        mass = weights * width / (cells[1:] - cells[:-1])
        if mass.sum() <= 0:
            continue
        picked = rng.choice(len(mass), size=rows.size, p=mass / mass.sum())
        inside = rng.random(rows.size) * width[picked]
        out[rows] = starts[picked] + (np.floor(inside) if whole else inside)
    return out


def bin_midpoints(column: Column) -> np.ndarray:
    """The middle of each bin of a numeric/datetime column."""
    edges = np.asarray(column.edges)
    return (edges[:-1] + edges[1:]) / 2


def integer_edges(lo: float, hi: float, bins: int) -> tuple[float, ...]:
    """At most ``bins`` bins of equal integer width covering [lo, hi] (the last bin closed).

    >>> integer_edges(0, 10, 5)
    (0.0, 3.0, 6.0, 9.0, 10.0)
    """
    lo_i, hi_i = math.floor(lo), max(math.ceil(hi), math.floor(lo) + 1)
    width = max(1, math.ceil((hi_i - lo_i + 1) / bins))
    edges = list(range(lo_i, hi_i, width))
    return tuple(float(e) for e in [*edges, hi_i])


def value_edges(values: np.ndarray) -> tuple[float, ...]:
    """Edges giving one bin per distinct value, the edges halfway between neighbouring values
    (the first bin starts at the smallest value, the last ends at the largest).

    >>> value_edges(np.array([0.5, 2.5, 2.5, 9.0]))
    (0.5, 1.5, 5.75, 9.0)
    """
    distinct = np.unique(values[~np.isnan(values)])
    if distinct.size <= 1:
        start = float(distinct[0]) if distinct.size else 0.0
        return (start, start + 1.0)
    middles = (distinct[:-1] + distinct[1:]) / 2
    return (float(distinct[0]), *(float(m) for m in middles), float(distinct[-1]))


def singleton_edges(lo: int, hi: int) -> tuple[float, ...]:
    """Edges giving one bin per integer from ``lo`` to ``hi`` (the last edge is ``hi + 0.5``).

    >>> singleton_edges(0, 2)
    (0.0, 1.0, 2.0, 2.5)
    """
    return (*(float(e) for e in range(lo, hi + 1)), hi + 0.5)
