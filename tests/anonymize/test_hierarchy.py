"""Hierarchies: ARX's CSV format, the builders, and validation that names the bad value."""

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
    h = builders.intervals("age", [3, 17, 25, 99], widths=[5, 10, 50])
    assert h.generalize(["17"], 1) == ["15-19"]
    assert h.generalize(["17"], 2) == ["10-19"]
    assert h.generalize(["99"], 3) == ["50-99"]
    with pytest.raises(HierarchyError, match="not a multiple"):
        builders.intervals("age", [1], widths=[5, 7])
    with pytest.raises(HierarchyError, match="'x' is not a number"):
        builders.intervals("age", ["x"], widths=[5])


def test_cuts():
    h = builders.cuts("income", [500, 1500, 25000], [[1000, 2000, 10000], [2000]])
    assert h.generalize(["500", "1500", "25000"], 1) == ["<1000", "[1000, 2000)", ">=10000"]
    assert h.generalize(["1500", "25000"], 2) == ["<2000", ">=2000"]
    with pytest.raises(HierarchyError, match="cut point 3000 of level 2"):
        builders.cuts("income", [1], [[1000], [3000]])


def test_dates():
    h = builders.dates("day", ["2024-03-31", "2024-04-02", "2023-12-31"])
    assert h.generalize(["2024-03-31"], 1) == ["2024-03"]
    assert h.generalize(["2024-03-31"], 2) == ["2024"]
    assert h.height == 3
    with pytest.raises(HierarchyError, match="'soon' is not a date"):
        builders.dates("day", ["soon"])


def test_masking_right_to_left():
    h = builders.masking("zip", ["13053", "13068", "14850"])
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
    with pytest.raises(HierarchyError, match="'Widowed' is in no group at level 1"):
        builders.groupings("marital", ["Widowed"], levels)


def test_automatic_numeric_and_text():
    h = builders.automatic("age", [str(a) for a in range(17, 91)])
    assert h.height >= 3 and h.labels[-1] == ("*",)
    assert builders.automatic("color", ["red", "blue"]).height == 1
