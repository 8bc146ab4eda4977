"""The HTML report: one self-contained file (inline CSS and SVG, no network) a person reads.

It renders the privacy card plus charts computed from aggregates (marginal
proportions, distance histograms); no record of the private data appears in it, and a
marginal's cell held by fewer than :data:`SMALL_CELL` training records is drawn as empty, so a
bar never shows that a rare person is in the data.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from jinja2 import Environment, PackageLoader, select_autoescape

from safeshare.data.table import Table
from safeshare.engine import default_engine
from safeshare.evaluate.results import RiskResult
from safeshare.evaluate.utility import tvd
from safeshare.report import plots

if TYPE_CHECKING:
    from safeshare.evaluate.assessment import Assessment

MARGINAL_PANELS = 6
SMALL_CELL = 10
RARE = f"(under {SMALL_CELL})"  # the label drawn for a value held by fewer training records


def render_report(
    card: dict[str, Any],
    *,
    train: Table,
    synthetic: Table,
    risk: RiskResult,
    assessment: Assessment | None = None,
) -> str:
    """The report for a release, as an HTML string (with the attacks when ``assessment`` is given)."""
    environment = Environment(
        loader=PackageLoader("safeshare.report", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
    )
    utility = card["metrics"]["utility"]
    rows = _utility_rows(utility)
    charts = {
        "budget": plots.budget_chart(card["budget"]["items"]),
        "tvd": plots.tvd_chart(
            [(f"{r['ways']}-way", r["train_mean"], r["holdout_mean"], r["floor"]) for r in rows]
        ),
        "marginals": plots.marginal_chart(worst_columns(train, synthetic)),
        "dcr": plots.dcr_chart(risk.distances["train"], risk.distances["holdout"])
        if risk.distances
        else "",
    }
    attacks = None
    if assessment is not None:
        from safeshare.report.evaluation import risk_chart

        charts["attacks"] = risk_chart(
            [(a.name, a.risk, a.interval, a.significant) for a in assessment.attacks]
        )
        attacks = {
            "rows": [a.to_dict() for a in assessment.attacks],
            "membership": [m.to_dict() for m in assessment.membership],
            "reidentification": assessment.reidentification["release"].reading,
            "utility": assessment.kmarginal.reading,
        }
    return environment.get_template("report.html.j2").render(
        attacks=attacks,
        card=card,
        charts=charts,
        utility_rows=rows,
        risk_rows=_risk_rows(risk),
        headline=_headline(rows, risk),
        kept=[n for n, c in card["columns"].items() if not c["dropped"]],
        dropped=[n for n, c in card["columns"].items() if c["dropped"]],
    )


def _utility_rows(utility: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    for key, train in utility["tvd_vs_train"].items():
        holdout = utility.get("tvd_vs_holdout", {}).get(key)
        floor = utility.get("tvd_train_vs_holdout_baseline", {}).get(key)
        independent = utility.get("tvd_independent_columns_baseline", {}).get(key)
        rows.append(
            {
                "ways": int(key.removesuffix("way")),
                "count": train["marginals"],
                "sampled": train["sampled"],
                "train_mean": train["mean"],
                "train_max": train["max"],
                "holdout_mean": holdout["mean"] if holdout else None,
                "holdout_max": holdout["max"] if holdout else None,
                "floor": floor["mean"] if floor else None,
                "independent": independent["mean"] if independent else None,
            }
        )
    return rows


def _headline(rows: list[dict[str, Any]], risk: RiskResult) -> dict[str, Any]:
    with_holdout = [r for r in rows if r["holdout_mean"] is not None]
    utility = None
    if with_holdout:
        top = with_holdout[-1]
        utility = {
            "ways": top["ways"],
            "release": top["holdout_mean"],
            "floor": top["floor"],
            "independent": top["independent"],
        }
    return {"utility": utility, "risk_class": risk.verdict()[0]}


def _risk_rows(risk: RiskResult) -> list[dict[str, Any]]:
    rows = []
    if risk.closer_to_train is not None:
        p = risk.closer_to_train
        rows.append(
            {
                "name": "released records closer to train than to holdout",
                "value": p.value,
                "low": p.interval[0],
                "high": p.interval[1],
                "against": "50% (ideal)",
            }
        )
    p = risk.copies_of_train
    rows.append(
        {
            "name": "released records equal to a training record",
            "value": p.value,
            "low": p.interval[0],
            "high": p.interval[1],
            "against": ""
            if risk.copies_of_holdout is None
            else f"{risk.copies_of_holdout.value:.1%} equal to an unseen record",
        }
    )
    return rows


def worst_columns(
    train: Table, synthetic: Table
) -> list[tuple[str, tuple[str, ...], np.ndarray, np.ndarray]]:
    """The columns whose 1-way marginal the release matches worst: name, labels and the shares
    of the real and the released records per label (real cells under :data:`SMALL_CELL`
    records are drawn as 0; the ranking reads the exact counts, as the card's metrics do).

    >>> import pandas as pd
    >>> from safeshare.data.domain import Column, Domain, Kind
    >>> domain = Domain((Column("job", Kind.CATEGORICAL, categories=("a", "rare")),))
    >>> real, _ = Table.from_frame(pd.DataFrame({"job": ["a"] * 30 + ["rare"] * 2}), domain)
    >>> [(name, shares.round(3).tolist()) for name, _, shares, _ in worst_columns(real, real)]
    [('job', [0.938, 0.0, 0.0, 0.0])]
    >>> worst_columns(real, real)[0][1]  # (the rare value is not named)
    ('a', '(under 10)', '(under 10)', '(under 10)')
    """
    engine = default_engine()
    panels = []
    for column in train.domain:
        real = engine.counts(train, [column.name])
        released = engine.counts(synthetic, [column.name])
        rare = real < SMALL_CELL
        shown = np.where(rare, 0, real) / max(real.sum(), 1)
        # (a label names a real value: one held by so few records is not named either)
        labels = tuple(
            RARE if few else label for label, few in zip(column.labels(), rare, strict=True)
        )
        panels.append(
            (
                tvd(real, released),
                column.name,
                labels,
                shown,
                released / max(released.sum(), 1),
            )
        )
    panels.sort(key=lambda p: -p[0])
    return [
        (name, labels, real, released)
        for _, name, labels, real, released in panels[:MARGINAL_PANELS]
    ]
