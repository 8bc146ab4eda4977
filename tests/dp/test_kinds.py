"""Column kinds measured with DP: the classes, the sensitivity the noise is scaled to, the
decisions at no noise (they agree with the exact guess) and under noise (a clean column keeps
its kind; text is not taken for numbers)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from safeshare.data.codec import as_numbers
from safeshare.data.domain import Kind
from safeshare.data.inference import GuessedColumn, infer_columns
from safeshare.dp.kinds import (
    CLASSES,
    DECIMAL,
    INTEGER,
    MIN_PRESENT_SIGMAS,
    MISSING,
    TEXT,
    Profile,
    classes_of,
    decide,
    plan_kinds,
)
from safeshare.dp.randomness import Randomness
from safeshare.errors import BudgetError


def _labels(values: list[str]) -> list[str]:
    return [CLASSES[c] for c in classes_of(pd.Series(values, dtype="string"))]


def test_each_value_falls_in_the_class_of_what_it_holds() -> None:
    assert _labels(["12", "-3", "4.0", "4.5", "1e3", "cat", "2 apples"]) == [
        "integer",
        "integer",
        "integer",
        "decimal",
        "integer",
        "text",
        "text",
    ]


def test_dates_fall_in_their_layout_and_padding() -> None:
    labels = _labels(["2013-03-15", "15.03.2013", "3/15/2013", "03/05/2013", "5/3/13", "2013/3/5"])
    assert labels[0] == "date in %Y-%m-%d, zero-padded"
    assert labels[1] == "date in %d.%m.%Y, zero-padded"
    assert labels[2] == "date in %m/%d/%Y, unpadded"
    # month first or day first: the pair reads it, and both layouts count it
    assert labels[3] == "date in %m/%d/%Y or %d/%m/%Y, zero-padded"
    assert labels[4] == "date in %m/%d/%y or %d/%m/%y, unpadded"
    assert labels[5] == "date in %Y/%m/%d, unpadded"
    # ISO 8601 outside the listed layouts is read by every engine: the ISO class; a date in
    # a layout no engine reads is text
    assert _labels(["2013-03-15 10:00", "2013.03.15", "31/31/2013"]) == [
        "date in %Y-%m-%d",
        "text",
        "text",
    ]


def test_dates_in_another_layout_are_not_read_as_dates() -> None:
    """No engine reads a layout outside the public list and ISO 8601, so a column written in
    one is not dates (it stays categorical), and a few such values in a date column are strays
    released as missing (the note where they clearly show: the test below)."""
    rows, sigma = 1000, 2.0
    spelled = pd.Series([f"2013.03.{1 + i % 28:02d}" for i in range(rows)], dtype="string")
    guess = decide("seen", Profile.of(spelled), rows, sigma)
    assert guess.kind is Kind.CATEGORICAL
    mostly = pd.Series(
        [f"2013-03-{1 + i % 28:02d}" for i in range(900)] + ["2013.03.05"] * 100,
        dtype="string",
    )
    guess = decide("seen", Profile.of(mostly), rows, sigma)
    assert guess.kind is Kind.CATEGORICAL  # 10% in another layout: not clearly dates
    mostly = pd.Series([f"2013-03-{1 + i % 28:02d}" for i in range(995)] + ["2013.03.05"] * 5)
    guess = decide("seen", Profile.of(mostly.astype("string")), rows, sigma)
    assert guess.kind is Kind.DATETIME
    read = as_numbers(mostly, "seen", Kind.DATETIME, date_format=guess.date_format,
                      strays_missing=True)  # fmt: skip
    assert np.isnan(read).sum() == 5


def test_a_profile_counts_records_per_class_and_distinct_values() -> None:
    profile = Profile.of(pd.Series(["1", "1", "2.5", None, "x"], dtype="string"))
    assert profile.counts[[MISSING, INTEGER, DECIMAL, TEXT]].tolist() == [1, 2, 1, 1]
    assert profile.counts.sum() == 5
    assert profile.distinct == 3


def _frame(rng: np.random.Generator, rows: int) -> pd.DataFrame:
    """Columns of every class, with missing values and repeats."""

    def pick(values: list[str | None]) -> list[str | None]:
        return [values[i] for i in rng.integers(0, len(values), rows)]

    return pd.DataFrame(
        {
            "mixed": pick(["1", "2.5", "2013-03-05", "3/5/2013", "x", None, " ", "7", "7"]),
            "count": pick([str(i) for i in range(5)] + [None]),
            "when": pick(["01.02.2003", "1.2.2003", "12.11.2003", None]),
        },
        dtype="string",
    )


def test_one_record_moves_each_column_by_one_class_and_one_distinct_value() -> None:
    """The sensitivity the noise is scaled to, sqrt(2 x columns), checked by removing each
    record in turn from frames with every class, repeats and missing values."""
    rng = np.random.default_rng(0)
    for _ in range(5):
        frame = _frame(rng, 12)
        full = np.concatenate([Profile.of(frame[c]).vector() for c in frame.columns])
        for row in range(len(frame)):
            rest = frame.drop(index=row)
            less = np.concatenate([Profile.of(rest[c]).vector() for c in rest.columns])
            moved = (full - less).reshape(len(frame.columns), -1)
            assert (np.abs(moved[:, :-1]).sum(axis=1) == 1).all()  # one class each
            assert (np.abs(moved[:, -1]) <= 1).all()  # the distinct count
            assert float(np.sum(moved.astype(float) ** 2)) <= 2 * len(frame.columns)


def test_the_plan_states_its_cost_before_reading_data() -> None:
    plan = plan_kinds(["a", "b", "c"], rho=0.03)
    assert plan.sigma == pytest.approx(10.0)
    assert plan.event.rho == pytest.approx(0.03)
    assert plan.event.l2_sensitivity == pytest.approx(math.sqrt(6))
    with pytest.raises(BudgetError, match="positive rho"):
        plan_kinds(["a"], rho=0.0)


def _columns(rows: int, rng: np.random.Generator) -> pd.DataFrame:
    ages = rng.integers(18, 90, rows).astype(str)
    return pd.DataFrame(
        {
            "age": ages,
            "income": np.round(rng.gamma(2.0, 900.0, rows), 2).astype(str),
            "serial": rng.permutation(rows).astype(str),
            "seen": pd.Series(pd.date_range("2020-01-01", periods=rows, freq="h")).dt.strftime(
                "%d/%m/%Y"
            ),
            "city": rng.choice(["Oslo", "Lima", "Pune"], rows),
            "note": [f"free remark number {i}" for i in range(rows)],
        },
        dtype="string",
    )


def test_at_little_noise_the_measured_kinds_agree_with_the_exact_guess() -> None:
    frame = _columns(3000, np.random.default_rng(1))
    exact = infer_columns(frame)
    measured = plan_kinds(list(frame.columns), rho=1e4).run(frame, Randomness(2)).guesses
    for guess, truth in zip(measured, exact, strict=True):
        assert (guess.kind, guess.integer, guess.date_format) == (
            truth.kind,
            truth.integer,
            truth.date_format,
        ), guess.name
        assert (guess.identifier is None) == (truth.identifier is None), guess.name


def _noisy(counts: np.ndarray, distinct: float, sigma: float, rng: np.random.Generator) -> Profile:
    return Profile(counts + rng.normal(0, sigma, counts.size), distinct + rng.normal(0, sigma))


def test_a_clean_column_keeps_its_kind_under_noise_and_text_is_not_taken_for_numbers() -> None:
    """2,000 noisy draws each: a clean integer column stays integer (its misjudgement rate is
    about 1 in 30,000), and a text column just above the least present count the decisions
    trust never reads as numbers or dates."""
    rng = np.random.default_rng(3)
    sigma = 50.0
    numbers, text = np.zeros(len(CLASSES)), np.zeros(len(CLASSES))
    numbers[INTEGER] = many = int(1.5 * MIN_PRESENT_SIGMAS * sigma)
    text[TEXT] = few = int(1.05 * MIN_PRESENT_SIGMAS * sigma)
    kinds: dict[str, list[GuessedColumn]] = {"numbers": [], "text": []}
    for _ in range(2000):
        kinds["numbers"].append(decide("n", _noisy(numbers, 40, sigma, rng), many, sigma))
        kinds["text"].append(decide("t", _noisy(text, 12, sigma, rng), few, sigma))
    misjudged = sum(g.kind is not Kind.NUMERIC or not g.integer for g in kinds["numbers"])
    assert misjudged <= 2
    assert all(g.kind is Kind.CATEGORICAL for g in kinds["text"])


def test_too_few_present_values_read_as_categorical_with_a_note() -> None:
    frame = pd.DataFrame({"age": [str(20 + i % 40) for i in range(300)]}, dtype="string")
    result = plan_kinds(["age"], rho=0.001).run(frame, Randomness(0))  # sigma about 32
    assert result.guesses[0].kind is Kind.CATEGORICAL
    assert "too few values are present in columns 'age'" in result.notes[0]
    assert "raise --epsilon" in result.notes[0]


def test_a_few_text_values_leave_a_numeric_column_numeric_and_are_counted_as_a_dp_estimate() -> (
    None
):
    ages = [str(20 + i % 50) for i in range(20_000)]
    ages[:600] = ["unknown"] * 600  # 3%: more than 1% and than the noise explains
    frame = pd.DataFrame({"age": ages, "zip": [str(10_000 + i) for i in range(20_000)]})
    frame.loc[:9, "zip"] = "n/a"  # ten stray values
    result = plan_kinds(["age", "zip"], rho=0.02).run(frame.astype("string"), Randomness(0))
    age, zip_code = result.guesses
    assert age.kind is Kind.CATEGORICAL  # 3% text: the column is not numbers
    assert zip_code.kind is Kind.NUMERIC and zip_code.integer  # sigma 10: ten strays hide
    assert not result.notes  # ten strays stay within the noise: nothing to say


def test_a_clear_share_of_strays_is_noted_without_its_exact_count() -> None:
    ages = [str(20 + i % 50) for i in range(100_000)]
    ages[:900] = ["unknown"] * 900  # 0.9%: numbers, with strays beyond the noise
    frame = pd.DataFrame({"age": ages}, dtype="string")
    plan = plan_kinds(["age"], rho=0.01)  # sigma 10
    result = plan.run(frame, Randomness(0))
    assert result.guesses[0].kind is Kind.NUMERIC
    (note,) = result.notes
    assert "column 'age' reads as numeric, but about" in note
    assert "(a DP estimate)" in note and "released as missing" in note
    quoted = int(note.split("about ")[1].split(" ")[0].replace(",", ""))
    assert abs(quoted - 900) <= 5 * plan.sigma * math.sqrt(3)


def test_dates_in_a_second_layout_are_noted_as_released_missing() -> None:
    """Dates in mixed layouts: the column is read in the layout that reads the most (then ISO
    8601); those in another public layout are released as missing, with a DP estimate of how
    many, as every engine reads them."""
    days = [f"{1 + i % 12}/{1 + i % 28}/2013" for i in range(20_000)]  # %m/%d/%Y, unpadded
    days[:3000] = [f"{1 + i % 28}.{1 + i % 12}.2014" for i in range(3000)]  # %d.%m.%Y
    days[3000:4000] = [f"2014-01-{1 + i % 28:02d}" for i in range(1000)]  # ISO: read too
    frame = pd.DataFrame({"seen": days}, dtype="string")
    plan = plan_kinds(["seen"], rho=0.02)  # sigma 7
    result = plan.run(frame, Randomness(0))
    guess = result.guesses[0]
    assert guess.kind is Kind.DATETIME and guess.date_format == "%-m/%-d/%Y"
    (note,) = result.notes
    assert "are not dates in %-m/%-d/%Y: they are released as missing" in note
    quoted = int(note.split("about ")[1].split(" ")[0].replace(",", ""))
    assert abs(quoted - 3000) <= 5 * plan.sigma * math.sqrt(len(CLASSES))
    read = as_numbers(frame["seen"], "seen", Kind.DATETIME, date_format=guess.date_format,
                      strays_missing=True)  # fmt: skip
    assert np.isnan(read).sum() == 3000


def test_a_blank_value_is_missing_as_the_codec_reads_it() -> None:
    profile = Profile.of(pd.Series(["4", "  ", "", None], dtype="string"))
    assert profile.counts[[MISSING, INTEGER]].tolist() == [3, 1] and profile.distinct == 1


def test_codes_all_distinct_are_dropped_under_noise_and_a_few_categories_never_are() -> None:
    """COMPAS-like noise (5,771 records, sigma 268): a case-number column, all distinct, is
    dropped as near-unique in nearly every draw (3.4 deviations: ~1 in 2,500 missed); one of 6
    categories, in none; a column of 2,800 distinct codes among 2,900 present (too few to tell
    its kind) in about 92% (1.4 deviations above the threshold)."""
    rng = np.random.default_rng(4)
    sigma, rows = 268.0, 5771
    text = np.zeros(len(CLASSES))
    text[TEXT] = rows
    sparse = np.zeros(len(CLASSES))
    sparse[TEXT], sparse[MISSING] = 2900, rows - 2900
    dropped = {"codes": 0, "categories": 0, "sparse codes": 0}
    for _ in range(2000):
        dropped["codes"] += (
            decide("c", _noisy(text, rows, sigma, rng), rows, sigma).identifier is not None
        )
        dropped["categories"] += (
            decide("k", _noisy(text, 6, sigma, rng), rows, sigma).identifier is not None
        )
        dropped["sparse codes"] += (
            decide("s", _noisy(sparse, 2800, sigma, rng), rows, sigma).identifier is not None
        )
    assert dropped["codes"] >= 1995 and dropped["categories"] == 0
    assert dropped["sparse codes"] >= 1750
