"""The search on distinct rows with counts is the search on the records: same figures, same output.

An engine hands the anonymizer its table as distinct rows with record counts (one GROUP BY);
here pandas plays the engine, so these tests isolate the counting: every figure of
``Anonymizer.plan`` must equal ``Anonymizer.fit``'s, and the records ``plan.apply`` releases
chunk by chunk must be ``fit``'s frame, byte for byte as CSV.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safeshare.anonymize.anonymizer import Anonymizer
from safeshare.anonymize.counted import AnonymizationPlan
from safeshare.anonymize.hierarchy import HierarchyError
from safeshare.anonymize.result import AnonymizationResult
from safeshare.data.readers import read_frame
from safeshare.errors import InputError
from tests.conftest import SHARED, needs_shared

FAIR_QIS = ("age", "yrs_married", "children", "religious", "educ", "occupation")


def counted(frame: pd.DataFrame, columns: list[str]) -> tuple[pd.DataFrame, np.ndarray]:
    """What an engine's GROUP BY returns: distinct rows (first-seen order) and their counts."""
    grouped = frame.groupby(columns, dropna=False, sort=False).size()
    rows = grouped.index.to_frame(index=False)
    for name in columns:
        rows[name] = rows[name].astype(frame[name].dtype)
    return rows, grouped.to_numpy(dtype=np.int64)


def figures(result: AnonymizationResult) -> dict[str, object]:
    """Every figure of a result (the search's own timing aside)."""
    out = result.to_dict()
    out["search"] = {k: v for k, v in out["search"].items() if k != "seconds"}
    out["class_sizes"] = result.class_sizes.tolist()
    out["columns"] = result.columns
    return out


def csv_of(frames: list[pd.DataFrame]) -> str:
    stream = io.StringIO()
    for i, frame in enumerate(frames):
        frame.to_csv(stream, header=i == 0, index=False)
    return stream.getvalue()


def plan_and_fit(
    config: dict, frame: pd.DataFrame, chunk: int = 1000
) -> tuple[AnonymizationPlan, AnonymizationResult]:
    anonymizer = Anonymizer(config)
    rows, weights = counted(frame, anonymizer.counted_columns())
    plan = anonymizer.plan(rows, weights, list(frame.columns))
    fitted = Anonymizer(config).fit(frame)
    assert figures(plan.result) == figures(fitted)
    chunks = [plan.apply(frame.iloc[i : i + chunk]) for i in range(0, len(frame), chunk)]
    assert csv_of(chunks) == fitted.frame.to_csv(index=False)
    return plan, fitted


def fair_config(**extra: object) -> dict:
    config: dict = {
        "quasi_identifiers": {name: {"hierarchy": "auto"} for name in FAIR_QIS},
        "sensitive": ["rate_marriage"],
        "privacy": {"k": 10},
    }
    config.update(extra)
    return config


@pytest.fixture(scope="module")
def fair_text(fair_csv) -> pd.DataFrame:
    """The example as the readers give it (text), the way a release reads it."""
    return read_frame(fair_csv)


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {"suppression_limit": 0.02, "quality": "loss"},
        {
            "privacy": {
                "k": 5,
                "l_diversity": {"attribute": "rate_marriage", "l": 3},
                "t_closeness": {"attribute": "rate_marriage", "t": 0.3},
            },
            "suppression_limit": 0.05,
            "suppressed_records": "mask",
        },
        {"suppression_limit": 0.03, "recode_suppressed": True, "quality": "entropy"},
        {"search": "local", "privacy": {"k": 20, "average_risk": 0.05}},
        {"transforms": {"affairs": {"mask": {"keep": 1}}}, "other_columns": "drop"},
    ],
    ids=["k", "suppression", "l-t-mask", "recoding", "local", "transforms"],
)
def test_fair_from_counts_is_fair_in_memory(fair_text: pd.DataFrame, extra: dict) -> None:
    plan, _ = plan_and_fit(fair_config(**extra), fair_text, chunk=1500)
    assert len(plan.prepared.problem.weights) < len(fair_text)  # the counts are fewer rows


def test_the_figures_are_sums_of_counts(fair_text: pd.DataFrame) -> None:
    plan, fitted = plan_and_fit(fair_config(suppression_limit=0.02), fair_text)
    result = plan.result
    assert result.suppressed > 0
    assert result.rows_out == len(fair_text) - result.suppressed == len(fitted.frame)
    assert int(result.class_sizes.sum()) == result.rows_out
    assert result.classes.smallest >= 10


