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
>>> masking("zip", ["13053", "14850"]).labels[1]
('1305*', '1485*')
>>> intervals("age", [17, 39, 90], widths=[10, 20]).labels[1]
('10-19', '30-39', '90-99')
"""

from __future__ import annotations

import csv
import io
import itertools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from safeshare.errors import SchemaError

TOP = "*"
MISSING_VALUE = "(missing)"


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

    def __post_init__(self) -> None:
        object.__setattr__(self, "_index", {v: i for i, v in enumerate(self.values)})
        numeric: dict[float, int] | None = {}
        for i, value in enumerate(self.values):
            try:
                number = float(value)
            except ValueError:
                numeric = None
                break
            if math.isfinite(number) and numeric is not None:
                numeric.setdefault(number, i)
        object.__setattr__(self, "_numeric", numeric or None)
        object.__setattr__(self, "_label_indexes", {})
        for array in self.maps:
            array.flags.writeable = False

    # ---- construction -------------------------------------------------------------------

    @classmethod
    def from_rows(
        cls, column: str, rows: Sequence[Sequence[str]], *, source: str = "rows"
    ) -> Hierarchy:
        """A hierarchy from rows ``[value, level 1, ..., top]``; checks shape and nesting."""
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
        value matches a row for ``(missing)``; the error names only the first bad value.
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
        found = pc.index_in(data, value_set=pa.array(self.values, type=data.type))
        if found.null_count:
            return None
        return np.asarray(found.to_numpy(), dtype=np.int32)

    def _code_of(self, text: str) -> int | None:
        code = self._index.get(text)
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

    def interval(self, level: int) -> np.ndarray | None:
        """For numeric hierarchies, each label's (low, high) over the values it covers."""
        if self._numeric is None or len(self._numeric) != len(self.values):
            return None
        numbers = np.fromiter(self._numeric, dtype=np.float64)  # (distinct: in value order)
        size = len(self.labels[level])
        low = np.full(size, np.inf)
        high = np.full(size, -np.inf)
        np.minimum.at(low, self.maps[level], numbers)
        np.maximum.at(high, self.maps[level], numbers)
        return np.stack([low, high], axis=1)

    def to_rows(self) -> list[list[str]]:
        return [
            [self.labels[level][self.maps[level][i]] for level in range(len(self.labels))]
            for i in range(len(self.values))
        ]


# ---- builders ---------------------------------------------------------------------------


def _distinct(values: Iterable[object]) -> list[object]:
    series = pd.Series(list(values), dtype=object)
    return list(pd.unique(series.dropna()))


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
    numbers = _numbers(column, values)
    integer = all(float(n).is_integer() for n in numbers) and all(w.is_integer() for w in widths)
    rows = []
    for text, number in numbers.items():
        row = [text]
        for width in widths:
            low = origin + math.floor((number - origin) / width) * width
            row.append(_number_label(low, low + width, integer))
        rows.append([*row, TOP])
    return Hierarchy.from_rows(column, _sorted_rows(rows, numbers), source="intervals")


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
    numbers = _numbers(column, values)
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
    return Hierarchy.from_rows(column, _sorted_rows(rows, numbers), source="cuts")


def dates(column: str, values: Iterable[object]) -> Hierarchy:
    """Dates: day -> month (YYYY-MM) -> year -> ``*``."""
    distinct = _distinct(values)
    parsed = pd.to_datetime(pd.Series([str(v) for v in distinct]), errors="coerce")
    bad = parsed.isna().to_numpy()
    if bad.any():
        raise HierarchyError(
            f"column {column!r}: the value {str(distinct[int(np.flatnonzero(bad)[0])])!r} is "
            "not a date; give dates such as 2024-03-31"
        )
    rows = [
        [str(v), f"{d.year:04d}-{d.month:02d}", f"{d.year:04d}", TOP]
        for v, d in sorted(zip(distinct, parsed, strict=True), key=lambda p: p[1])
    ]
    return Hierarchy.from_rows(column, rows, source="dates")


def masking(column: str, values: Iterable[object], *, char: str = "*") -> Hierarchy:
    """Strings masked right to left, one character per level (ZIP codes), then ``*``."""
    distinct = sorted(str(v) for v in _distinct(values))
    if not distinct:
        raise HierarchyError(f"column {column!r} has no values to build a masking hierarchy from")
    longest = max(len(v) for v in distinct)
    rows = []
    for value in distinct:
        row = [value]
        for level in range(1, longest):
            keep = max(len(value) - level, 0)
            row.append(value[:keep] + char * (len(value) - keep))
        rows.append([*row, TOP])
    return Hierarchy.from_rows(column, rows, source="masking")


def groupings(
    column: str, values: Iterable[object], levels: Sequence[Mapping[str, Sequence[object]]]
) -> Hierarchy:
    """Categorical groupings: ``levels[0]`` maps group -> values, ``levels[1]`` group -> groups."""
    distinct = [str(v) for v in _distinct(values)]
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
    rows = []
    for value in distinct:
        row, current = [value], value
        for number, parent in enumerate(parents, start=1):
            if current not in parent:
                raise HierarchyError(
                    f"column {column!r}: {current!r} is in no group at level {number}; "
                    "add it to one"
                )
            current = parent[current]
            row.append(current)
        rows.append([*row, TOP])
    return Hierarchy.from_rows(column, rows, source="groupings")


def automatic(column: str, values: Iterable[object]) -> Hierarchy:
    """A default: numbers in intervals of widths growing by 2-2.5-2, text masked or grouped to *."""
    distinct = _distinct(values)
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
        return intervals(column, distinct, widths or [1.0], origin=origin)
    text = [str(v) for v in distinct]
    lengths = {len(t) for t in text}
    if len(lengths) == 1 and all(t.isdigit() for t in text):
        return masking(column, text)
    return Hierarchy.from_rows(column, [[t, TOP] for t in sorted(text)], source="automatic")


def _numbers(column: str, values: Iterable[object]) -> dict[str, float]:
    out: dict[str, float] = {}
    for value in _distinct(values):
        text = str(value).strip()
        try:
            number = float(text)
        except ValueError:
            raise HierarchyError(
                f"column {column!r}: the value {text!r} is not a number; numeric hierarchies "
                "need numbers"
            ) from None
        if not math.isfinite(number):
            raise HierarchyError(f"column {column!r}: the value {text!r} is not a finite number")
        out[text] = number
    return out


def _sorted_rows(rows: list[list[str]], numbers: dict[str, float]) -> list[list[str]]:
    return sorted(rows, key=lambda row: numbers[row[0]])
