"""Generalization hierarchies: how each quasi-identifier's values coarsen, level by level.

A hierarchy has one row per original value and one column per level: level 0 is the value
itself and the last level is a single label (``*``), which is what suppressing the column
looks like.  Every level must be *nested*: two values that share a label at level ``l``
share one at every level above.  The format is ARX's CSV (``;``-separated, no header).

>>> h = Hierarchy.from_rows("zip", [["13053", "1305*", "130**", "*"],
...                                 ["13068", "1306*", "130**", "*"],
...                                 ["14850", "1485*", "148**", "*"]])
>>> h.height, h.labels[2]
(3, ('130**', '148**'))
>>> h.generalize(["14850", "13068"], 1)
['1485*', '1306*']

The builders below make a hierarchy from a column's values.  They drop every level that merges
nothing (no two labels of the level below share one of its labels), since such a level only
lengthens the lattice and inflates the loss; a missing value (``None``, NaN, an empty string)
stays ``(missing)`` at every level below the top.  Rows given as such keep all their levels.

>>> masking("zip", ["13053", "13068", "14850", "14853"]).labels[1:]
(('1305*', '1306*', '1485*'), ('130**', '148**'), ('1****',), ('*',))
>>> intervals("age", [17, 18, 39, 61, None], widths=[10, 50]).to_rows()[-1]
['(missing)', '(missing)', '(missing)', '*']
>>> automatic("zip", ["02139", "02138", "10001"]).labels[1]
('0213*', '1000*')
>>> days = ["2024-01-29", "2024-02-01", "2024-02-14", "2024-05-15"]
>>> dates("day", days, granularity=["month", "quarter"]).labels[1:]
(('2024-01', '2024-02', '2024-05'), ('2024-Q1', '2024-Q2'), ('*',))
>>> dates("day", days, granularity=["week"]).labels[1]
('2024-W05', '2024-W07', '2024-W20')
"""

from __future__ import annotations

import csv
import io
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from safeshare.data.dates import read_any
from safeshare.errors import SchemaError

TOP = "*"
MISSING_VALUE = "(missing)"
DATE_LEVELS = ("day", "week", "month", "quarter", "year", "decade")
DEFAULT_DATE_LEVELS = ("month", "year")


class HierarchyError(SchemaError):
    """A hierarchy is malformed or does not cover a value of its column."""