@needs_shared
@pytest.mark.parametrize("l_diversity", [False, True])
def test_adult_from_counts_is_adult_in_memory(l_diversity: bool) -> None:
    folder = SHARED / "adult-arx"
    frame = read_frame(folder / "adult.csv")
    qis = [c for c in frame.columns if c != "salary-class"]
    privacy: dict = {"k": 5}
    if l_diversity:
        privacy["l_diversity"] = {"attribute": "salary-class", "l": 2}
    config = {
        "quasi_identifiers": {
            c: {"hierarchy": str(folder / f"adult_hierarchy_{c}.csv")} for c in qis
        },
        "sensitive": ["salary-class"],
        "privacy": privacy,
        "suppression_limit": 0.01,
    }
    plan, fitted = plan_and_fit(config, frame, chunk=10_000)
    assert plan.result.suppressed == fitted.suppressed > 0
    if not l_diversity:  # ARX's optimum (benchmarks/anonymize_adult.py)
        assert plan.result.search["score"] == pytest.approx(0.503431, abs=1e-6)


@st.composite
def tables(draw: st.DrawFn) -> tuple[pd.DataFrame, dict]:
    n = draw(st.integers(20, 200))
    data = {}
    qis = {}
    for c in range(draw(st.integers(1, 3))):
        size = draw(st.integers(1, 25))
        values = draw(st.lists(st.integers(10, 10 + size), min_size=n, max_size=n))
        texts: list[str | None] = [str(v) for v in values]
        if draw(st.integers(0, 9)) == 0:  # now and then a missing value: refused by both
            texts[draw(st.integers(0, n - 1))] = None
        data[f"q{c}"] = pd.array(texts, dtype="string")
        qis[f"q{c}"] = {"hierarchy": draw(st.sampled_from(["auto", "mask"]))}
    data["s"] = pd.array(draw(st.lists(st.sampled_from("ab"), min_size=n, max_size=n)), "string")
    frame = pd.DataFrame(data)
    privacy: dict = {"k": draw(st.integers(2, 8))}
    if draw(st.booleans()) and frame["s"].nunique() == 2:
        privacy["l_diversity"] = {"attribute": "s", "l": 2}
    config = {
        "quasi_identifiers": qis,
        "sensitive": ["s"],
        "privacy": privacy,
        "suppression_limit": draw(st.sampled_from([0.0, 0.05, 0.2])),
        "suppressed_records": draw(st.sampled_from(["remove", "mask"])),
        "quality": draw(st.sampled_from(["precision", "loss", "discernibility"])),
    }
    return frame, config


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(1, 50))
def test_random_tables_from_counts_are_random_tables_in_memory(
    case: tuple[pd.DataFrame, dict], chunk: int
) -> None:
    frame, config = case
    try:
        Anonymizer(config).fit(frame)
    except (InputError, ValueError) as in_memory:  # the same refusal from counts
        anonymizer = Anonymizer(config)
        rows, weights = counted(frame, anonymizer.counted_columns())
        with pytest.raises(type(in_memory)) as caught:
            anonymizer.plan(rows, weights, list(frame.columns))
        assert str(caught.value) == str(in_memory)
        return
    plan_and_fit(config, frame, chunk)


def test_errors_from_counts_count_records_not_rows() -> None:
    frame = pd.DataFrame({"zip": ["13053"] * 5 + ["99999"] * 3, "x": ["1"] * 8})
    rows = [["13053", "1305*", "*"], ["13068", "1306*", "*"]]
    config = {"quasi_identifiers": {"zip": {"hierarchy": {"rows": rows}}}, "privacy": {"k": 2}}
    with pytest.raises(HierarchyError) as in_memory:
        Anonymizer(config).fit(frame)
    counts, weights = counted(frame, ["zip"])
    with pytest.raises(HierarchyError) as from_counts:
        Anonymizer(config).plan(counts, weights, list(frame.columns))
    assert str(from_counts.value) == str(in_memory.value)
    assert "3 record(s)" in str(in_memory.value) and "99999" not in str(in_memory.value)


def test_a_record_the_counts_did_not_hold_is_refused_without_its_value() -> None:
    frame = pd.DataFrame({"zip": ["13053", "13068", "13053", "13068"]})
    rows = [["13053", "1305*", "*"], ["13068", "1306*", "*"], ["13099", "1309*", "*"]]
    config = {"quasi_identifiers": {"zip": {"hierarchy": {"rows": rows}}}, "privacy": {"k": 2}}
    plan = Anonymizer(config).plan(*counted(frame, ["zip"]), columns=["zip"])
    with pytest.raises(InputError, match="changed after it was counted") as caught:
        plan.apply(pd.DataFrame({"zip": ["13053", "13099"]}))
    assert "13099" not in str(caught.value)


def test_weights_must_count_records() -> None:
    config = {"quasi_identifiers": {"zip": {"hierarchy": "mask"}}, "privacy": {"k": 1}}
    with pytest.raises(ValueError, match="positive integer count per row"):
        Anonymizer(config).plan(pd.DataFrame({"zip": ["1", "2"]}), np.array([1, 0]), ["zip"])
