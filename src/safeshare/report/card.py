"""The privacy card: a machine-checkable JSON account of a release.

It says what was released, under which guarantee, what each step spent, where
the domain came from, and what was measured.  Everything in it that was computed
from the private data *without* DP is listed under ``not_dp``.

>>> sorted(REQUIRED_FIELDS)[:4]
['budget', 'columns', 'created_at', 'delta']

Every artifact's card (a release, an anonymized table, a PAC output, a trained model) opens
with the same header:

>>> header = card_header("mst", "none", budget=None, secure_noise=True, source={"name": "t"})
>>> sorted(header) == sorted(HEADER_FIELDS)
True
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from safeshare.data.domain import Domain, Kind
from safeshare.data.plan import ColumnDecision, Source
from safeshare.dp.accountant import Accountant
from safeshare.dp.budget import PrivacyBudget

HEADER_FIELDS = (
    "safeshare_version",
    "created_at",
    "method",
    "guarantee",
    "epsilon",
    "delta",
    "secure_noise",
    "input",
)
"""The fields every card opens with, whatever the artifact."""

REQUIRED_FIELDS = frozenset(
    {
        *HEADER_FIELDS,
        "budget",
        "domain_source",
        "columns",
        "metrics",
        "rows_in",
        "rows_out",
    }
)
"""The fields of every card of a table release (a synthetic, anonymized or PAC output)."""


def card_header(
    method: str,
    guarantee: str,
    *,
    budget: PrivacyBudget | None,
    secure_noise: bool | None,
    source: Mapping[str, Any],
    created_at: str | None = None,
) -> dict[str, Any]:
    """The header of every card: what made it, when, the guarantee and its budget (None where
    the method is not DP), whether the noise is secure (None where there is none) and the
    input (name and SHA-256)."""
    from safeshare import __version__

    return {
        "safeshare_version": __version__,
        "created_at": created_at or datetime.now(UTC).isoformat(timespec="seconds"),
        "method": method,
        "guarantee": guarantee,
        "epsilon": budget.epsilon if budget is not None else None,
        "delta": budget.delta if budget is not None else None,
        "secure_noise": secure_noise,
        "input": dict(source),
    }


def domain_source(decisions: list[ColumnDecision]) -> str:
    """'schema', 'private data, DP', 'schema + private data, DP' or 'private data, not DP'."""
    sources = {d.source for d in decisions if d.modelled}
    if Source.NOT_DP in sources:
        return "private data, not DP"
    if sources == {Source.SCHEMA}:
        return "schema"
    if Source.SCHEMA in sources:
        return "schema + private data, DP"
    return "private data, DP"


@dataclass(frozen=True)
class Spending:
    """What a release spent: its method, its budget, the accountant of the events it ran
    (``epsilon_spent`` is the accountant's total) and whether the noise was secure."""

    method: str
    budget: PrivacyBudget
    accountant: Accountant
    epsilon_spent: float
    secure_noise: bool


@dataclass(frozen=True)
class RowCounts:
    """The rows a release read, trained on, held out and wrote (exact counts: not DP)."""

    read: int
    train: int
    holdout: int
    written: int
    holdout_fraction: float


def build_card(
    spending: Spending,
    *,
    decisions: list[ColumnDecision],
    domain: Domain,
    dataset: Mapping[str, Any],
    rows: RowCounts,
    metrics: Mapping[str, Any],
    ledger: dict[str, Any],
    notes: list[str],
    model: dict[str, Any],
) -> dict[str, Any]:
    """The card of a synthetic release: the header, what each event spent, the columns'
    decisions and codes, the input (``dataset``: name and SHA-256), the row counts, the
    measures (``metrics``, at least ``utility`` and ``risk``), the ledger's account and the
    model's description."""
    source = domain_source(decisions)
    not_dp = _not_dp(decisions, source)
    budget, accountant = spending.budget, spending.accountant
    guarantee = (
        f"({budget.epsilon:g}, {budget.delta:g})-differential privacy for every record of the "
        "training split"
        + kinds_condition(decisions)
        + (", for anyone who does not know the seed" if not spending.secure_noise else "")
    )
    if source == "private data, not DP":
        guarantee = "none: the domain was read from the private data without DP (--unsafe-infer)"
    header = card_header(
        spending.method,
        guarantee,
        budget=budget,
        secure_noise=spending.secure_noise,
        source=dataset,
    )
    return {
        **header,
        "epsilon_spent": spending.epsilon_spent,
        "budget": {
            **accountant.describe(),
            "composition": "zero-concentrated DP (rho adds up), converted to (epsilon, delta) by "
            "dp-accounting's RDP bound; thresholds add their delta",
            "rho": accountant.rho,
            "delta_thresholds": accountant.delta_extra,
            "items": accountant.itemize(spending.epsilon_spent),
        },
        "domain_source": source,
        "columns": _columns(decisions, domain),
        "rows_in": rows.read,
        "rows_train": rows.train,
        "rows_holdout": rows.holdout,
        "rows_out": rows.written,
        "holdout_fraction": rows.holdout_fraction,
        "metrics": dict(metrics),
        "model": model,
        "ledger": ledger,
        "not_dp": not_dp,
        "notes": notes,
    }


def kinds_condition(decisions: Sequence[ColumnDecision]) -> str:
    """What the guarantee is conditioned on where column kinds were guessed from the data
    without DP (a guess DP measured is part of the guarantee): the guess read the private
    records (a release's training split), so the guarantee holds given its decisions.

    >>> from safeshare.data.plan import ColumnDecision
    >>> kinds_condition([])
    ''
    """
    if not any(_read_without_dp(d) for d in decisions):
        return ""
    return (
        ", given the column kinds, date formats and dropped identifiers, which were decided "
        "from the data without DP (see not_dp; a schema decides them publicly)"
    )


STRAYS_MISSING = "released as missing"
"""What a column whose kind was measured with DP does with a value of another kind (text in a
numeric column, a date in another layout): the card says so per column, since a count would
be private (a schema that declares the kind refuses them instead, naming their count)."""


def _columns(decisions: list[ColumnDecision], domain: Domain) -> dict[str, Any]:
    """Each column's kind, role, where its domain came from and its codes (or why dropped)."""
    return {d.name: column_entry(d, domain) for d in decisions}


def column_entry(decision: ColumnDecision, domain: Domain) -> dict[str, Any]:
    """One column's card entry: its kind, role, where its domain came from, its size in codes
    where it is modelled (``domain``: the modelled columns), why it was dropped, and how its
    kind was found."""
    d = decision
    entry: dict[str, Any] = {
        "kind": str(d.kind),
        "role": str(d.role),
        "source": str(d.source),
        "dropped": not d.modelled,
    }
    if d.modelled:
        entry["codes"] = domain[d.name].size
    if d.reason:
        entry["reason"] = d.reason
    if d.kind_guessed:
        entry["kind_inferred"] = True
    if d.kind_measured:
        entry["kind_measured_with_dp"] = True
        if d.modelled and d.kind in (Kind.NUMERIC, Kind.DATETIME):
            entry["values_of_another_kind"] = STRAYS_MISSING
    return entry


def _not_dp(decisions: list[ColumnDecision], source: str) -> list[str]:
    """What the card reports that was read from the private data without DP."""
    not_dp = [
        "rows_in, rows_train and rows_holdout are exact counts of the private data",
        "metrics are computed on the private data (train and holdout) and are not DP; they are "
        "for the data owner's review",
    ]
    if any(_read_without_dp(d) for d in decisions):
        not_dp.append(
            "column kinds, date formats (the layout of public DATE_FORMATS that reads the most "
            "records) and the identifier detection read the training split (not DP; the holdout "
            "is not read); only column names and decisions are reported"
        )
    if source == "private data, not DP":
        not_dp.append(
            "--unsafe-infer: categories and numeric bounds were read from the private "
            "data without noise; the release is NOT differentially private"
        )
    return not_dp


def _read_without_dp(decision: ColumnDecision) -> bool:
    return decision.kind_guessed and not decision.kind_measured


def write_card(card: dict[str, Any], path: str | Path) -> None:
    """Write the card as JSON; every required field must be present."""
    missing = REQUIRED_FIELDS - card.keys()
    if missing:
        raise ValueError(f"the privacy card lacks {sorted(missing)}")
    Path(path).write_text(_dumps(card) + "\n", encoding="utf-8")


def as_json(card: dict[str, Any]) -> dict[str, Any]:
    """The card exactly as it reads back from its JSON file (lists, floats, nulls).

    >>> as_json({"interval": (0.1, float("nan"))})
    {'interval': [0.1, None]}
    """
    loaded: dict[str, Any] = json.loads(_dumps(card))
    return loaded


def _dumps(card: dict[str, Any]) -> str:
    return json.dumps(_finite(card), indent=2, default=_json_default, allow_nan=False)


def _finite(value: Any) -> Any:
    """The same structure with NaN and infinities replaced by null (JSON has neither)."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    if isinstance(value, float | np.floating) and not math.isfinite(float(value)):
        return None
    return value


def _json_default(value: Any) -> Any:
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return None if not math.isfinite(float(value)) else float(value)
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"cannot write {type(value).__name__} to the card")
