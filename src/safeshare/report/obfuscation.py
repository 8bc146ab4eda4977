"""The HTML report of ``safeshare obfuscate attack``: utility against token recovery.

It renders the attack report's JSON form (``attack.json``, numbers only, never a text): one
table and one inline SVG chart putting the learned transform beside plain Gaussian noise at
several scales (utility, F1 of the head when there is one, else the mean cosine of the
model's outputs, against the share of tokens each attack recovers), the planted-PII rows, the
learned inversion network's rows, and the plain statement that the protection is empirical,
not formal.

>>> report = {"texts": 2, "public_texts": 5, "model_fingerprint": "ab" * 32, "f1": None,
...     "f1_positive_class": None, "utility_cosine": 0.9, "secure_noise": True,
...     "guarantee": "empirical, not formal: ...", "inverter_steps": 0, "pii": [],
...     "attacks": [{"attack": "nearest neighbour", "input": "clean", "recovered": 1.0,
...                  "interval": [0.9, 1.0], "tokens": 20}],
...     "conditions": [{"input": "learned transform", "sigma": None, "utility_cosine": 0.9,
...         "f1": None, "pii": [], "attacks": [{"attack": "nearest neighbour",
...         "input": "learned transform", "recovered": 0.5, "interval": [0.3, 0.7],
...         "tokens": 20}]}]}
>>> html = render_obfuscation_report(report)
>>> "<svg" in html and "empirical, not formal" in html
True
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from safeshare.report.plots import _figure, _svg

_LEARNED, _GAUSSIAN = "#DD8452", "#4C72B0"
_MARKERS = {"nearest neighbour": "o", "beam search (BeamClean-style)": "s"}


@dataclass(frozen=True)
class _Measure:
    """The utility the report puts against recovery (a head's F1 where there is one, then a
    causal model's next-token KL, else the outputs' cosine): a key of each condition, its
    column heading, its sentence, its value on clean inputs, and a second column beside it."""

    key: str
    heading: str
    sentence: str
    clean: float | None
    second: tuple[str, str, float] | None = None  # (heading, key, value on clean inputs)
    lower_keeps_more: bool = False

    @classmethod
    def of(cls, report: dict[str, Any]) -> _Measure:
        conditions = report.get("conditions", [])
        if conditions and all(c.get("f1") is not None for c in conditions):
            return cls(
                "f1", "F1", "the F1 of the classification head on obfuscated inputs",
                report.get("clean_f1"), ("cosine", "utility_cosine", 1.0),
            )  # fmt: skip
        if conditions and all(c.get("next_token_kl") is not None for c in conditions):
            return cls(
                "next_token_kl", "next-token KL (nats)",
                "the mean KL divergence (nats) between the causal model's next-token "
                "distributions on clean and on obfuscated inputs (lower keeps more; beside it "
                "the top-1 agreement with the clean model)",
                0.0, ("top-1 agreement", "next_token_agreement", 1.0), lower_keeps_more=True,
            )  # fmt: skip
        return cls(
            "utility_cosine", "cosine",
            "the mean cosine between the model's outputs on obfuscated and clean inputs", 1.0,
        )  # fmt: skip


def render_obfuscation_report(report: dict[str, Any]) -> str:
    """The report of an obfuscation attack (``AttackReport.to_dict()``), as one HTML string."""
    environment = Environment(
        loader=PackageLoader("safeshare.report", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
    )
    conditions = report.get("conditions", [])
    attacks = sorted({a["attack"] for c in conditions for a in c["attacks"]}, key=_order)
    measure = _Measure.of(report)
    rows = [
        {
            "input": c["input"],
            "learned": c["sigma"] is None,
            "utility": c[measure.key],
            "second": c[measure.second[1]] if measure.second else None,
            "attacks": {a["attack"]: a for a in c["attacks"]},
            "strongest": max(a["recovered"] for a in c["attacks"]),
            "information": c.get("information"),
        }
        for c in conditions
    ]
    return environment.get_template("obfuscation.html.j2").render(
        report=report,
        rows=rows,
        attacks=attacks,
        measure=measure,
        learned_kept=conditions[0] if conditions else None,
        chart=trade_off_chart(rows, measure) if rows else "",
        inverter=[
            (c["input"], a, c.get("information"))
            for c in conditions
            for a in c["attacks"]
            if a["attack"] == "learned inversion network"
        ],
        pii=[(c["input"], p) for c in conditions for p in c["pii"]],
    )


def _order(attack: str) -> tuple[int, str]:
    known = ["nearest neighbour", "beam search (BeamClean-style)", "learned inversion network"]
    return (known.index(attack) if attack in known else len(known), attack)


def trade_off_chart(rows: list[dict[str, Any]], measure: _Measure) -> str:
    """Utility (x) against token recovery (y), one marker per attack, per way of sending."""
    figure = _figure(6.5, 3.2)
    axes = figure.add_subplot()
    for row in rows:
        colour = _LEARNED if row["learned"] else _GAUSSIAN
        for attack, found in row["attacks"].items():
            axes.scatter(
                row["utility"],
                found["recovered"],
                marker=_MARKERS.get(attack, "^"),
                color=colour,
                s=36,
            )
        best = max(found["recovered"] for found in row["attacks"].values())
        axes.annotate(
            row["input"].replace("Gaussian noise ", ""),
            (row["utility"], best),
            textcoords="offset points",
            xytext=(4, 4),
            fontsize=8,
        )
    gaussian = sorted((r["utility"], r["strongest"]) for r in rows if not r["learned"])
    if len(gaussian) > 1:
        axes.plot(*zip(*gaussian, strict=True), color=_GAUSSIAN, linestyle="--", linewidth=1)
        axes.plot([], [], color=_GAUSSIAN, linestyle="--", label="Gaussian, strongest attack")
    for attack, marker in [*_MARKERS.items(), ("learned inversion network", "^")]:
        axes.scatter([], [], marker=marker, color="#555555", label=attack)
    axes.set_xlabel(
        f"{measure.heading} on obfuscated inputs"
        + (" (lower keeps more)" if measure.lower_keeps_more else "")
    )
    axes.set_ylabel("tokens recovered")
    axes.set_ylim(-0.03, 1.05)
    widest = max([1.0, *(row["utility"] for row in rows)]) if measure.lower_keeps_more else 1.0
    axes.set_xlim(-0.03 * widest, 1.05 * widest)
    axes.legend(frameon=False, fontsize=8, loc="lower left")
    return _svg(figure)
