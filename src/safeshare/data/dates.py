"""How a file writes its dates: the format a date column is read with and written back in.

A user who brings ``03/15/2013`` expects ``03/15/2013`` back, not ``2013-03-15``.  The format
is chosen from a public list of layouts (:data:`DATE_FORMATS`): the one that reads the most
records, and of the layouts reading as many, the first (month first before day first, as
pandas reads an ambiguous ``03/05/2013``).  Written back zero-padded where the file pads its
months and days, unpadded where it does not.

>>> import pandas as pd
>>> date_format_of(pd.Series(["03/15/2013", "12/01/2014"]))
'%m/%d/%Y'
>>> date_format_of(pd.Series(["15.3.2013", "1.12.2014"]))
'%-d.%-m.%Y'
>>> write_dates(parse_dates(pd.Series(["15.03.2013"]), "%-d.%-m.%Y"), "%-d.%-m.%Y").tolist()
['15.3.2013']
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

DATE_FORMATS = (
    "%Y-%m-%d",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%dT%H:%M:%S",
    "%Y/%m/%d",
    "%m/%d/%Y",
    "%d/%m/%Y",
    "%m-%d-%Y",
    "%d-%m-%Y",
    "%d.%m.%Y",
    "%m/%d/%y",
    "%d/%m/%y",
    "%m/%d/%Y %H:%M",
    "%d/%m/%Y %H:%M",
    "%m/%d/%Y %H:%M:%S",
    "%d/%m/%Y %H:%M:%S",
)
"""The public layouts a date column may be written in (ISO 8601 first)."""
ISO = ""
"""The format of a column written as ISO 8601 days (``2013-03-15``): the default."""
ISO_DATE = r"\d{4}-\d{1,2}-\d{1,2}(?:[ T]\d{1,2}:\d{2}(?::\d{2}(?:\.\d{1,6})?)?)?"
"""The ISO 8601 dates and times every engine reads alike (pandas, DuckDB's and Spark's casts):
a day, optionally its time to the minute, second or microsecond, and no time zone."""


def date_format_of(values: pd.Series, weights: np.ndarray | None = None) -> str:
    """The layout of :data:`DATE_FORMATS` that reads the most of ``values`` (each weighted by
    ``weights``: how many records hold it), as written (unpadded ``%-m`` where the values are
    not zero-padded); :data:`ISO` when none reads any or ISO days read as many."""
    text = values.astype("string").str.strip()
    weights = np.ones(len(text)) if weights is None else np.asarray(weights, dtype=float)
    best, best_share = ISO, 0.0
    for layout in DATE_FORMATS:
        share = float(read_layout(text, layout).notna().to_numpy(dtype=float) @ weights)
        if share > best_share:
            best, best_share = layout, share
    if best in (ISO, DATE_FORMATS[0]):
        return ISO
    return _as_written(text, weights, best)


def parse_dates(values: pd.Series, date_format: str = ISO) -> pd.Series:
    """Dates from text in ``date_format``, any other value as ISO 8601; NaT where neither reads
    it.  No other layout is guessed, so numpy reads a column as DuckDB and Spark do
    (:func:`safeshare.engine.sql_codec.number_sql`).

    >>> parse_dates(pd.Series(["03/15/2013", "2013-03-16", "March 17, 2013"]), "%m/%d/%Y").tolist()
    [Timestamp('2013-03-15 00:00:00'), Timestamp('2013-03-16 00:00:00'), NaT]
    """
    if pd.api.types.is_datetime64_any_dtype(values.dtype):
        return values
    if not date_format:
        return read_iso(values)
    parsed = read_layout(values, date_format)
    rest = (parsed.isna() & values.notna()).to_numpy()
    if rest.any():
        parsed[rest] = read_iso(values[rest]).to_numpy()
    return parsed


def read_any(values: pd.Series) -> pd.Series:
    """``values`` read in whatever layout pandas infers, values the first one's layout does not
    read one by one (``2024-03-31`` beside ``2024-03-31 10:30``); NaT where none reads.  For a
    table in memory only (an engine reads :func:`parse_dates`'s layouts).

    >>> read_any(pd.Series(["2024-03-31", "2024-04-01 10:30", "soon", None])).tolist()
    [Timestamp('2024-03-31 00:00:00'), Timestamp('2024-04-01 10:30:00'), NaT, NaT]
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        parsed = pd.to_datetime(values, errors="coerce")
    retry = (parsed.isna() & values.notna()).to_numpy()
    if retry.any():
        parsed[retry] = pd.to_datetime(values[retry], format="mixed", errors="coerce").to_numpy()
    return parsed


def read_iso(values: pd.Series) -> pd.Series:
    """``values`` read as ISO 8601 (:data:`ISO_DATE`, blanks around them ignored); NaT where
    they are not.

    >>> read_iso(pd.Series(["2013-3-5 10:00", "2013.03.05", "20130305"])).tolist()
    [Timestamp('2013-03-05 10:00:00'), NaT, NaT]
    """
    text = values.astype("string").str.strip()
    iso = text.str.fullmatch(ISO_DATE).fillna(False).to_numpy(dtype=bool)
    return read_layout(text.where(iso), "ISO8601")


def write_dates(dates: pd.Series, date_format: str = ISO) -> pd.Series:
    """Dates as text in ``date_format`` (ISO 8601 days by default); missing stay missing."""
    written = pd.Series(dates).dt.strftime(date_format or "%Y-%m-%d")
    return written.astype(object).where(written.notna(), None)


def read_layout(values: pd.Series, layout: str) -> pd.Series:
    """``values`` read in ``layout`` alone (``%-m``: an unpadded month); NaT where they do not."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return pd.to_datetime(
            values, errors="coerce", format=layout.replace("%-", "%") if "%" in layout else layout
        )


def unpadded_layout(layout: str) -> str:
    """``layout`` with months, days and hours written without zero-padding.

    >>> unpadded_layout("%d/%m/%Y %H:%M")
    '%-d/%-m/%Y %-H:%M'
    """
    return layout.replace("%m", "%-m").replace("%d", "%-d").replace("%H", "%-H")


def _as_written(text: pd.Series, weights: np.ndarray, layout: str) -> str:
    """``layout``, or its unpadded form where most values read with it are not zero-padded."""
    parsed = read_layout(text, layout)
    read = parsed.notna().to_numpy()
    unpadded = unpadded_layout(layout)
    padded_matches = _matches(text[read], parsed[read], layout) @ weights[read]
    unpadded_matches = _matches(text[read], parsed[read], unpadded) @ weights[read]
    return unpadded if unpadded_matches > padded_matches else layout


def _matches(text: pd.Series, parsed: pd.Series, layout: str) -> np.ndarray:
    return (write_dates(parsed, layout).to_numpy() == text.to_numpy()).astype(float)
