"""Hierarchies: ARX's CSV format, the builders, and validation that names the bad value."""

import itertools

import pandas as pd
import pytest

from safeshare.anonymize import hierarchy as builders
from safeshare.anonymize.hierarchy import Hierarchy, HierarchyError
from tests.conftest import SHARED, needs_shared


def test_rows_levels_and_generalize():
    h = Hierarchy.from_rows(
        "zip", [["13053", "1305*", "130**", "*"], ["13068", "1306*", "130**", "*"]]
    )
    assert h.height == 3
    assert h.sizes() == (2, 2, 1, 1)
    assert h.generalize(["13068"], 2) == ["130**"]
    assert h.leaves(2).tolist() == [2]


def test_csv_round_trip(tmp_path):
    path = tmp_path / "h.csv"
    path.write_text("a;x;*\nb;x;*\nc;y;*\n", encoding="utf-8")
    h = Hierarchy.from_csv("col", path)
    assert h.values == ("a", "b", "c")
    assert h.labels[1] == ("x", "y")
    assert h.to_rows()[2] == ["c", "y", "*"]


@needs_shared
def test_adult_hierarchies_load_and_cover_the_data():
    assert SHARED is not None
    folder = SHARED / "adult-arx"
    frame = pd.read_csv(folder / "adult.csv", sep=";", dtype=str)
    heights = {}
    for column in frame.columns:
        h = Hierarchy.from_csv(column, folder / f"adult_hierarchy_{column}.csv")
        h.encode(frame[column])
        heights[column] = h.height
    assert heights == {
        "sex": 1,
        "age": 4,
        "race": 1,
        "marital-status": 2,
        "education": 3,
        "native-country": 2,
        "workclass": 2,
        "occupation": 2,
        "salary-class": 1,
    }


def test_not_nested_names_the_label():
    with pytest.raises(HierarchyError, match="not nested: 'x' at level 1"):
        Hierarchy.from_rows("c", [["a", "x", "p", "*"], ["b", "x", "q", "*"]])


def test_last_level_must_be_one_label():
    with pytest.raises(HierarchyError, match="last level must be one label"):
        Hierarchy.from_rows("c", [["a", "x"], ["b", "y"]])


def test_ragged_and_duplicate_rows():
    with pytest.raises(HierarchyError, match="row 2"):
        Hierarchy.from_rows("c", [["a", "x", "*"], ["b", "*"]])
    with pytest.raises(HierarchyError, match="lists the value 'a' twice"):
        Hierarchy.from_rows("c", [["a", "*"], ["a", "*"]])


def test_values_missing_from_the_hierarchy_are_counted_never_named():
    h = Hierarchy.from_rows("city", [["Paris", "*"], ["Lyon", "*"]])
    values = pd.Series(["Paris", "Secretville", "Lyon", "Otherplace", "Otherplace"])
    with pytest.raises(HierarchyError) as err:
        h.encode(values)
    message = str(err.value)
    assert "'city'" in message and "2 distinct value(s)" in message and "3 record(s)" in message
    assert not any(value in message for value in ("Secretville", "Otherplace", "Paris", "Lyon"))


def test_numbers_match_by_value():
    h = Hierarchy.from_rows("age", [["39", "30-39", "*"], ["40", "40-49", "*"]])
    assert h.encode(pd.Series(["39.0", "40"])).tolist() == [0, 1]


def test_missing_values_need_a_row():
    h = Hierarchy.from_rows("a", [["x", "*"]])
    with pytest.raises(HierarchyError, match=r"1 missing value\(s\)"):
        h.encode(pd.Series(["x", None]))
    h = Hierarchy.from_rows("a", [["x", "*"], ["(missing)", "*"]])
    assert h.encode(pd.Series(["x", None])).tolist() == [0, 1]


