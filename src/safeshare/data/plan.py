"""Deciding, per column, where its domain comes from, before any budget is spent.

A column's domain comes from the schema (public, free), from the data through a
DP mechanism (costs budget), or from the data without DP (``unsafe``, flagged);
identifiers and free text are dropped.  Kinds the schema does not give are
guessed from the data: measured with DP where a release passes ``measured`` guesses
(:mod:`safeshare.dp.kinds`), else read without DP (flagged in the card).

>>> import pandas as pd
>>> from safeshare.data.schema import Schema
>>> frame = pd.DataFrame({"sex": ["F", "M"] * 20, "name": [f"n{i}" for i in range(40)]})
>>> schema = Schema.from_dict({"columns": {"sex": {"kind": "categorical", "categories": ["F", "M"]}}})
>>> [(d.name, str(d.source)) for d in decide_columns(frame, schema)]
[('sex', 'schema'), ('name', 'dropped')]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

import numpy as np
import pandas as pd

from safeshare.data.codec import (
    as_numbers,
    encode_frame,
    integer_edges,
    singleton_edges,
    value_edges,
)
from safeshare.data.domain import Column, Domain, Kind, Role
from safeshare.data.inference import GuessedColumn, infer_columns
from safeshare.data.schema import DEFAULT_BINS, MAX_SINGLETON_INTEGERS, ColumnSpec, Schema
from safeshare.errors import SchemaError

MAX_UNSAFE_CATEGORIES = 100


class Source(StrEnum):
    SCHEMA = "schema"
    DP = "dp"
    NOT_DP = "not dp"
    DROPPED = "dropped"


@dataclass(frozen=True)
class ColumnDecision:
    """Where one column's domain comes from (and, for dropped columns, why)."""

    name: str
    kind: Kind
    role: Role
    source: Source
    reason: str | None = None
    kind_guessed: bool = False
    integer: bool = False
    spec: ColumnSpec | None = None
    date_format: str = ""
    kind_measured: bool = False  # the guess came from a DP measurement (safeshare.dp.kinds)

    @property
    def modelled(self) -> bool:
        return self.source is not Source.DROPPED


def guessed_names(columns: Sequence[str], schema: Schema | None) -> list[str]:
    """The columns whose kind no schema gives, so a guess must decide it: a public choice,
    made from the header and the schema alone.

    >>> guessed_names(["age", "sex"], None)
    ['age', 'sex']
    """
    return [str(n) for n in columns if schema is None or _needs_guess(schema.spec(str(n)))]


def decide_columns(
    frame: pd.DataFrame,
    schema: Schema | None = None,
    *,
    unsafe: bool = False,
    measured: Mapping[str, GuessedColumn] | None = None,
) -> list[ColumnDecision]:
    """One decision per column of ``frame``; schema columns absent from it are an error.

    ``measured``: the DP guesses (:mod:`safeshare.dp.kinds`) of the columns
    :func:`guessed_names` gives; without them the kinds are read from ``frame`` without DP."""
    _check_present(list(frame.columns), schema)
    needs_guess = guessed_names(list(frame.columns), schema)
    if measured is not None:
        guesses = dict(measured)
    else:
        guesses = {g.name: g for g in infer_columns(frame[needs_guess])} if needs_guess else {}
    decisions = [
        _decision(name, schema, guesses.get(name), unsafe=unsafe, measured=measured is not None)
        for name in map(str, frame.columns)
    ]
    if not any(d.modelled for d in decisions):
        raise SchemaError(
            "every column was dropped as an identifier or free text; nothing is left to release. "
            "Declare the columns to keep in a schema"
        )
    return decisions


def declared_columns(columns: Sequence[str], schema: Schema | None) -> list[ColumnDecision]:
    """The decisions the schema makes alone, before any value is read: one for each column of
    ``columns`` whose kind it gives (:func:`guessed_names` are the others).

    >>> declared_columns(["age"], None)
    []
    """
    _check_present(columns, schema)
    guessed = set(guessed_names(columns, schema))
    return [
        _decision(str(name), schema, None, unsafe=False, measured=False)
        for name in columns
        if str(name) not in guessed
    ]


def _check_present(columns: Sequence[str], schema: Schema | None) -> None:
    """Refuse a schema that declares columns the data lack."""
    if schema is not None:
        absent = [n for n in schema.names if n not in columns]
        if absent:
            raise SchemaError(
                f"columns {absent} are declared in {schema.source} but absent from the data; "
                f"the data has {list(map(str, columns))}"
            )


def _decision(
    name: str,
    schema: Schema | None,
    guess: GuessedColumn | None,
    *,
    unsafe: bool,
    measured: bool,
) -> ColumnDecision:
    """Column ``name``'s decision from the schema and, where it gives no kind, ``guess``
    (``measured``: guessed with DP)."""
    spec = schema.spec(name) if schema is not None else None
    kind = (
        spec.kind
        if spec is not None and spec.kind is not None
        else (guess.kind if guess else Kind.TEXT)
    )
    role = spec.role if spec is not None else Role.OTHER
    integer = (
        bool(spec.integer)
        if spec is not None and spec.integer is not None
        else bool(guess and guess.integer)
    )
    guessed = spec is None or spec.kind is None
    reason = _drop_reason(spec, guess, kind, role)
    if reason is not None:
        source = Source.DROPPED
        if not reason.startswith("free text"):
            role = Role.IDENTIFIER
    elif spec is not None and spec.complete:
        source = Source.SCHEMA
    else:
        source = Source.NOT_DP if unsafe else Source.DP
    date_format = (
        spec.format
        if spec is not None and spec.format
        else (guess.date_format if guess and kind is Kind.DATETIME else "")
    )
    return ColumnDecision(
        name, kind, role, source, reason, guessed, integer, spec, date_format,
        kind_measured=measured and guess is not None,
    )  # fmt: skip