@dataclass(frozen=True)
class Hierarchy:
    """A nested generalization hierarchy of one column.

    ``values`` are the level-0 values; ``labels[l]`` the distinct labels of level ``l``
    (in first-seen order); ``maps[l][i]`` the position in ``labels[l]`` of value ``i``'s
    label.  Build one with :meth:`from_rows`, :meth:`from_csv` or the builders below.
    """

    column: str
    values: tuple[str, ...]
    labels: tuple[tuple[str, ...], ...]
    maps: tuple[np.ndarray, ...]
    source: str = "rows"
    _index: dict[str, int] = field(init=False, repr=False, compare=False)
    _numeric: dict[float, int] | None = field(init=False, repr=False, compare=False)
    _label_indexes: dict[int, pd.Index] = field(init=False, repr=False, compare=False)
    _intervals: dict[int, np.ndarray | None] = field(init=False, repr=False, compare=False)
    _coverage: dict[int, tuple[np.ndarray, np.ndarray]] = field(
        init=False, repr=False, compare=False
    )
    _value_sets: dict[pa.DataType, pa.Array] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", {v: i for i, v in enumerate(self.values)})
        numeric: dict[float, int] | None = {}
        for i, value in enumerate(self.values):
            if value == MISSING_VALUE:
                continue  # a numeric column's missing row: the others still match by number
            try:
                number = float(value)
            except ValueError:
                numeric = None
                break
            if math.isfinite(number) and numeric is not None:
                numeric.setdefault(number, i)
        object.__setattr__(self, "_numeric", numeric or None)
        object.__setattr__(self, "_label_indexes", {})
        object.__setattr__(self, "_intervals", {})
        object.__setattr__(self, "_coverage", {})
        object.__setattr__(self, "_value_sets", {})
        for array in self.maps:
            array.flags.writeable = False

    # ---- construction -------------------------------------------------------------------

    @classmethod
    def from_rows(
        cls, column: str, rows: Sequence[Sequence[str]], *, source: str = "rows"
    ) -> Hierarchy:
        """A hierarchy from rows ``[value, level 1, ..., top]``; checks shape and nesting.

        The levels are kept as given, even one that merges nothing: a config's ``min_level`` /
        ``max_level`` and a released level number count the levels of the rows (an ARX CSV
        file, inline rows) as their author wrote them.  The builders of this module drop such
        levels before they call this.
        """
        where = f"hierarchy of column {column!r}"
        rows = [[str(cell).strip() for cell in row] for row in rows if any(str(c) for c in row)]
        if not rows:
            raise HierarchyError(f"the {where} is empty; give one row per value")
        width = len(rows[0])
        for number, row in enumerate(rows, start=1):
            if len(row) != width:
                raise HierarchyError(
                    f"the {where} has {len(row)} levels in row {number} but {width} in row 1; "
                    "give every row the same number of levels"
                )
        values = tuple(row[0] for row in rows)
        seen: set[str] = set()
        for value in values:
            if value in seen:
                raise HierarchyError(f"the {where} lists the value {value!r} twice; keep one row")
            seen.add(value)
        if width == 1:
            rows = [[*row, TOP] for row in rows]
            width = 2
        labels: list[tuple[str, ...]] = []
        maps: list[np.ndarray] = []
        for level in range(width):
            position: dict[str, int] = {}
            codes = np.empty(len(rows), dtype=np.int32)
            for i, row in enumerate(rows):
                codes[i] = position.setdefault(row[level], len(position))
            labels.append(tuple(position))
            maps.append(codes)
        for level in range(1, width - 1):
            parent: dict[int, int] = {}
            for i, row in enumerate(rows):
                child, up = int(maps[level][i]), int(maps[level + 1][i])
                if parent.setdefault(child, up) != up:
                    raise HierarchyError(
                        f"the {where} is not nested: {row[level]!r} at level {level} generalizes "
                        f"to both {labels[level + 1][parent[child]]!r} and {row[level + 1]!r} at "
                        f"level {level + 1} (first at value {row[0]!r}); give each label one parent"
                    )
        if len(labels[-1]) != 1:
            raise HierarchyError(
                f"the {where} ends in {len(labels[-1])} labels at its last level; the last level "
                f"must be one label such as {TOP!r}"
            )
        return cls(column, values, tuple(labels), tuple(maps), source)

    @classmethod
    def from_csv(cls, column: str, path: str | Path, delimiter: str = ";") -> Hierarchy:
        """Read ARX's format: ``;``-separated, no header, one row per value."""
        path = Path(path)
        if not path.is_file():
            raise HierarchyError(
                f"the hierarchy file {str(path)!r} of column {column!r} does not exist"
            )
        try:
            text = path.read_text(encoding="utf-8-sig")
        except UnicodeDecodeError:
            text = "\x00"
        if "\x00" in text:
            raise HierarchyError(
                f"the hierarchy file {str(path)!r} of column {column!r} is not UTF-8 text; "
                "give ARX's CSV format (';'-separated, one row per value)"
            )
        rows = [row for row in csv.reader(io.StringIO(text), delimiter=delimiter) if row]
        return cls.from_rows(column, rows, source=f"csv {path.name}")

    # ---- reading ------------------------------------------------------------------------

    @property
    def height(self) -> int:
        """The top level (the number of levels minus one)."""
        return len(self.labels) - 1

    def sizes(self) -> tuple[int, ...]:
        """The number of distinct labels at each level."""
        return tuple(len(level) for level in self.labels)

    def label_index(self, level: int) -> pd.Index:
        """The labels of ``level`` as a pandas Index (built once; released columns' categories)."""
        index = self._label_indexes.get(level)
        if index is None:
            index = self._label_indexes[level] = pd.Index(self.labels[level])
        return index

    def leaves(self, level: int) -> np.ndarray:
        """How many level-0 values each label of ``level`` covers."""
        return np.bincount(self.maps[level], minlength=len(self.labels[level]))

    def encode(
        self, values: pd.Series | Sequence[object], weights: np.ndarray | None = None
    ) -> np.ndarray:
        """Level-0 codes of ``values``; the first value not covered raises :class:`HierarchyError`.

        Values are matched as text, then as numbers (``'39'`` matches ``'39.0'``).  A missing
        value (or an empty string, unless a row lists it) matches a row for ``(missing)``.
        ``weights`` (records per value, for distinct values with counts) makes the error count
        records rather than values.
        """
        series = values if isinstance(values, pd.Series) else pd.Series(list(values), dtype=object)
        exact = self._exact_codes(series)
        if exact is not None:
            return exact
        positions, uniques = pd.factorize(series, use_na_sentinel=True)
        lookup = np.empty(len(uniques) + 1, dtype=np.int64)
        bad: list[int] = []
        for i, value in enumerate(uniques):
            code = self._code_of(str(value).strip())
            if code is None:
                bad.append(i)
            else:
                lookup[i] = code
        counts = np.ones(len(positions), dtype=np.int64) if weights is None else weights
        missing = positions < 0
        if missing.any():
            if MISSING_VALUE not in self._index:
                raise HierarchyError(
                    f"column {self.column!r} has {int(counts[missing].sum())} missing value(s) and its "
                    f"hierarchy has no row for {MISSING_VALUE!r}; add one or fill them"
                )
            lookup[-1] = self._index[MISSING_VALUE]
        if bad:
            uncovered = int(counts[np.isin(positions, bad)].sum())
            raise HierarchyError(  # counts only: an error never quotes a value of the data
                f"column {self.column!r}: {len(bad)} distinct value(s), held by {uncovered} "
                "record(s), are not in its hierarchy; add a row for every value of the column"
            )
        return lookup[positions].astype(np.int32)

    def _exact_codes(self, series: pd.Series) -> np.ndarray | None:
        """Codes by exact match in Arrow, when every value is one of ``values`` as written
        (the common case; else ``None``: then values are stripped and matched as numbers)."""
        dtype = series.dtype
        if not (isinstance(dtype, pd.StringDtype) and dtype.storage == "pyarrow"):
            return None
        data = series.array.__arrow_array__()
        value_set = self._value_sets.get(data.type)
        if value_set is None:  # (made once per type: thousands of values cost a millisecond)
            value_set = self._value_sets[data.type] = pa.array(self.values, type=data.type)
        found = pc.index_in(data, value_set=value_set)
        if found.null_count:
            return None
        return np.asarray(found.to_numpy(), dtype=np.int32)

    def _code_of(self, text: str) -> int | None:
        code = self._index.get(text)
        if code is None and text == "":
            return self._index.get(MISSING_VALUE)
        if code is None and self._numeric:
            try:
                code = self._numeric.get(float(text))
            except ValueError:
                return None
        return code

    def generalize(self, values: Sequence[object], level: int) -> list[str]:
        """The labels of ``values`` at ``level``."""
        codes = self.encode(values)
        return [self.labels[level][c] for c in self.maps[level][codes]]

    def restrict(self, present: np.ndarray) -> Hierarchy:
        """The same hierarchy over only the level-0 codes in ``present`` (a boolean mask)."""
        rows = [
            [self.labels[level][self.maps[level][i]] for level in range(len(self.labels))]
            for i in np.flatnonzero(present)
        ]
        return Hierarchy.from_rows(self.column, rows, source=self.source)

    def coverage(self, level: int) -> tuple[np.ndarray, np.ndarray]:
        """Per label of ``level``: the share of the column's other values it covers (ARX's
        Loss of the label), and the share of the column's range its interval spans (NCP; the
        first share again where the column is not numeric).  Computed once per level.

        >>> h = Hierarchy.from_rows("a", [["1", "1-2", "*"], ["2", "1-2", "*"], ["4", "4", "*"]])
        >>> [share.tolist() for share in h.coverage(1)]
        [[0.5, 0.0], [0.3333333333333333, 0.0]]
        """
        found = self._coverage.get(level)
        if found is None:
            loss = (self.leaves(level) - 1) / max(len(self.values) - 1, 1)
            box = self.interval(level)
            ncp = loss
            if box is not None and box[:, 1].max() > box[:, 0].min():
                ncp = (box[:, 1] - box[:, 0]) / (box[:, 1].max() - box[:, 0].min())
            for share in (loss, ncp):
                share.flags.writeable = False
            self._coverage[level] = found = (loss, ncp)
        return found

    def interval(self, level: int) -> np.ndarray | None:
        """For numeric hierarchies, each label's (low, high) over the values it covers.

        A ``(missing)`` row adds no number: a label of only missing values is the empty
        interval at the column's lowest value (it widens nothing).  Computed once per level.
        """
        if level not in self._intervals:
            box = self._interval(level)
            if box is not None:
                box.flags.writeable = False
            self._intervals[level] = box
        return self._intervals[level]

    def _interval(self, level: int) -> np.ndarray | None:
        present = [i for i, v in enumerate(self.values) if v != MISSING_VALUE]
        if self._numeric is None or len(self._numeric) != len(present):
            return None
        numbers = np.fromiter(self._numeric, dtype=np.float64)  # (distinct: in value order)
        size = len(self.labels[level])
        low = np.full(size, np.inf)
        high = np.full(size, -np.inf)
        np.minimum.at(low, self.maps[level][present], numbers)
        np.maximum.at(high, self.maps[level][present], numbers)
        empty = np.isinf(low)
        low[empty] = high[empty] = numbers.min()
        return np.stack([low, high], axis=1)

    def to_rows(self) -> list[list[str]]:
        return [
            [self.labels[level][self.maps[level][i]] for level in range(len(self.labels))]
            for i in range(len(self.values))
        ]