def test_intervals_nested_and_labelled():
    h = builders.intervals("age", [3, 12, 17, 18, 25, 99], widths=[5, 10, 50])
    assert h.generalize(["17"], 1) == ["15-19"]
    assert h.generalize(["17"], 2) == ["10-19"]
    assert h.generalize(["99"], 3) == ["50-99"]
    with pytest.raises(HierarchyError, match="not a multiple"):
        builders.intervals("age", [1], widths=[5, 7])
    with pytest.raises(
        HierarchyError, match="2 distinct value\\(s\\) are not finite numbers"
    ) as err:
        builders.intervals("age", ["x", "3", "inf"], widths=[5])
    assert "'x'" not in str(err.value)  # (counted, never quoted: they are data)


def test_cuts():
    h = builders.cuts("income", [500, 700, 1500, 25000, 30000], [[1000, 2000, 10000], [2000]])
    assert h.generalize(["500", "1500", "25000"], 1) == ["<1000", "[1000, 2000)", ">=10000"]
    assert h.generalize(["1500", "25000"], 2) == ["<2000", ">=2000"]
    with pytest.raises(HierarchyError, match="cut point 3000 of level 2"):
        builders.cuts("income", [1], [[1000], [3000]])


def test_dates():
    h = builders.dates("day", ["2024-03-31", "2024-03-02", "2024-04-02", "2023-12-31"])
    assert h.generalize(["2024-03-31"], 1) == ["2024-03"]
    assert h.generalize(["2024-03-31"], 2) == ["2024"]
    assert h.height == 3
    with pytest.raises(HierarchyError, match="1 distinct value\\(s\\) are not dates") as err:
        builders.dates("day", ["soon", "2024-03-31"])
    assert "soon" not in str(err.value)


def test_masking_right_to_left():
    h = builders.masking("zip", ["13053", "13058", "13068", "13168", "14850", "24850"])
    assert [h.generalize(["13053"], level)[0] for level in range(h.height + 1)] == [
        "13053",
        "1305*",
        "130**",
        "13***",
        "1****",
        "*",
    ]


def test_groupings_from_yaml_lists():
    levels = [{"married": ["Married-civ", "Married-AF"], "single": ["Never", "Divorced"]}]
    h = builders.groupings("marital", ["Married-civ", "Never", "Divorced"], levels)
    assert h.generalize(["Divorced"], 1) == ["single"]
    with pytest.raises(HierarchyError, match="1 distinct value\\(s\\) of the data are in no gr"):
        builders.groupings("marital", ["Widowed", "Never"], levels)
    with pytest.raises(HierarchyError, match="the group 'single' is in no group at level 2"):
        builders.groupings("marital", ["Never"], [*levels, {"all": ["married"]}])


def test_automatic_numeric_and_text():
    h = builders.automatic("age", [str(a) for a in range(17, 91)])
    assert h.height >= 3 and h.labels[-1] == ("*",)
    assert builders.automatic("color", ["red", "blue"]).height == 1


# ---- automatic: digit codes are masked, numbers of varying length are intervals -----------


def test_automatic_masks_zip_codes_and_keeps_the_leading_zero():
    zips = ["02139", "02138", "02141", "10001", "10002"]
    h = builders.automatic("zip", zips)
    assert h.source == "masking"
    assert h.values == ("02138", "02139", "02141", "10001", "10002")
    assert h.labels[1:] == (("0213*", "0214*", "1000*"), ("021**", "100**"), ("*",))
    assert h.generalize(["02139", "10001"], 1) == ["0213*", "1000*"]
    assert h.encode(pd.Series(["02139"])).tolist() == [1]


def test_automatic_masks_digit_strings_with_a_leading_zero_of_any_length():
    h = builders.automatic("code", ["0042", "0043", "0051", "7", "12"])
    assert h.source == "masking"
    assert h.generalize(["0042"], 1) == ["004*"]
    assert "0042" in h.values and "42" not in h.values


def test_automatic_keeps_numbers_of_varying_length_as_intervals():
    h = builders.automatic("age", [str(a) for a in range(17, 91)])
    assert h.source == "intervals"
    assert h.generalize(["17", "90"], 1) == ["17-18", "89-90"]
    hours = builders.automatic("hours", [str(x) for x in range(1, 100)])
    assert hours.source == "intervals" and hours.generalize(["5"], 1) == ["5-6"]