LEFT_OUT = "its range did not stand above the discovery noise at this budget"


def left_out(decisions: list[ColumnDecision], domain: Domain) -> list[ColumnDecision]:
    """The decisions, with each modelled column ``domain`` lacks (DP discovery found no
    range above the noise for it) dropped for that reason.

    >>> kept = ColumnDecision("age", Kind.NUMERIC, Role.OTHER, Source.DP)
    >>> [d.reason for d in left_out([kept], Domain(()))]
    ['its range did not stand above the discovery noise at this budget']
    """
    return [
        replace(d, source=Source.DROPPED, reason=LEFT_OUT)
        if d.modelled and d.name not in domain.names
        else d
        for d in decisions
    ]


def _needs_guess(spec: ColumnSpec | None) -> bool:
    return spec is None or (spec.kind is None and spec.role is not Role.IDENTIFIER)


def _drop_reason(
    spec: ColumnSpec | None, guess: GuessedColumn | None, kind: Kind, role: Role
) -> str | None:
    if role is Role.IDENTIFIER:
        return "declared identifier"
    guessed_reason = guess.identifier if guess is not None else None
    if guessed_reason and (spec is None or kind is Kind.TEXT):
        return guessed_reason
    if kind is Kind.TEXT:
        return "free text: not modelled"
    return None


def check_values(frame: pd.DataFrame, decisions: list[ColumnDecision]) -> None:
    """Raise the encoding error a release would meet later, before any budget is spent.

    Columns the schema fixes are encoded in full; numeric and date columns whose
    domain is still to be found must at least parse, unless DP measured their kind (a few
    values of another class are then read as missing: :attr:`Column.strays_missing`).
    """
    declared = [d for d in decisions if d.source is Source.SCHEMA and d.spec is not None]
    if declared:
        encode_frame(frame, Domain(tuple(d.spec.to_column(d.name) for d in declared if d.spec)))
    for d in decisions:
        if (
            d.modelled
            and d.source is not Source.SCHEMA
            and d.kind in (Kind.NUMERIC, Kind.DATETIME)
            and not d.kind_measured
        ):
            as_numbers(frame[d.name], d.name, d.kind, d.kind_guessed, d.date_format)


def infer_column_unsafe(
    values: pd.Series,
    decision: ColumnDecision,
    *,
    max_categories: int = MAX_UNSAFE_CATEGORIES,
    max_singletons: int = MAX_SINGLETON_INTEGERS,
    bins: int | None = None,
    per_value: bool = False,
) -> Column:
    """A column's domain read straight from the data: NOT differentially private.

    Categories are the observed values (the ``max_categories`` most frequent, the rest
    folded into "(other)"); numeric bounds are the observed min and max (unless the
    schema gives them), integers one code each below ``max_singletons`` values, else
    ``bins`` bins (default: the schema's, else ``DEFAULT_BINS``).  With ``per_value`` any
    numbers holding at most ``max_singletons`` distinct values (decimals, or integers over a
    wider range, such as postcodes) get one code per distinct value (where the schema gives
    no bounds).
    """
    spec = decision.spec
    present = values.dropna()
    if decision.kind in (Kind.CATEGORICAL, Kind.ORDINAL):
        counts = present.astype("string").str.strip().value_counts()
        categories = tuple(sorted(map(str, counts.index[:max_categories])))
        return Column(decision.name, decision.kind, decision.role, categories=categories)
    numbers = as_numbers(present, decision.name, decision.kind, date_format=decision.date_format)
    numbers = numbers[~np.isnan(numbers)]
    lower = spec.lower if spec is not None else None
    upper = spec.upper if spec is not None else None
    lo = lower if lower is not None else (float(numbers.min()) if numbers.size else 0.0)
    hi = upper if upper is not None else (float(numbers.max()) if numbers.size else lo + 1.0)
    if bins is None:
        bins = spec.bins if spec is not None and spec.bins else DEFAULT_BINS
    integer = decision.integer or decision.kind is Kind.DATETIME
    few = per_value and (lower, upper) == (None, None) and np.unique(numbers).size <= max_singletons
    if integer:
        lo_i, hi_i = int(np.floor(lo)), int(np.ceil(hi))
        if hi_i - lo_i < max_singletons:
            edges = singleton_edges(lo_i, hi_i)
        else:
            edges = value_edges(numbers) if few else integer_edges(lo, hi, bins)
    elif few:
        edges = value_edges(numbers)
    else:
        edges = tuple(np.linspace(lo, hi if hi > lo else lo + 1.0, bins + 1))
    return Column(
        decision.name,
        decision.kind,
        decision.role,
        edges=edges,
        integer=integer,
        date_format=decision.date_format,
    )
