"""Released values as *sets* of codes: exact values, intervals, hierarchy nodes, masks, ``*``.

An anonymized table writes generalized values: ``[30, 40)``, ``30-39`` or ``>=65`` for an age,
``Never-married|Divorced`` for a group of categories, ``130**`` for a masked postcode, ``*``
for a suppressed cell.  Each released cell becomes the set of the column's codes it stands for
(a boolean mask over the codes), so that an attacker's exact value *matches by containment*.
A named hierarchy node ("spouse not present") stands for the leaves under it when the
hierarchy is given (``hierarchies``: per column, node label -> leaf values, e.g. from an ARX
hierarchy file); a label that none of these readings explains is taken to stand for any
value, and counted.

>>> from safeshare.data import Column, Domain, Kind
>>> import pandas as pd
>>> domain = Domain((Column("age", Kind.NUMERIC, edges=tuple(range(0, 101, 10)), integer=True),
...                  Column("status", Kind.CATEGORICAL, categories=("Married", "Divorced", "Never"))))
>>> frame = pd.DataFrame({"age": ["[30, 40)", "45", "*"], "status": ["Divorced|Never", "Married", "*"]})
>>> cells = cell_sets(frame, domain)
>>> cells.mask("age", 0).nonzero()[0].tolist(), cells.mask("status", 0).nonzero()[0].tolist()
([3], [1, 2])
>>> cells.generalized
{'age': 1, 'status': 2}
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

import numpy as np
import pandas as pd

from safeshare.data.domain import Column, Domain
from safeshare.data.readers import FORMULA_START
from safeshare.data.table import Table

_INTERVAL = re.compile(
    r"^\s*([\[\(])\s*(-?inf|-?[\d.]+(?:[eE][-+]?\d+)?)\s*[,;]\s*(-?inf|[-+]?[\d.]+(?:[eE][-+]?\d+)?)\s*([\]\)])\s*$"
)
_RANGE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*(?:-|\.\.|to)\s*(-?\d+(?:\.\d+)?)\s*$")
_ONE_SIDED = re.compile(r"^\s*(<=|>=|<|>|\u2264|\u2265)\s*(-?[\d.]+(?:[eE][-+]?\d+)?)\s*$")
_SEPARATORS = re.compile(r"\s*[|;]\s*")
_WILDCARDS = {"*", "**", "***", "(any)", "any"}
# the ``'`` a CSV writer puts before a cell a spreadsheet would run as a formula (``'-40--21``)
_NEUTRALIZED = "^'(?=[" + re.escape("".join(FORMULA_START)) + "])"


@dataclass(frozen=True)
class CellSets:
    """Per column, the distinct code sets (masks) and which one each row holds."""

    domain: Domain
    masks: dict[str, np.ndarray]
    rows: dict[str, np.ndarray]
    generalized: dict[str, int]
    unexplained: dict[str, int]

    def __len__(self) -> int:
        first = next(iter(self.rows.values()), None)
        return 0 if first is None else len(first)

    def mask(self, column: str, row: int) -> np.ndarray:
        return self.masks[column][self.rows[column][row]]

    @property
    def is_generalized(self) -> bool:
        return any(self.generalized.values())

    def covers(self) -> dict[str, tuple[np.ndarray, np.ndarray]]:
        """For each column where some cell covers several codes, each row's code (``size + i``
        for the ``i``-th such set) and those sets' masks: what
        :class:`~safeshare.evaluate.neighbors.GowerIndex` reads as a generalized reference.

        >>> from safeshare.data import Column, Domain, Kind
        >>> domain = Domain((Column("sex", Kind.CATEGORICAL, categories=("F", "M")),))
        >>> cells = cell_sets(pd.DataFrame({"sex": ["F", "*", "M"]}), domain)
        >>> codes, masks = cells.covers()["sex"]
        >>> codes.tolist(), masks.sum(axis=1).tolist()
        ([0, 4, 1], [4])
        """
        out = {}
        for column in self.domain:
            masks = self.masks[column.name]
            wide = masks.sum(axis=1) > 1
            if not wide.any() or not wide[np.unique(self.rows[column.name])].any():
                continue  # (a plain release: no set covers two codes, nothing to sort)
            code = np.where(wide, column.size + np.cumsum(wide) - 1, masks.argmax(axis=1))
            out[column.name] = (code[self.rows[column.name]], masks[wide])
        return out

    def impute(self, rng: np.random.Generator) -> Table:
        """One code per cell, drawn uniformly from its set: a coded table for the other measures.

        A set that covers values draws among them, never the ``(other)`` and ``(missing)``
        codes it also covers (``*`` stands for a value: drawing those buckets skewed every
        distance and marginal).

        >>> from safeshare.data import Column, Domain, Kind
        >>> domain = Domain((Column("sex", Kind.CATEGORICAL, categories=("F", "M")),))
        >>> cells = cell_sets(pd.DataFrame({"sex": ["*"] * 400}), domain)
        >>> sorted(set(cells.impute(np.random.default_rng(0)).column("sex").tolist()))
        [0, 1]
        """
        codes = {}
        for name, masks in self.masks.items():
            column = self.domain[name]
            buckets = [c for c in (column.other_code, column.missing_code) if c is not None]
            choice = np.empty(len(masks), dtype=object)
            for p, mask in enumerate(masks):
                values = mask.copy()
                values[buckets] = False
                choice[p] = np.flatnonzero(values if values.any() else mask)
            sizes = np.array([len(c) for c in choice])
            rows = self.rows[name]
            offsets = np.floor(rng.random(len(rows)) * sizes[rows]).astype(np.int64)
            flat = np.concatenate(list(choice)) if len(choice) else np.zeros(0, dtype=np.int64)
            starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
            codes[name] = flat[starts[rows] + offsets]
        return Table(codes, self.domain)


def from_table(table: Table) -> CellSets:
    """The sets of a coded table: every cell a single code."""
    masks = {c.name: np.eye(c.size, dtype=bool) for c in table.domain}
    rows = {c.name: table.column(c.name).astype(np.int64) for c in table.domain}
    zeros = {c.name: 0 for c in table.domain}
    return CellSets(table.domain, masks, rows, zeros, dict(zeros))


def cell_sets(
    frame: pd.DataFrame,
    domain: Domain,
    hierarchies: Mapping[str, Mapping[str, Collection[str]]] | None = None,
) -> CellSets:
    """Read every column of ``domain`` from ``frame`` as code sets."""
    masks, rows, generalized, unexplained = {}, {}, {}, {}
    for column in domain:
        text = frame[column.name].astype("string").str.strip()
        text = text.str.replace(_NEUTRALIZED, "", regex=True)
        values, inverse = np.unique(text.fillna("\x00").to_numpy(dtype=str), return_inverse=True)
        nodes = (hierarchies or {}).get(column.name, {})
        parsed = [_parse(None if v == "\x00" else v, column, nodes) for v in values]
        masks[column.name] = np.array([m for m, _ in parsed], dtype=bool).reshape(
            len(values), column.size
        )
        rows[column.name] = inverse.ravel().astype(np.int64)
        counts = np.bincount(inverse.ravel(), minlength=len(values))
        wide = np.array([m.sum() > 1 for m, _ in parsed])
        generalized[column.name] = int(counts[wide].sum()) if len(values) else 0
        unexplained[column.name] = (
            int(counts[np.array([not ok for _, ok in parsed], dtype=bool)].sum())
            if len(values)
            else 0
        )
    return CellSets(domain, masks, rows, generalized, unexplained)


def _parse(
    value: str | None, column: Column, nodes: Mapping[str, Collection[str]] | None = None
) -> tuple[np.ndarray, bool]:
    """The code set of one released value, and whether the value was understood."""
    mask = np.zeros(column.size, dtype=bool)
    if value is None or value in {"", "(missing)"}:
        if column.missing_code is not None:
            mask[column.missing_code] = True
            return mask, True
        return ~mask, False
    if value in _WILDCARDS:
        return ~mask, True
    single = _exact(value, column)
    if single is not None:
        mask[single] = True
        return mask, True
    if nodes and value in nodes:
        for leaf in nodes[value]:
            code = _exact(str(leaf), column)
            if code is not None:
                mask[code] = True
        return (mask, True) if mask.any() else (~mask, False)
    parts = [p for p in _SEPARATORS.split(value.strip("{}")) if p]
    if len(parts) > 1:
        results = [_parse(p, column, nodes) for p in parts]
        if all(ok for _, ok in results):
            return np.logical_or.reduce([m for m, _ in results]), True
    bounds = _bounds(value)
    if bounds is not None:
        return _within(column, *bounds), True
    if "*" in value:
        return _masked(value, column), True
    return ~mask, False


def _exact(value: str, column: Column) -> int | None:
    if column.is_categorical:
        if value in column.categories:
            return column.categories.index(value)
        number = _number(value)
        if number is not None:
            for code, category in enumerate(column.categories):
                if _number(category) == number:
                    return code
        if value == "(other)" and column.other_code is not None:
            return column.other_code
        return None
    number = _number(value)
    if number is None:
        return None
    edges = np.asarray(column.edges)
    return int(np.clip(np.searchsorted(edges, number, side="right") - 1, 0, len(edges) - 2))


def _bounds(value: str) -> tuple[float, float, bool, bool] | None:
    """``(low, high, low_closed, high_closed)`` of an interval or an ``a-b`` range."""
    match = _INTERVAL.match(value)
    if match:
        low, high = float(match.group(2)), float(match.group(3))
        return low, high, match.group(1) == "[", match.group(4) == "]"
    match = _RANGE.match(value)
    if match:
        return float(match.group(1)), float(match.group(2)), True, True
    match = _ONE_SIDED.match(value)  # ``<18``, ``>=65`` (what the ``cuts`` builder writes)
    if match and _number(match.group(2)) is not None:
        bound, sign = float(match.group(2)), match.group(1)
        if sign in ("<", "<=", "\u2264"):
            return -math.inf, bound, False, sign != "<"
        return bound, math.inf, sign != ">", False
    return None


def _within(
    column: Column, low: float, high: float, low_closed: bool, high_closed: bool
) -> np.ndarray:
    """Codes whose values (or bins) meet the interval."""
    mask = np.zeros(column.size, dtype=bool)
    if column.is_categorical:
        for code, category in enumerate(column.categories):
            x = _number(category)
            if (
                x is not None
                and (low < x or (low_closed and x == low))
                and (x < high or (high_closed and x == high))
            ):
                mask[code] = True
        return mask
    edges = np.asarray(column.edges)
    for b in range(column.n_values):
        lo, hi = edges[b], edges[b + 1]
        last = b == column.n_values - 1
        if (hi > low or (last and hi == low)) and (lo < high or (high_closed and lo == high)):
            mask[b] = True
    return mask


def _masked(value: str, column: Column) -> np.ndarray:
    """``130**``: categories of the same length agreeing on every unmasked character."""
    pattern = re.compile("^" + re.escape(value).replace(r"\*", ".") + "$")
    mask = np.zeros(column.size, dtype=bool)
    if column.is_categorical:
        for code, category in enumerate(column.categories):
            mask[code] = bool(pattern.match(category))
        return mask
    low, high = _number(value.replace("*", "0")), _number(value.replace("*", "9"))
    if low is None or high is None:
        return ~mask
    return _within(column, low, high, True, True)


def _number(text: str) -> float | None:
    try:
        x = float(text)
    except ValueError:
        return None
    return x if math.isfinite(x) else None