# ---- levels that merge nothing are dropped from built hierarchies ------------------------


def _merges_at_every_level(h):
    sizes = h.sizes()
    return all(finer > coarser for finer, coarser in itertools.pairwise(sizes))


def test_automatic_has_no_identity_level():
    h = builders.automatic("age", [str(a) for a in range(17, 91)])
    assert "17-17" not in h.labels[1]
    assert _merges_at_every_level(h)
    assert h.labels[-1] == ("*",) and h.values[0] == "17"


def test_intervals_drop_the_levels_that_merge_nothing():
    h = builders.intervals("age", [3, 4, 17, 18, 25, 61], widths=[1, 5, 10, 50])
    assert h.labels[1:] == (("0-4", "15-19", "25-29", "60-64"), ("0-49", "50-99"), ("*",))
    # a level of one label below the top merges: it stays
    h = builders.intervals("a", [1, 2, 3], widths=[1, 2, 10])
    assert h.labels[1:] == (("0-1", "2-3"), ("0-9",), ("*",))


def test_masking_drops_the_levels_that_merge_nothing():
    h = builders.masking("zip", ["13053", "13068", "14850", "14853"])
    assert h.labels[1:] == (("1305*", "1306*", "1485*"), ("130**", "148**"), ("1****",), ("*",))


def test_a_given_hierarchy_keeps_its_levels():
    h = Hierarchy.from_rows("c", [["a", "a", "x", "*"], ["b", "b", "x", "*"]])
    assert h.height == 3 and h.labels[1] == ("a", "b")


# ---- dates by day, week, month, quarter, year, decade -----------------------------------


def test_dates_by_week_and_by_month_quarter_year():
    days = ["2024-01-29", "2024-02-01", "2024-02-14", "2024-03-20", "2024-05-15", "2023-12-31"]
    weeks = builders.dates("day", days, granularity=["week"])
    assert weeks.labels[1] == ("2023-W52", "2024-W05", "2024-W07", "2024-W12", "2024-W20")
    assert weeks.labels[2] == ("*",)
    h = builders.dates("day", days, granularity=["month", "quarter", "year"])
    assert h.height == 4
    assert h.labels[1] == ("2023-12", "2024-01", "2024-02", "2024-03", "2024-05")
    assert h.labels[2] == ("2023-Q4", "2024-Q1", "2024-Q2")
    assert h.labels[3] == ("2023", "2024")
    assert h.generalize(["2024-01-29"], 1) == ["2024-01"]  # a date stays in its own month


def test_dates_iso_weeks_and_decades():
    h = builders.dates("day", ["2024-12-30", "2025-01-02", "2024-06-03", "2024-06-04"], ["week"])
    assert h.generalize(["2024-12-30", "2024-06-03"], 1) == ["2025-W01", "2024-W23"]
    h = builders.dates(
        "d", ["1999-05-01", "1999-06-01", "2001-01-01", "2005-01-01"], ["year", "decade"]
    )
    assert h.labels[1:] == (("1999", "2001", "2005"), ("1990s", "2000s"), ("*",))


def test_dates_by_day_merges_times_of_one_day():
    times = ["2024-03-31 10:00", "2024-03-31 12:30", "2024-04-01 09:00", "2024-04-01"]
    h = builders.dates("t", times, ["day"])
    assert h.labels[1] == ("2024-03-31", "2024-04-01")
    assert h.generalize(["2024-04-01"], 1) == ["2024-04-01"]


def test_dates_granularity_is_checked():
    with pytest.raises(HierarchyError, match="'hour' is not a date level"):
        builders.dates("day", ["2024-01-01"], granularity=["hour"])
    with pytest.raises(HierarchyError, match="'week' after 'month'"):
        builders.dates("day", ["2024-01-01"], granularity=["month", "week"])
    with pytest.raises(HierarchyError, match="no date level can follow 'week'"):
        builders.dates("day", ["2024-01-01"], granularity=["week", "year"])