# ---- builders ---------------------------------------------------------------------------


def _is_missing(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip() in ("", MISSING_VALUE)
    try:
        return bool(pd.isna(value))
    except (TypeError, ValueError):  # not a scalar: not one missing value
        return False


def _present(values: Iterable[object]) -> tuple[list[object], bool]:
    """The distinct values that are not missing (text stripped, in first-seen order), and
    whether any is missing: ``None``, NaN, NaT, ``pd.NA``, an empty string or ``(missing)``."""
    series = values if isinstance(values, pd.Series) else pd.Series(list(values), dtype=object)
    distinct: dict[object, None] = {}
    missing = False
    for value in series.unique():
        if _is_missing(value):
            missing = True
        else:
            distinct.setdefault(value.strip() if isinstance(value, str) else value, None)
    return list(distinct), missing


def _merging_levels(rows: list[list[str]]) -> list[list[str]]:
    """``rows`` less each level between the values and the top that merges nothing: one that
    groups the values as the level kept below it does.  A level of one label below the top
    stays (it merges; its label, such as ``1****``, says more than ``*``)."""
    if not rows:
        return rows
    top = len(rows[0]) - 1
    kept = [0]
    for level in range(1, top):
        labels = {row[level] for row in rows}
        below = {row[kept[-1]] for row in rows}
        pairs = {(row[kept[-1]], row[level]) for row in rows}
        if not len(labels) == len(below) == len(pairs):
            kept.append(level)
    kept.append(top)
    return [[row[level] for level in kept] for row in rows]


def _built(column: str, rows: list[list[str]], missing: bool, source: str) -> Hierarchy:
    """The hierarchy of a builder's ``rows`` (each ``[value, level 1, ..., top]``): with a row
    ``(missing)`` at every level below the top when ``missing``, less the levels that merge
    nothing (see :func:`_merging_levels`)."""
    if missing:
        width = len(rows[0]) if rows else 2
        rows = [*rows, [MISSING_VALUE] * (width - 1) + [TOP]]
    return Hierarchy.from_rows(column, _merging_levels(rows), source=source)


def _number_label(low: float, high: float, integer: bool) -> str:
    if integer:
        return f"{int(low)}-{int(high) - 1}"
    return f"[{low:g}, {high:g})"


def intervals(
    column: str, values: Iterable[object], widths: Sequence[float], *, origin: float = 0.0
) -> Hierarchy:
    """Numbers grouped into intervals of each width in turn (each a multiple of the last)."""
    widths = [float(w) for w in widths]
    if not widths or any(w <= 0 for w in widths):
        raise HierarchyError(f"column {column!r}: interval widths must be positive numbers")
    for finer, coarser in itertools.pairwise(widths):
        ratio = coarser / finer
        if abs(ratio - round(ratio)) > 1e-9 or ratio < 1:
            raise HierarchyError(
                f"column {column!r}: interval width {coarser:g} is not a multiple of {finer:g}; "
                "nested levels need each width to be a multiple of the one before"
            )
    numbers, missing = _numbers(column, values)
    integer = all(float(n).is_integer() for n in numbers.values())
    integer = integer and all(w.is_integer() for w in widths)
    rows = []
    for text, number in numbers.items():
        row = [text]
        for width in widths:
            low = origin + math.floor((number - origin) / width) * width
            row.append(_number_label(low, low + width, integer))
        rows.append([*row, TOP])
    return _built(column, _sorted_rows(rows, numbers), missing, "intervals")


def cuts(column: str, values: Iterable[object], levels: Sequence[Sequence[float]]) -> Hierarchy:
    """Numbers split at given cut points; each level's cuts must be a subset of the one before."""
    points = [sorted(float(c) for c in level) for level in levels]
    for position, (finer, coarser) in enumerate(itertools.pairwise(points), start=2):
        if not set(coarser) <= set(finer):
            extra = sorted(set(coarser) - set(finer))[0]
            raise HierarchyError(
                f"column {column!r}: cut point {extra:g} of level {position} is not a cut point "
                f"of level {position - 1}; nested levels need each level's cuts among the level's "
                "below"
            )
    numbers, missing = _numbers(column, values)
    rows = []
    for text, number in numbers.items():
        row = [text]
        for level in points:
            position = int(np.searchsorted(level, number, side="right"))
            if position == 0:
                row.append(f"<{level[0]:g}")
            elif position == len(level):
                row.append(f">={level[-1]:g}")
            else:
                row.append(f"[{level[position - 1]:g}, {level[position]:g})")
        rows.append([*row, TOP])
    return _built(column, _sorted_rows(rows, numbers), missing, "cuts")


def date_levels(granularity: str | Sequence[str]) -> tuple[str, ...]:
    """``granularity`` checked: levels of :data:`DATE_LEVELS`, each coarser than the one before
    (a :class:`ValueError` says what is wrong)."""
    levels = (granularity,) if isinstance(granularity, str) else tuple(granularity)
    if not levels:
        raise ValueError(f"give at least one date level of {list(DATE_LEVELS)}")
    for level in levels:
        if level not in DATE_LEVELS:
            raise ValueError(f"{level!r} is not a date level; give levels of {list(DATE_LEVELS)}")
    for finer, coarser in itertools.pairwise(levels):
        if DATE_LEVELS.index(coarser) <= DATE_LEVELS.index(finer):
            raise ValueError(
                f"the date level {coarser!r} after {finer!r} is not coarser; list the levels "
                "from finer to coarser, e.g. day, month, year"
            )
        if finer == "week":
            raise ValueError(
                f"no date level can follow 'week' ({coarser!r} does): weeks cross months and "
                "years (2024-W05 runs from January 29 to February 4), so none nests above "
                "them; give week as the last level, or month, quarter, year"
            )
    return levels


def _date_label(day: pd.Timestamp, level: str) -> str:
    if level == "day":
        return f"{day.year:04d}-{day.month:02d}-{day.day:02d}"
    if level == "week":
        year, week, _ = day.isocalendar()
        return f"{year:04d}-W{week:02d}"
    if level == "month":
        return f"{day.year:04d}-{day.month:02d}"
    if level == "quarter":
        return f"{day.year:04d}-Q{(day.month - 1) // 3 + 1}"
    if level == "year":
        return f"{day.year:04d}"
    return f"{day.year // 10 * 10}s"


def dates(
    column: str, values: Iterable[object], granularity: Sequence[str] = DEFAULT_DATE_LEVELS
) -> Hierarchy:
    """Dates by each level of ``granularity`` in turn (finer to coarser), then ``*``.

    The levels are ``day`` (2024-03-31; merges the times of a day), ``week`` (ISO 8601:
    2024-W13), ``month`` (2024-03), ``quarter`` (2024-Q1), ``year`` (2024) and ``decade``
    (2020s); by default month -> year.  A week is the last level when it is given: it is not
    within one month or year (2024-W05 runs from January 29 to February 4), so no coarser
    date level nests above it, and a date is never released in a month it is not in.
    """
    try:
        levels = date_levels(granularity)
    except ValueError as err:
        raise HierarchyError(f"column {column!r}: {err}") from None
    distinct, missing = _present(values)
    texts = [str(v) for v in distinct]
    parsed = read_any(pd.Series(texts, dtype=object))
    bad = parsed.isna().to_numpy()
    if bad.any():
        raise HierarchyError(  # (counted: an error never quotes a value of the data)
            f"column {column!r}: {int(bad.sum())} distinct value(s) are not dates; give dates "
            "such as 2024-03-31"
        )
    rows = []
    for text, day in sorted(zip(texts, parsed, strict=True), key=lambda pair: pair[1]):
        rows.append([text, *(_date_label(day, level) for level in levels), TOP])
    return _built(column, rows, missing, "dates")


def masking(column: str, values: Iterable[object], *, char: str = "*") -> Hierarchy:
    """Strings masked right to left, one character per level (ZIP codes), then ``*``."""
    distinct, missing = _present(values)
    texts = sorted(str(v) for v in distinct)
    if not texts and not missing:
        raise HierarchyError(f"column {column!r} has no values to build a masking hierarchy from")
    longest = max((len(v) for v in texts), default=1)
    rows = []
    for value in texts:
        row = [value]
        for level in range(1, longest):
            keep = max(len(value) - level, 0)
            row.append(value[:keep] + char * (len(value) - keep))
        rows.append([*row, TOP])
    return _built(column, rows, missing, "masking")


def groupings(
    column: str, values: Iterable[object], levels: Sequence[Mapping[str, Sequence[object]]]
) -> Hierarchy:
    """Categorical groupings: ``levels[0]`` maps group -> values, ``levels[1]`` group -> groups.

    A missing value needs no group: it stays ``(missing)`` below the top.
    """
    distinct, missing = _present(values)
    parents: list[dict[str, str]] = []
    for number, level in enumerate(levels, start=1):
        parent: dict[str, str] = {}
        for group, members in level.items():
            for member in members:
                if str(member) in parent:
                    raise HierarchyError(
                        f"column {column!r}: {member!r} is in two groups at level {number} "
                        f"({parent[str(member)]!r} and {group!r}); put it in one"
                    )
                parent[str(member)] = str(group)
        parents.append(parent)
    outside = sum(str(v) not in parents[0] for v in distinct) if parents else 0
    if outside:  # (counted: an error never quotes a value of the data)
        raise HierarchyError(
            f"column {column!r}: {outside} distinct value(s) of the data are in no group at "
            "level 1; put every value of the column in a group"
        )
    rows = []
    for value in (str(v) for v in distinct):
        row, current = [value], value
        for number, parent in enumerate(parents, start=1):
            if current not in parent:  # (a group of the level below: the config's own label)
                raise HierarchyError(
                    f"column {column!r}: the group {current!r} is in no group at level "
                    f"{number}; add it to one"
                )
            current = parent[current]
            row.append(current)
        rows.append([*row, TOP])
    return _built(column, rows, missing, "groupings")


def _digit_codes(distinct: Sequence[object]) -> bool:
    """Whether ``distinct`` are codes written in digits: text of digits all of one length, at
    least 3 (ZIP codes, phone prefixes), or of any lengths with a leading zero in one."""
    texts = [v for v in distinct if isinstance(v, str) and v.isascii() and v.isdigit()]
    if not texts or len(texts) != len(distinct):
        return False
    lengths = {len(t) for t in texts}
    return (len(lengths) == 1 and min(lengths) >= 3) or any(
        len(t) > 1 and t.startswith("0") for t in texts
    )


def automatic(column: str, values: Iterable[object]) -> Hierarchy:
    """A default hierarchy: digit codes masked, numbers in intervals, other text to ``*``.

    Digit codes (see :func:`_digit_codes`: ``02139``, ``10001``) are masked right to left and
    keep their leading zeros; other numbers (ages 17..90, hours; more than two distinct) go in
    intervals of widths growing by 2-2.5-2 from a round width near a twentieth of their range;
    any other text goes straight to ``*``.
    """
    distinct, missing = _present(values)
    given = [*distinct, None] if missing else distinct
    if _digit_codes(distinct):
        return masking(column, given)
    try:
        numbers = [float(str(v)) for v in distinct]
    except ValueError:
        numbers = []
    if numbers and all(math.isfinite(n) for n in numbers) and len(distinct) > 2:
        spread = max(numbers) - min(numbers)
        width = 10 ** math.floor(math.log10(spread / 20)) if spread > 0 else 1.0
        if all(n.is_integer() for n in numbers):
            width = max(1.0, float(round(width)))
        widths: list[float] = []
        factors = (2.0, 2.5, 2.0)
        i = 0
        while width < spread and len(widths) < 8:
            widths.append(width)
            width *= factors[i % 3]
            if width > 1 and not width.is_integer():
                width = float(math.ceil(width))
            i += 1
        widths = [w for j, w in enumerate(widths) if j == 0 or w % widths[j - 1] == 0]
        origin = math.floor(min(numbers) / widths[0]) * widths[0] if widths else 0.0
        return intervals(column, given, widths or [1.0], origin=origin)
    text = [str(v) for v in distinct]
    lengths = {len(t) for t in text}
    if len(lengths) == 1 and all(t.isdigit() for t in text):
        return masking(column, given)
    return _built(column, [[t, TOP] for t in sorted(text)], missing, "automatic")


def _numbers(column: str, values: Iterable[object]) -> tuple[dict[str, float], bool]:
    """The distinct numbers of ``values`` by their text, and whether any value is missing."""
    distinct, missing = _present(values)
    out: dict[str, float] = {}
    for value in distinct:
        text = str(value).strip()
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        out[text] = number
    bad = sum(not math.isfinite(number) for number in out.values())
    if bad:  # (counted: an error never quotes a value of the data)
        raise HierarchyError(
            f"column {column!r}: {bad} distinct value(s) are not finite numbers; a numeric "
            "hierarchy (intervals, cuts) needs numbers: clean the column, or give it a "
            "hierarchy of categories (groups, auto)"
        )
    return out, missing


def _sorted_rows(rows: list[list[str]], numbers: dict[str, float]) -> list[list[str]]:
    return sorted(rows, key=lambda row: numbers[row[0]])
