"""The privacy card and the report of a text release (Private Evolution on a text column).

The card has the fields every card has (:data:`~safeshare.report.card.REQUIRED_FIELDS`) and
states the Gaussian-DP accounting: each step's noise and its share of ``mu^2``, the exact
(epsilon, delta), and for comparison the project's RDP conversion of the same steps (looser).
``model`` says what was public (the backend, model name and URL, prompts or templates, the
label names) and what was private.  The report renders it with the measured figures; it
quotes no private text.

>>> from safeshare.dp.events import GaussianEvent
>>> items = gdp_items([GaussianEvent(2.0, 1.0, "a"), GaussianEvent(2.0, 1.0, "b")])
>>> [(i["step"], i["sigma"], i["mu_squared_share"]) for i in items]
[('a', 2.0, 0.5), ('b', 2.0, 0.5)]
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from safeshare.dp.accountant import Accountant
from safeshare.dp.events import PrivacyEvent
from safeshare.report.card import RowCounts, Spending, as_json, card_header


def gdp_items(events: Sequence[PrivacyEvent]) -> list[dict[str, Any]]:
    """One entry per step: its noise, its share of ``mu^2`` (= its share of rho), its delta."""
    total = math.fsum(e.rho for e in events)
    return [
        {
            "step": e.label,
            "mechanism": e.mechanism,
            "sigma": getattr(e, "sigma", None),
            "rho": e.rho,
            "mu_squared_share": e.rho / total if total else 0.0,
            **({"delta": e.delta} if e.delta else {}),
        }
        for e in events
    ]


@dataclass(frozen=True)
class TextColumns:
    """The columns of a text release: the synthesized text, the label column (None without
    one), each label's name and where the labels came from."""

    text: str
    label: str | None
    label_names: Mapping[str, str]
    labels_from: str


def build_text_card(
    spending: Spending,
    *,
    columns: TextColumns,
    delta_thresholds: float,
    model: dict[str, Any],
    dataset: Mapping[str, Any],
    rows: RowCounts,
    metrics: dict[str, Any],
    ledger: dict[str, Any],
    notes: list[str],
) -> dict[str, Any]:
    """The card of a text release, as it reads back from JSON (``spending.accountant`` holds
    the release's events under the exact GDP accounting)."""
    budget, events, exact = spending.budget, spending.accountant.events, spending.accountant
    mu = exact.gdp_mu()
    text_column, label_column = columns.text, columns.label
    label_names, labels_from = columns.label_names, columns.labels_from
    entries: dict[str, Any] = {
        text_column: {"kind": "text", "role": "other", "source": "synthesized", "dropped": False}
    }
    if label_column is not None:
        entries[label_column] = {
            "kind": "categorical",
            "role": "other",
            "source": labels_from,
            "dropped": False,
            "codes": len(label_names),
        }
    public = [
        *model.get("public_inputs", []),
        "the embedder (all-MiniLM-L6-v2), run on private and synthetic texts alike",
    ]
    if label_column is not None and labels_from.startswith("public"):
        public.append(f"the label values and their names: {dict(label_names)}")
    private = [
        "the training texts, only through the T noisy nearest-neighbour histograms (votes)",
    ]
    if label_column is not None:
        private.append("the number of records of each label, released as a Gaussian (DP) count")
        if not labels_from.startswith("public"):
            private.append("which label values exist, found with a thresholded DP histogram")
    guarantee = (
        f"({budget.epsilon:g}, {budget.delta:g})-differential privacy for every record of the "
        "training split"
        + (", for anyone who does not know the seed" if not spending.secure_noise else "")
    )
    header = card_header(
        spending.method,
        guarantee,
        budget=budget,
        secure_noise=spending.secure_noise,
        source=dataset,
    )
    card = {
        **header,
        "data": "text",
        "epsilon_spent": spending.epsilon_spent,
        "budget": {
            **exact.describe(),
            "composition": "Gaussian DP: Gaussian steps of L2 sensitivity 1 compose to mu-GDP with "
            "mu^2 = sum 1/sigma_i^2, converted exactly to (epsilon, delta) (Dong, Roth & Su 2022); "
            "the label threshold (if any) adds its delta",
            "gdp_mu": mu,
            "sigma": model.get("sigma"),
            "iterations": model.get("iterations"),
            "samples_per_iteration": model.get("samples_per_iteration"),
            "delta_thresholds": delta_thresholds,
            "rho": mu**2 / 2,
            "epsilon_rdp": Accountant(events, "rdp").epsilon(budget.delta),
            "epsilon_rdp_note": "the project's RDP conversion of the same steps; looser than "
            "the exact GDP curve, shown for comparison",
            "items": gdp_items(events),
        },
        "domain_source": f"labels: {labels_from}" if label_column else "no label column",
        "columns": entries,
        "rows_in": rows.read,
        "rows_train": rows.train,
        "rows_holdout": rows.holdout,
        "rows_out": rows.written,
        "holdout_fraction": rows.holdout_fraction,
        "metrics": metrics,
        "model": {**model, "label_names": dict(label_names), "public": public, "private": private},
        "ledger": ledger,
        "not_dp": [
            "rows_in, rows_train and rows_holdout are exact counts of the private data",
            "metrics are computed on the private data (train and holdout) and are not DP; they "
            "are for the data owner's review",
        ],
        "notes": notes,
        "synthetic_file": "synthetic.csv",
    }
    return as_json(card)


def render_text_report(card: Mapping[str, Any]) -> str:
    """The report of a text release, one self-contained HTML page."""
    environment = Environment(
        loader=PackageLoader("safeshare.report", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
    )
    return environment.get_template("text_report.html.j2").render(card=card)
