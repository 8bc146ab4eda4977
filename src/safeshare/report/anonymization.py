"""The HTML report of an anonymized release: one self-contained file (inline CSS and SVG).

It renders the privacy card: the models satisfied and what they reach, the transformation of
each column, the class-size distribution and the information lost per attribute.  Only
aggregates appear in it, never a record.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from jinja2 import Environment, PackageLoader, select_autoescape

from safeshare.report.plots import _figure, _svg

_PRECISION, _LOSS, _ENTROPY = "#4C72B0", "#DD8452", "#8C8C8C"


def render_anonymization_report(card: dict[str, Any]) -> str:
    """The report for an anonymized release, as an HTML string."""
    environment = Environment(
        loader=PackageLoader("safeshare.report", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
    )
    generalized = {name: column for name, column in card["columns"].items() if "level" in column}
    charts = {
        "classes": class_size_chart(card["classes"]["size_histogram"]),
        "loss": attribute_loss_chart(
            {name: column.get("quality", {}) for name, column in generalized.items()}
        ),
    }
    return environment.get_template("anonymization.html.j2").render(
        card=card, charts=charts, generalized=generalized
    )


def class_size_chart(histogram: Mapping[str, int]) -> str:
    """Bars: how many equivalence classes fall in each size band."""
    labels = list(histogram)
    figure = _figure(6.5, 2.6)
    axes = figure.add_subplot()
    axes.bar(np.arange(len(labels)), [histogram[k] for k in labels], color=_PRECISION)
    axes.set_xticks(np.arange(len(labels)), labels, rotation=30, ha="right")
    axes.set_xlabel("records in the class")
    axes.set_ylabel("classes")
    return _svg(figure)


def attribute_loss_chart(per_attribute: Mapping[str, Mapping[str, float]]) -> str:
    """Horizontal bars per quasi-identifier: precision, loss and entropy lost (0 keeps all)."""
    names = list(per_attribute)[::-1]
    if not names:
        return ""
    figure = _figure(6.5, 0.42 * len(names) + 1.0)
    axes = figure.add_subplot()
    y = np.arange(len(names))
    series: Sequence[tuple[str, str, float]] = (
        ("precision", _PRECISION, -0.27),
        ("loss", _LOSS, 0.0),
        ("entropy", _ENTROPY, 0.27),
    )
    for metric, color, shift in series:
        values = [per_attribute[n].get(metric, 0.0) for n in names]
        axes.barh(y + shift, values, 0.27, color=color, label=metric)
    axes.set_yticks(y, names)
    axes.set_xlim(0, 1)
    axes.set_xlabel("information lost (0 = none, 1 = all)")
    axes.legend(frameon=False, loc="lower right")
    return _svg(figure)
