"""Shared cases for the engine tests."""

from safeshare.data.domain import Column, Domain, Kind

EDGE_DATES = (
    "2013-03-15", "2013-3-5", " 2013-03-15 10:00 ", "2013-03-15T10:00:00.5", "2013-03-15 1:00:00",
    "2013.03.15", "20130315", "2013-03", "2013-03-15 10", "13-03-15", "2013-03-15T10:00:00Z",
    "15/03/2013", "2013/03/15",
)  # fmt: skip
"""Dates in ISO 8601 forms every engine reads (the first five), near-ISO text that some
engine's own parser would take, and one day-first date (read where that is the layout)."""


def edge_dates_domain(date_format: str) -> Domain:
    """One date column ``d`` (in ``date_format``) whose strays are missing, edges around 2013."""
    column = Column(
        "d", Kind.DATETIME, edges=(15000, 15779, 15780, 16000), date_format=date_format,
        strays_missing=True,
    )  # fmt: skip
    return Domain((column,))
