"""The Domain: the public shape of a table, shared by every component.

A :class:`Domain` is a frozen tuple of :class:`Column` declarations.  Each column
has a *kind* (how its values are read), a *role* (what it means for privacy) and,
for the kinds safeshare models, a finite set of integer codes: categories for
categorical/ordinal columns, bins for numeric/datetime columns, plus a code for
values outside the declared categories (``other``) and one for missing values.

>>> age = Column("age", Kind.NUMERIC, edges=(0, 30, 60, 90), integer=True)
>>> sex = Column("sex", Kind.CATEGORICAL, categories=("F", "M"))
>>> domain = Domain((age, sex))
>>> domain.shape()
(4, 4)
>>> sex.labels()
('F', 'M', '(other)', '(missing)')
>>> domain.project(["sex"]).names
('sex',)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
from enum import StrEnum
from typing import Any

from safeshare.errors import SchemaError

OTHER_LABEL = "(other)"
MISSING_LABEL = "(missing)"
_EPOCH = date(1970, 1, 1)


class Kind(StrEnum):
    """How a column's values are read."""

    CATEGORICAL = "categorical"
    ORDINAL = "ordinal"
    NUMERIC = "numeric"
    DATETIME = "datetime"
    TEXT = "text"


class Role(StrEnum):
    """What a column means for privacy."""

    IDENTIFIER = "identifier"
    QUASI_IDENTIFIER = "quasi_identifier"
    SENSITIVE = "sensitive"
    OTHER = "other"


def day_number(value: date) -> float:
    """Days since 1970-01-01: how datetime bin edges are stored."""
    return float((value - _EPOCH).days)


def date_of(day: float) -> date:
    """The date of a day number (the inverse of :func:`day_number`)."""
    return _EPOCH + timedelta(days=math.floor(day))


