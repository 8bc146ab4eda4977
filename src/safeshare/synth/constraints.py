"""Public constraints (structural zeros) that every synthetic record must satisfy.

A constraint says: when some columns take certain values, others may only take
certain values ("age < 15 -> marital-status = Never-married").  It is public
knowledge, so it costs no budget; the model gives the forbidden combinations
probability zero, so no sampled record violates it.

Conditions list category labels, or ``[min, max]`` for numeric and date columns
(a bin matches when it lies inside the range)::

    constraints:
      - when: {age: [0, 15]}
        then: {marital-status: [Never-married]}
      - order: [admitted, released]

An ``order`` constraint (:class:`Order`) names numeric or date columns whose values every
record keeps in non-decreasing order; it is kept by every method, after decoding.

>>> from safeshare.data import Column, Domain, Kind
>>> domain = Domain((Column("age", Kind.NUMERIC, edges=(0, 15, 40, 90), missing=False),
...                  Column("married", Kind.CATEGORICAL, categories=("no", "yes"), other=False,
...                         missing=False)))
>>> rule = Constraint.from_dict({"when": {"age": [0, 15]}, "then": {"married": ["no"]}}, domain)
>>> rule.attrs, rule.allowed.tolist()
(('age', 'married'), [[True, False], [True, True], [True, True]])
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

import numpy as np

from safeshare.data.domain import Column, Domain, Kind, day_number
from safeshare.errors import SchemaError


@dataclass(frozen=True)
class Constraint:
    """The allowed cells of the contingency table over ``attrs`` (domain order)."""

    attrs: tuple[str, ...]
    allowed: np.ndarray

    @classmethod
    def from_dict(cls, data: Any, domain: Domain) -> Constraint:
        if (
            not isinstance(data, dict)
            or not isinstance(data.get("when"), dict)
            or not isinstance(data.get("then"), dict)
        ):
            raise SchemaError(
                "a constraint needs 'when: {column: values}' and 'then: {column: values}'"
            )
        when, then = data["when"], data["then"]
        overlap = sorted(set(when) & set(then))
        if overlap:
            raise SchemaError(f"constraint columns {overlap} appear in both 'when' and 'then'")
        attrs = tuple(n for n in domain.names if n in when or n in then)
        unknown = sorted((set(when) | set(then)) - set(attrs))
        if unknown:
            raise SchemaError(
                f"constraint names unknown columns {unknown}; the table has {list(domain.names)}"
            )
        shape = domain.shape(attrs)
        condition = np.ones(shape, dtype=bool)
        consequence = np.ones(shape, dtype=bool)
        for axis, name in enumerate(attrs):
            spec = when.get(name, then.get(name))
            match = _matching_codes(domain[name], spec)
            view = [1] * len(attrs)
            view[axis] = shape[axis]
            if name in when:
                condition &= match.reshape(view)
            else:
                consequence &= match.reshape(view)
        allowed = ~condition | consequence
        if not allowed.any():
            raise SchemaError(f"constraint over {list(attrs)} forbids every combination")
        return cls(attrs, allowed)


@dataclass(frozen=True)
class Order:
    """Numeric or date columns whose values every record keeps in non-decreasing order
    (``order: [admitted, released]``: no one leaves before arriving).  Public, so it costs no
    budget; kept by sorting each released record's values in the group after decoding
    (:func:`safeshare.data.codec.decode_table`), whatever the method; a missing value is
    left missing.

    >>> Order.from_dict({"order": ["in", "out"]}, {"in": Kind.DATETIME, "out": Kind.DATETIME})
    Order(columns=('in', 'out'))
    """

    columns: tuple[str, ...]

    @staticmethod
    def fits(kinds: set[Kind]) -> bool:
        """Whether columns of ``kinds`` can be kept in order: all numeric or all dates."""
        return kinds <= {Kind.NUMERIC, Kind.DATETIME} and len(kinds) <= 1

    @staticmethod
    def declared_by(item: Any) -> bool:
        """Whether a schema's constraint is an order (else a structural zero)."""
        return isinstance(item, dict) and "order" in item

    @classmethod
    def from_dict(cls, data: Any, kinds: Mapping[str, Kind | None]) -> Order:
        """The order a schema declares, against the kinds of the columns the release models
        (None: a kind not known yet, which any kind fits)."""
        columns = data.get("order") if isinstance(data, dict) else None
        if not isinstance(columns, list) or set(data) != {"order"} or len(columns) < 2:
            raise SchemaError(
                "an order constraint names two or more columns and nothing else: "
                "order: [admitted, released]"
            )
        columns = [str(c) for c in columns]
        unknown = [c for c in columns if c not in kinds]
        if unknown:
            raise SchemaError(
                f"order constraint names {unknown[0]!r}, which the release does not model; "
                f"choose among {sorted(kinds)}"
            )
        found = {kind for c in columns if (kind := kinds[c]) is not None}
        if not Order.fits(found):
            raise SchemaError(
                f"order constraint over {columns}: its columns must all be numeric or all "
                f"dates, not {sorted(str(k) for k in found)}"
            )
        return cls(tuple(columns))


def parse_constraints(items: Sequence[Any] | None, domain: Domain) -> list[Constraint]:
    return [Constraint.from_dict(item, domain) for item in items or ()]


def violations(constraints: Sequence[Constraint], codes: dict[str, np.ndarray]) -> int:
    """How many records break at least one constraint (0 for a model that respects them)."""
    broken = np.zeros(len(next(iter(codes.values()))) if codes else 0, dtype=bool)
    for constraint in constraints:
        index = tuple(codes[a] for a in constraint.attrs)
        broken |= ~constraint.allowed[index]
    return int(broken.sum())


def _matching_codes(column: Column, spec: Any) -> np.ndarray:
    match = np.zeros(column.size, dtype=bool)
    if column.is_categorical:
        values = [str(v) for v in (spec if isinstance(spec, list) else [spec])]
        unknown = [v for v in values if v not in column.categories]
        if unknown:
            raise SchemaError(
                f"constraint on {column.name!r}: {unknown} are not among its categories"
            )
        for value in values:
            match[column.categories.index(value)] = True
        return match
    if not (isinstance(spec, list) and len(spec) == 2):
        raise SchemaError(
            f"constraint on {column.name!r}: give a range [min, max] for a {column.kind} column"
        )
    lo, hi = (day_number(v) if isinstance(v, date) else float(v) for v in spec)
    edges = np.asarray(column.edges)
    match[: column.n_values] = (edges[:-1] >= lo) & (edges[1:] <= hi)
    return match