def test_config_dates_levels():
    from safeshare.anonymize.config import AnonymizeConfig
    from safeshare.errors import SchemaError

    def spec(hierarchy):
        config = {"quasi_identifiers": {"d": {"hierarchy": hierarchy}}, "privacy": {"k": 2}}
        return AnonymizeConfig.from_dict(config).quasi_identifiers["d"].hierarchy

    assert spec("dates").date_levels == ("month", "year")
    assert spec({"dates": ["day", "quarter", "year"]}).date_levels == ("day", "quarter", "year")
    assert spec({"dates": "quarter"}).date_levels == ("quarter",)
    with pytest.raises(SchemaError, match="'hour' is not a date level"):
        spec({"dates": ["hour"]})


# ---- missing values: their own label below the top, '*' at the top ----------------------

MISSING = [None, float("nan"), "", "  ", pd.NA]


@pytest.mark.parametrize(
    "build",
    [
        lambda v: builders.intervals("a", v, widths=[10]),
        lambda v: builders.cuts("a", v, [[30]]),
        lambda v: builders.automatic("a", v),
        lambda v: builders.masking("a", v),
        lambda v: builders.groupings("a", v, [{"young": ["21", "25"], "old": ["38"]}]),
    ],
    ids=["intervals", "cuts", "automatic", "masking", "groupings"],
)
def test_builders_give_missing_values_their_own_label(build):
    h = build(["21", "25", "38", *MISSING])
    assert h.values[-1] == "(missing)" and h.values.count("(missing)") == 1
    for level in range(h.height):
        assert h.generalize([None, "", "21"], level)[:2] == ["(missing)", "(missing)"]
    assert h.generalize([None], h.height) == ["*"]


def test_dates_give_missing_values_their_own_label():
    h = builders.dates("day", ["2024-03-31", "2024-03-02", None, "", float("nan"), pd.NaT])
    assert h.to_rows()[-1] == ["(missing)", "(missing)", "*"]
    assert h.generalize(["2024-03-31", None], 1) == ["2024-03", "(missing)"]


def test_missing_row_keeps_numbers_matching_by_value_and_intervals():
    h = builders.intervals("age", ["21", "25", "38", None], widths=[10])
    assert h.encode(pd.Series(["21.0", None])).tolist() == [0, 3]
    box = h.interval(1)
    assert box is not None and box.tolist() == [[21, 25], [38, 38], [21, 21]]
    assert h.interval(2).tolist() == [[21, 38]]


# ---- the config's hierarchies, built as the anonymizer builds them ------------------------


def test_config_date_levels_reach_the_builder():
    from safeshare.anonymize.config import AnonymizeConfig
    from safeshare.anonymize.inputs import hierarchy_for

    qis = {"d": {"hierarchy": {"dates": ["week"]}}}
    config = AnonymizeConfig.from_dict({"quasi_identifiers": qis, "privacy": {"k": 2}})
    values = pd.Series(["2024-01-29", "2024-02-01", "2024-06-03", "2023-05-02"])
    h = hierarchy_for(config, "d", values, {})
    assert h.labels[1] == ("2023-W18", "2024-W05", "2024-W23")


def test_config_builders_see_the_missing_values():
    from safeshare.anonymize.config import AnonymizeConfig
    from safeshare.anonymize.inputs import hierarchy_for

    qis = {"age": {"hierarchy": {"intervals": [10]}}}
    config = AnonymizeConfig.from_dict({"quasi_identifiers": qis, "privacy": {"k": 2}})
    values = pd.Series(["21", "25", None, "38"], dtype="str")
    h = hierarchy_for(config, "age", values, {})
    assert h.encode(values).tolist() == [0, 1, 3, 2]
    assert h.generalize(["21", None], 1) == ["20-29", "(missing)"]
