"""report/: the privacy card (JSON a machine checks) and the HTML report (a person reads)."""

from safeshare.report.card import REQUIRED_FIELDS, build_card, write_card
from safeshare.report.html import render_report

__all__ = ["REQUIRED_FIELDS", "build_card", "render_report", "write_card"]
