"""Date layouts: found among the public list, read as the file means them, written back alike."""

import numpy as np
import pandas as pd
import pytest

from safeshare.data.dates import DATE_FORMATS, ISO, date_format_of, parse_dates, write_dates


@pytest.mark.parametrize("layout", DATE_FORMATS[1:])
def test_every_public_layout_is_found_and_written_back_as_read(layout):
    days = pd.Series(pd.to_datetime("2013-01-01") + pd.to_timedelta(np.arange(0, 900, 7), "D"))
    text = days.dt.strftime(layout)
    found = date_format_of(text)
    assert found == layout  # days after the 12th tell month first from day first
    assert write_dates(parse_dates(text, found), found).tolist() == text.tolist()


def test_iso_days_stay_the_default_and_a_column_of_no_layout_reads_as_before():
    assert date_format_of(pd.Series(["2013-03-15", "2014-12-01"])) == ISO
    assert date_format_of(pd.Series(["March 2013", "soon"])) == ISO
    assert parse_dates(pd.Series(["2013-03-15"])).iloc[0] == pd.Timestamp("2013-03-15")


def test_day_first_dates_are_read_day_first_and_the_layout_reading_most_records_wins():
    text = pd.Series(["03/05/2013", "25/12/2013", "01/02/2014"])
    assert date_format_of(text) == "%d/%m/%Y"  # 25/12 reads only day first
    assert parse_dates(text, "%d/%m/%Y").dt.month.tolist() == [5, 12, 2]
    # weights: how many records hold each value (the one month-first value is held by 10)
    weighted = pd.Series(["12/25/2013", "25/12/2013"])
    assert date_format_of(weighted, np.array([10.0, 1.0])) == "%m/%d/%Y"


def test_unpadded_files_are_written_unpadded_and_stray_values_still_parse():
    text = pd.Series(["3/5/2013", "12/25/2013", "7/4/2014"])
    layout = date_format_of(text)
    assert layout == "%-m/%-d/%Y"
    assert write_dates(parse_dates(text, layout), layout).tolist() == text.tolist()
    mixed = parse_dates(pd.Series(["3/5/2013", "2013-07-04", None]), layout)
    assert mixed.iloc[1] == pd.Timestamp("2013-07-04") and pd.isna(mixed.iloc[2])
    assert write_dates(mixed, layout).tolist() == ["3/5/2013", "7/4/2013", None]
