"""Guessing column kinds and spotting direct identifiers, when no schema says.

This exact guess reads the private data and is *not* differentially private: a release
and ``safeshare train`` measure the kinds with DP instead (:mod:`safeshare.dp.kinds`, checked
against this guess in ``benchmarks/dp_kinds.py``); ``--unsafe-infer`` and the evaluation of a
release use it, and the card says so.  It never reports values, only column names and
reasons.  The domains of the kept columns (categories, bounds, bins) are found separately,
with a DP mechanism (:mod:`safeshare.dp.discovery`).

>>> import pandas as pd
>>> frame = pd.DataFrame({"email": [f"u{i}@x.org" for i in range(30)], "age": ["31"] * 30})
>>> [(g.name, g.kind.value, g.identifier) for g in infer_columns(frame)]
[('email', 'text', 'e-mail addresses'), ('age', 'numeric', None)]
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd

from safeshare.data.dates import date_format_of, parse_dates
from safeshare.data.domain import Kind

_IDENTIFIER_NAME = re.compile(
    r"(^|[_\s.-])(id|ids|uuid|guid|ssn|nhs|mrn|name|names|firstname|lastname|surname|fullname|"
    r"email|e-mail|mail|phone|telephone|mobile|fax|address|street|passport|iban|"
    r"account|username|login|ip)([_\s.-]|$)",
    re.IGNORECASE,
)
# a part of a person's name, when it is the column's whole name ("first", "Last"): "first"
# inside a longer name ("first_visit") says nothing
_NAME_PART = re.compile(
    r"(first|last|given|family|middle|fore|sur|maiden|nick)[_\s.-]?(name)?|[fml]name",
    re.IGNORECASE,
)
_VALUE_PATTERNS = {
    "e-mail addresses": re.compile(r"^[^@\s]+@[^@\s]+\.[A-Za-z]{2,}$"),
    "phone numbers": re.compile(r"^\+?[\d\s().-]{7,20}$"),
    "IP addresses": re.compile(r"^\d{1,3}(\.\d{1,3}){3}$"),
}
MIN_ROWS_FOR_UNIQUENESS = 20
_NEAR_UNIQUE = 0.9
DATE_SHAPE = r"\d{1,4}[-/.]\d{1,2}[-/.]\d{1,4}"  # what a value must look like to be read as a date
RECORD_NUMBER = "every value distinct (a record number)"  # why such a column is dropped
_MOSTLY = 0.99  # the share of records that makes a column numbers or dates despite stray values
_FREE_TEXT_WORDS = 4


@dataclass(frozen=True)
class GuessedColumn:
    """What inference decided for one column (``identifier`` is the reason, if dropped)."""

    name: str
    kind: Kind
    integer: bool = False
    identifier: str | None = None
    date_format: str = ""

    @classmethod
    def of_dates(cls, name: str, date_format: str) -> GuessedColumn:
        """A column of dates in ``date_format`` (an identifier only by its name)."""
        return cls(
            name, Kind.DATETIME, integer=True, identifier=identifier_by_name(name),
            date_format=date_format,
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form (the inverse of :meth:`from_dict`)."""
        return {**asdict(self), "kind": str(self.kind)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GuessedColumn:
        return cls(
            str(data["name"]),
            Kind(data["kind"]),
            bool(data.get("integer", False)),
            data.get("identifier"),
            str(data.get("date_format", "")),
        )


def infer_columns(frame: pd.DataFrame) -> list[GuessedColumn]:
    """One guess per column of ``frame``, in order."""
    return [_guess(str(name), frame[name]) for name in frame.columns]


def _guess(name: str, values: pd.Series) -> GuessedColumn:
    present = values.dropna()
    if present.empty:
        return GuessedColumn(name, Kind.CATEGORICAL)
    # every test below reads each distinct value once, weighted by how often it occurs
    counts = present.astype("string").value_counts(sort=False, dropna=True)
    text = pd.Series(counts.index, dtype="string")
    weights = counts.to_numpy(dtype=float)
    rows = int(weights.sum())
    numbers = pd.to_numeric(text, errors="coerce")
    parsed = numbers.notna().to_numpy()
    if parsed.astype(float) @ weights >= _MOSTLY * rows:  # a stray text is refused by name later
        numbers = numbers[parsed]
        integer = bool(np.all(np.mod(numbers.to_numpy(dtype=float), 1) == 0))
        reason = identifier_by_name(name)
        numbered = int(weights[parsed].sum())
        record_number = (
            integer and numbered >= MIN_ROWS_FOR_UNIQUENESS and numbered == numbers.nunique()
        )
        if reason is None and record_number:
            reason = RECORD_NUMBER
        return GuessedColumn(name, Kind.NUMERIC, integer=integer, identifier=reason)
    if _looks_like_dates(text, weights):  # before the patterns: 2021-03-01 is no phone number
        return GuessedColumn.of_dates(name, date_format_of(text, weights))
    for label, pattern in _VALUE_PATTERNS.items():
        matches = text.str.fullmatch(pattern).to_numpy(dtype=float, na_value=0.0)
        if matches @ weights / rows >= _NEAR_UNIQUE:
            return GuessedColumn(name, Kind.TEXT, identifier=label)
    words = text.str.count(r"\S+").to_numpy(dtype=float) @ weights / rows
    distinct = len(text) / rows
    if words >= _FREE_TEXT_WORDS and distinct >= 0.5:
        return GuessedColumn(name, Kind.TEXT, identifier="free text")
    reason = identifier_by_name(name)
    if reason is None and rows >= MIN_ROWS_FOR_UNIQUENESS and distinct >= _NEAR_UNIQUE:
        reason = "near-unique values"
    return GuessedColumn(name, Kind.TEXT if reason else Kind.CATEGORICAL, identifier=reason)


def identifier_by_name(name: str) -> str | None:
    """Why a column's name marks a direct identifier (``patient_id``, ``email``, ``Last``), or
    None.

    >>> identifier_by_name("patientID"), identifier_by_name("first_visit")
    ('name of a direct identifier', None)
    """
    words = re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name)  # patientID -> patient_ID
    if _IDENTIFIER_NAME.search(words) or _NAME_PART.fullmatch(name.strip()):
        return "name of a direct identifier"
    return None


def _looks_like_dates(text: pd.Series, weights: np.ndarray) -> bool:
    """Most records (:data:`_MOSTLY`) hold a date: a stray value that is not one does not make
    the column something else (its count is then refused by name, before any spend)."""
    shaped = text.str.contains(DATE_SHAPE, regex=True).to_numpy(dtype=bool, na_value=False)
    if shaped.astype(float) @ weights < _MOSTLY * weights.sum():
        return False
    layout = date_format_of(text[shaped], weights[shaped])
    parsed = parse_dates(text[shaped], layout).notna().to_numpy(dtype=float)
    return bool(parsed @ weights[shaped] >= _MOSTLY * weights.sum())