@dataclass(frozen=True)
class Column:
    """One column's public declaration.

    ``categories`` lists the values of a categorical or ordinal column (in order
    for ordinal ones).  ``edges`` are the bin edges of a numeric column (values)
    or a datetime column (day numbers): ``len(edges) - 1`` bins, the first and
    last edge being the column's bounds.  ``missing`` adds a code for missing
    values; ``other`` (categorical/ordinal) adds a code for values outside
    ``categories``.  ``cells`` and ``weights`` (numeric/datetime, optional) are a finer
    histogram - cell edges and a non-negative weight per cell, e.g. DP discovery's noisy
    counts - that decoding follows inside each bin instead of drawing uniformly; cells
    beyond the bounds are the tails of the values clipped into the first and last bins,
    which decode into them.  ``missing_label`` (categorical/ordinal) is how a decoded
    missing value is written ('?' where the input writes it so; empty by default);
    ``date_format`` (datetime) is the layout dates are read and written in
    (:mod:`safeshare.data.dates`; empty: ISO 8601 days).  ``strays_missing`` (numeric/datetime)
    reads a value that is no number (no date) as missing instead of refusing it: for a column
    whose kind DP measured (:mod:`safeshare.dp.kinds`), where a few such values may remain.
    """

    name: str
    kind: Kind
    role: Role = Role.OTHER
    categories: tuple[str, ...] = ()
    edges: tuple[float, ...] = ()
    integer: bool = False
    missing: bool = True
    other: bool = True
    cells: tuple[float, ...] = ()
    weights: tuple[float, ...] = ()
    missing_label: str = ""
    date_format: str = ""
    strays_missing: bool = False

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", Kind(self.kind))
        object.__setattr__(self, "role", Role(self.role))
        object.__setattr__(self, "categories", tuple(str(c) for c in self.categories))
        object.__setattr__(self, "edges", tuple(float(e) for e in self.edges))
        object.__setattr__(self, "cells", tuple(float(e) for e in self.cells))
        object.__setattr__(self, "weights", tuple(float(w) for w in self.weights))
        where = f"column {self.name!r}"
        if not self.name:
            raise SchemaError("a column has an empty name; give every column a name")
        if not self.encodable:
            return
        if self.is_categorical:
            if len(set(self.categories)) != len(self.categories):
                raise SchemaError(f"{where}: categories repeat a value; list each category once")
            if not self.categories and not self.other:
                raise SchemaError(f"{where}: no categories declared; list them or allow 'other'")
        else:
            if len(self.edges) < 2:
                raise SchemaError(f"{where}: a {self.kind} column needs at least two bin edges")
            if not all(math.isfinite(e) for e in self.edges):
                raise SchemaError(f"{where}: bin edges must be finite numbers")
            if any(b <= a for a, b in zip(self.edges, self.edges[1:], strict=False)):
                raise SchemaError(f"{where}: bin edges must increase strictly")
            self._check_cells(where)

    def _check_cells(self, where: str) -> None:
        if not self.cells and not self.weights:
            return
        if len(self.cells) != len(self.weights) + 1 or len(self.cells) < 2:
            raise SchemaError(f"{where}: give one weight per cell between the cell edges")
        if any(b <= a for a, b in zip(self.cells, self.cells[1:], strict=False)):
            raise SchemaError(f"{where}: cell edges must increase strictly")
        if not all(math.isfinite(w) and w >= 0 for w in self.weights):
            raise SchemaError(f"{where}: cell weights must be finite and non-negative")

    @property
    def encodable(self) -> bool:
        """Whether the column is modelled as codes (not text, not an identifier)."""
        return self.kind is not Kind.TEXT and self.role is not Role.IDENTIFIER

    @property
    def is_categorical(self) -> bool:
        return self.kind in (Kind.CATEGORICAL, Kind.ORDINAL)

    @property
    def n_values(self) -> int:
        """Codes for real values: categories or bins (without other/missing)."""
        return len(self.categories) if self.is_categorical else max(len(self.edges) - 1, 0)

    @property
    def other_code(self) -> int | None:
        return self.n_values if (self.is_categorical and self.other) else None

    @property
    def missing_code(self) -> int | None:
        if not self.missing:
            return None
        return self.n_values + (1 if self.other_code is not None else 0)

    @property
    def size(self) -> int:
        """The number of codes of the column."""
        return self.n_values + (self.other_code is not None) + self.missing

    @property
    def bounds(self) -> tuple[float, float]:
        return self.edges[0], self.edges[-1]

    def labels(self) -> tuple[str, ...]:
        """A readable label per code, e.g. ``'[30, 60)'`` for a bin."""
        values = (
            list(self.categories)
            if self.is_categorical
            else [self._bin_label(i) for i in range(self.n_values)]
        )
        if self.other_code is not None:
            values.append(OTHER_LABEL)
        if self.missing:
            values.append(MISSING_LABEL)
        return tuple(values)

    def _bin_label(self, i: int) -> str:
        lo, hi = self.edges[i], self.edges[i + 1]
        last = i == self.n_values - 1
        if self.integer and self.kind is Kind.NUMERIC:
            first, final = math.ceil(lo), math.floor(hi) if last else math.ceil(hi) - 1
            return str(first) if final <= first else f"{first}-{final}"
        closing = "]" if last else ")"
        return f"[{self._edge_label(lo)}, {self._edge_label(hi)}{closing}"

    def _edge_label(self, edge: float) -> str:
        if self.kind is Kind.DATETIME:
            return date_of(edge).isoformat()
        return f"{edge:g}"

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready declaration (the inverse of :meth:`from_dict`)."""
        out: dict[str, Any] = {"name": self.name, "kind": str(self.kind), "role": str(self.role)}
        if self.is_categorical:
            out["categories"] = list(self.categories)
            out["other"] = self.other
            if self.missing_label:
                out["missing_label"] = self.missing_label
        elif self.encodable:
            out["edges"] = list(self.edges)
            out["integer"] = self.integer
            if self.cells:
                out["cells"] = list(self.cells)
                out["weights"] = list(self.weights)
            if self.date_format:
                out["date_format"] = self.date_format
            if self.strays_missing:
                out["strays_missing"] = True
        out["missing"] = self.missing
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Column:
        return cls(
            name=data["name"],
            kind=Kind(data["kind"]),
            role=Role(data.get("role", "other")),
            categories=tuple(data.get("categories", ())),
            edges=tuple(data.get("edges", ())),
            integer=bool(data.get("integer", False)),
            missing=bool(data.get("missing", True)),
            other=bool(data.get("other", True)),
            cells=tuple(data.get("cells", ())),
            weights=tuple(data.get("weights", ())),
            missing_label=str(data.get("missing_label", "")),
            date_format=str(data.get("date_format", "")),
            strays_missing=bool(data.get("strays_missing", False)),
        )


@dataclass(frozen=True)
class Domain:
    """An ordered, immutable set of columns with unique names."""

    columns: tuple[Column, ...]
    _index: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", tuple(self.columns))
        index: dict[str, int] = {}
        for position, column in enumerate(self.columns):
            if column.name in index:
                raise SchemaError(f"column {column.name!r} is declared twice; keep one")
            index[column.name] = position
        object.__setattr__(self, "_index", index)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)

    def __getitem__(self, name: str) -> Column:
        try:
            return self.columns[self._index[name]]
        except KeyError:
            raise SchemaError(
                f"unknown column {name!r}; the domain has {list(self.names)}"
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._index

    def __iter__(self) -> Iterator[Column]:
        return iter(self.columns)

    def __len__(self) -> int:
        return len(self.columns)

    def position(self, name: str) -> int:
        self[name]  # raises a clear error for unknown names
        return self._index[name]

    def shape(self, names: Sequence[str] | None = None) -> tuple[int, ...]:
        """The number of codes of each named column (all columns by default)."""
        return tuple(self[n].size for n in (self.names if names is None else names))

    def size(self, names: Sequence[str] | None = None) -> int:
        """The number of cells of the contingency table over ``names``."""
        return math.prod(self.shape(names))

    def project(self, names: Iterable[str]) -> Domain:
        return Domain(tuple(self[n] for n in names))

    def drop(self, names: Iterable[str]) -> Domain:
        gone = set(names)
        return Domain(tuple(c for c in self.columns if c.name not in gone))

    def with_column(self, column: Column) -> Domain:
        """A copy with ``column`` replacing the column of the same name (or appended)."""
        if column.name not in self:
            return Domain((*self.columns, column))
        return Domain(tuple(column if c.name == column.name else c for c in self.columns))

    def with_roles(self, roles: dict[str, Role]) -> Domain:
        return Domain(tuple(replace(c, role=roles.get(c.name, c.role)) for c in self.columns))

    def to_dict(self) -> dict[str, Any]:
        return {"columns": [c.to_dict() for c in self.columns]}

    @classmethod
    def from_sizes(cls, sizes: Mapping[str, int]) -> Domain:
        """A domain of integer-coded columns (codes ``0..size-1``, no other/missing code).

        The form of Private-PGM's ``domain.json``:

        >>> Domain.from_sizes({"age": 85, "sex": 2}).shape()
        (85, 2)
        """
        return cls(
            tuple(
                Column(
                    name,
                    Kind.CATEGORICAL,
                    categories=tuple(str(i) for i in range(size)),
                    other=False,
                    missing=False,
                )
                for name, size in sizes.items()
            )
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Domain:
        return cls(tuple(Column.from_dict(c) for c in data["columns"]))
