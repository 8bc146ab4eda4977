"""The evaluation report: one self-contained HTML file (inline CSS and SVG, no script, no network).

A summary up top (the guarantee if one is known, the headline risks with their intervals, the
headline utility), then the charts (risk bars with intervals, a privacy-utility chart, marginal
comparisons, distance-to-closest-record histograms, the subsample calibration curve), the
threat model each attack stands for, and the tables behind them.  Everything in it is an
aggregate: no record of the private data appears.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from jinja2 import Environment, PackageLoader, select_autoescape

from safeshare.data.table import Table
from safeshare.evaluate.assessment import Assessment
from safeshare.evaluate.attack_risk import strongest
from safeshare.report import plots
from safeshare.report.html import worst_columns

_RISK, _SAFE, _GREY = "#C44E52", "#55A868", "#8C8C8C"


def render_evaluation_report(
    evaluation: dict[str, Any], assessment: Assessment, *, train: Table, release: Table
) -> str:
    """The report of an evaluation (the dict written to evaluation.json) as an HTML string."""
    environment = Environment(
        loader=PackageLoader("safeshare.report", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
    )
    memorized = assessment.memorization
    charts = {
        "risks": risk_chart(
            [(a.name, a.risk, a.interval, a.significant) for a in assessment.attacks]
        ),
        "tradeoff": tradeoff_chart(assessment),
        "calibration": calibration_chart(assessment),
        "marginals": plots.marginal_chart(worst_columns(train, release)),
        "dcr": plots.dcr_chart(memorized.distances["train"], memorized.distances["holdout"])
        if memorized.distances
        else "",
    }
    return environment.get_template("evaluation.html.j2").render(
        ev=evaluation,
        charts=charts,
        headline=_headline(evaluation, assessment),
        threats=_threats(evaluation),
    )


def _headline(evaluation: dict[str, Any], assessment: Assessment) -> dict[str, Any]:
    significant = [a for a in assessment.attacks if a.significant]
    worst = strongest(assessment.attacks)
    mia = [m for m in assessment.membership if m.significant]
    dcr_class, dcr_reading = assessment.memorization.verdict()
    risk_class = "bad" if significant or mia else dcr_class
    return {
        "risk_class": risk_class,
        "worst": worst,
        "significant": significant,
        "membership": assessment.membership,
        "dcr": assessment.memorization.closer_to_train,
        "dcr_reading": dcr_reading,
        "kmarginal": assessment.kmarginal,
        "efficacy": assessment.efficacy,
        "detection": assessment.detection,
        "guarantee_known": not str(evaluation["guarantee"]).startswith("unknown"),
    }


def _threats(evaluation: dict[str, Any]) -> list[dict[str, str]]:
    seen: dict[str, str] = {}
    for attack in evaluation["attacks"]:
        family = attack["name"].split(" (")[0].split(" of ")[0]
        seen.setdefault(family, attack["threat"])
    if evaluation.get("membership"):
        seen.setdefault("membership inference", evaluation["membership"][0]["threat"])
    seen.setdefault("memorization", evaluation["memorization"]["threat"])
    reid = evaluation["reidentification"]["release"]
    seen.setdefault("re-identification of the table", reid["threat"])
    if evaluation.get("copula"):
        seen.setdefault("per-record uniqueness", evaluation["copula"]["threat"])
    return [{"name": k, "threat": v} for k, v in seen.items()]


def risk_chart(rows: Sequence[tuple[str, float, tuple[float, float], bool]]) -> str:
    """Horizontal bars: each attack's risk with its family-wise interval; red where it excludes 0."""
    figure = plots._figure(6.8, 0.42 * len(rows) + 1.0)
    axes = figure.add_subplot()
    names = [r[0] for r in rows][::-1]
    values = [max(r[1], 0.0) if np.isfinite(r[1]) else 0.0 for r in rows][::-1]
    lows = [r[2][0] if np.isfinite(r[2][0]) else 0.0 for r in rows][::-1]
    highs = [r[2][1] if np.isfinite(r[2][1]) else 0.0 for r in rows][::-1]
    colors = [_RISK if r[3] else _SAFE for r in rows][::-1]
    y = np.arange(len(rows))
    axes.barh(y, values, color=colors, alpha=0.8)
    errors = np.array(
        [
            [max(v - lo, 0) for v, lo in zip(values, lows, strict=True)],
            [max(hi - v, 0) for v, hi in zip(values, highs, strict=True)],
        ]
    )
    axes.errorbar(values, y, xerr=errors, fmt="none", ecolor="#333333", capsize=3)
    axes.axvline(0, color=_GREY, linewidth=0.8)
    axes.set_yticks(y, names)
    axes.set_xlim(min(-0.05, min(lows, default=0) - 0.02), 1.0)
    axes.set_xlabel(
        "risk = (success on train - on control) / (1 - on control), 95% family-wise interval"
    )
    return plots._svg(figure)


def tradeoff_chart(assessment: Assessment) -> str:
    """Privacy-utility plane: the release, and real subsamples as the utility reference."""
    figure = plots._figure(5.2, 3.6)
    axes = figure.add_subplot()
    curve = assessment.kmarginal.curve
    worst = strongest(assessment.attacks)
    risk = 0.0 if worst is None else max(worst.risk, 0.0)  # a significant risk only
    axes.plot(
        [1 - t for _, t in curve],
        [0.0] * len(curve),
        "o-",
        color=_GREY,
        label="real subsamples (no risk to others)",
    )
    for (fraction, tvd_value), label in zip(curve, [f"{f:.0%}" for f, _ in curve], strict=True):
        if fraction in (0.01, 0.1, 0.5, 0.9):
            axes.annotate(
                label,
                (1 - tvd_value, 0.0),
                textcoords="offset points",
                xytext=(0, 6),
                ha="center",
                fontsize=7,
            )
    axes.plot(
        [1 - assessment.kmarginal.release_tvd],
        [risk],
        "D",
        color=_RISK,
        markersize=9,
        label="this release (its strongest significant attack; 0 when none is)",
    )
    axes.set_xlabel(f"utility: 1 - mean {assessment.kmarginal.ways}-way TVD vs train")
    axes.set_ylabel("privacy risk (strongest significant attack)")
    axes.set_ylim(-0.05, 1.05)
    axes.legend(frameon=False, fontsize=7, loc="upper left")
    return plots._svg(figure)


def calibration_chart(assessment: Assessment) -> str:
    """Mean k-way TVD of real subsamples by size, with the release's as a horizontal line."""
    score = assessment.kmarginal
    figure = plots._figure(5.2, 3.0)
    axes = figure.add_subplot()
    axes.plot(
        [f for f, _ in score.curve],
        [t for _, t in score.curve],
        "o-",
        color=_GREY,
        label="subsample of the real data",
    )
    axes.axhline(score.release_tvd, color=_RISK, label="release")
    axes.set_xscale("log")
    axes.set_xlabel("subsample size (share of the training data)")
    axes.set_ylabel(f"mean {score.ways}-way TVD vs train")
    axes.legend(frameon=False, fontsize=8)
    return plots._svg(figure)
