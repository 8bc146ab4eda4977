"""The HTML report of a risk measurement: one self-contained file (inline CSS and SVG).

It renders ``risk.json``: the prosecutor, journalist and marketer risk, the population
uniqueness by estimator and the class-size distribution, aggregates only.
"""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, PackageLoader, select_autoescape

from safeshare.report.anonymization import class_size_chart


def render_risk_report(measurement: dict[str, Any]) -> str:
    """The report of a risk measurement (the dict written to ``risk.json``) as HTML."""
    environment = Environment(
        loader=PackageLoader("safeshare.report", "templates"),
        autoescape=select_autoescape(["html", "j2"]),
    )
    chart = class_size_chart(measurement["class_size_histogram"])
    return environment.get_template("risk.html.j2").render(m=measurement, chart=chart)
