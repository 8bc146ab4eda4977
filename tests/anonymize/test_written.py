"""Every model the result claims holds for the table as written, recounted from the file alone.

The recount here reads nothing of the anonymizer but its written frame and the input's
sensitive column: it groups the written records by their quasi-identifiers (the all-``*``
records of ``suppressed_records: mask`` are a class like any other) and recomputes k, the three
l-diversities, t (equal distance, from the input's distribution), beta-likeness,
delta-disclosure, sample uniqueness and the average risk.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safeshare.anonymize.anonymizer import Anonymizer
from safeshare.anonymize.models import AnonymizationError
from safeshare.anonymize.result import AnonymizationResult
from safeshare.errors import InputError
from tests.conftest import SHARED, needs_shared


def recount(
    written: pd.DataFrame, qis: list[str], sensitive: str, given: pd.Series
) -> dict[str, float]:
    """k, distinct / entropy l, the recursive ratio, t, beta, delta, sample uniqueness and the
    average risk of a written table."""
    if written.empty:
        return {}
    counts = written.groupby(qis, dropna=False)[sensitive].value_counts().unstack(fill_value=0)
    sizes = counts.sum(axis=1).to_numpy(dtype=float)
    shares = counts.to_numpy(dtype=float) / sizes[:, None]
    entropy = -(np.where(shares > 0, shares * np.log(np.where(shares > 0, shares, 1)), 0)).sum(1)
    overall = given.value_counts(normalize=True)
    t = 0.5 * (counts.div(sizes, axis=0).reindex(columns=overall.index, fill_value=0) - overall)
    ranked = -np.sort(-counts.to_numpy(), axis=1)
    inside = counts.div(sizes, axis=0).reindex(columns=overall.index, fill_value=0).to_numpy()
    held, p = inside > 0, overall.to_numpy()[None, :]
    gains = np.where(held, (inside - p) / p, 0.0)
    logs = np.where(held, np.abs(np.log2(np.where(held, inside, 1) / p)), 0.0)
    return {
        "k": int(sizes.min()),
        "distinct_l": int((counts.to_numpy() > 0).sum(axis=1).min()),
        "entropy_l": float(math.exp(entropy.min())),
        "recursive_c_needed(2)": float(
            max(r[0] / r[1:].sum() if r[1:].sum() else math.inf for r in ranked)
        ),
        "t": float(t.abs().sum(axis=1).max()),
        "average_risk": len(sizes) / sizes.sum(),
        "beta": float(gains.max()),
        "delta": float(logs.max()),
        "sample_uniqueness": float(sizes[sizes == 1].sum() / sizes.sum()),
    }


def check_claims(result: AnonymizationResult, qis: list[str], frame: pd.DataFrame) -> None:
    """Each model outcome of ``result`` against the recount of ``result.frame``."""
    found = recount(result.frame, qis, "s", frame["s"])
    if not found:
        return
    for outcome in result.models:
        achieved = outcome.achieved
        if outcome.name == "k-anonymity":
            assert achieved["k"] == found["k"]
            assert outcome.satisfied == (found["k"] >= int(outcome.parameters.split("=")[1]))
        elif outcome.name == "distinct l-diversity":
            assert achieved["l"] == found["distinct_l"]
        elif outcome.name == "entropy l-diversity":
            assert achieved["l"] == pytest.approx(found["entropy_l"])
        elif outcome.name == "recursive (c,l)-diversity":
            assert achieved["c_needed"] == pytest.approx(found["recursive_c_needed(2)"])
        elif outcome.name == "t-closeness":
            assert achieved["t"] == pytest.approx(found["t"])
        elif outcome.name == "average risk":
            assert achieved["average_risk"] == pytest.approx(found["average_risk"])
        elif outcome.name.endswith("beta-likeness"):
            assert achieved["beta"] == pytest.approx(found["beta"])
        elif outcome.name == "delta-disclosure privacy":
            assert achieved["delta"] == pytest.approx(found["delta"])
        elif outcome.name == "sample uniqueness":
            assert achieved["sample_uniqueness"] == pytest.approx(found["sample_uniqueness"])
        assert outcome.satisfied, f"{outcome.name} ({outcome.parameters}) fails as written"
    assert result.class_sizes.min() == found["k"]
    # every class size, as the written records group
    written = np.sort(result.frame.groupby(qis, dropna=False, observed=True).size().to_numpy())
    assert result.class_sizes.tolist() == written.tolist()
    assert result.classes.count == len(written)


@st.composite
def cases(draw: st.DrawFn) -> tuple[pd.DataFrame, dict]:
    n = draw(st.integers(20, 120))
    data: dict[str, object] = {}
    for c in range(draw(st.integers(1, 3))):
        values = draw(st.lists(st.integers(100, 100 + draw(st.integers(1, 60))), min_size=n,
                               max_size=n))  # fmt: skip
        data[f"q{c}"] = [str(v) for v in values]
    data["s"] = draw(st.lists(st.sampled_from("abc"), min_size=n, max_size=n))
    frame = pd.DataFrame(data)
    qis = [c for c in frame.columns if c != "s"]
    privacy: dict = {"k": draw(st.integers(2, 12))}
    distinct = frame["s"].nunique()
    variant = draw(st.sampled_from(["none", "distinct", "entropy", "recursive"]))
    if variant != "none" and distinct >= 2:
        privacy["l_diversity"] = {"attribute": "s", "l": 2, "variant": variant}
        if variant == "recursive":
            privacy["l_diversity"]["c"] = 3
    if draw(st.booleans()):
        privacy["t_closeness"] = {"attribute": "s", "t": draw(st.sampled_from([0.2, 0.35]))}
    if draw(st.booleans()):
        privacy["average_risk"] = 0.2
    extra = draw(st.sampled_from(["none", "basic", "enhanced", "delta", "unique"]))
    if extra in ("basic", "enhanced"):
        privacy["beta_likeness"] = {"attribute": "s", "beta": 1.0, "variant": extra}
    elif extra == "delta":
        privacy["delta_disclosure"] = {"attribute": "s", "delta": 1.2}
    elif extra == "unique":
        privacy["sample_uniqueness"] = 0.05
    config = {
        "quasi_identifiers": {q: {"hierarchy": "mask"} for q in qis},
        "sensitive": ["s"],
        "privacy": privacy,
        "suppression_limit": draw(st.sampled_from([0.0, 0.05, 0.2, 0.5])),
        "suppressed_records": draw(st.sampled_from(["remove", "mask"])),
        "recode_suppressed": draw(st.booleans()),
        "search": draw(st.sampled_from(["optimal", "optimal", "local"])),
    }
    return frame, config


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_every_claim_holds_for_the_table_as_written(case: tuple[pd.DataFrame, dict]) -> None:
    frame, config = case
    try:
        result = Anonymizer(config).fit(frame)
    except (AnonymizationError, InputError):  # no solution, or a model unreachable
        return
    check_claims(result, [c for c in frame.columns if c != "s"], frame)


def test_masked_records_that_would_break_k_are_removed_and_the_card_says_so() -> None:
    # 12 records in classes of 6 and 6 ("111", "222"), 3 outliers suppressed: masked, they
    # would be a class of 3 < k=5
    frame = pd.DataFrame(
        {"q": ["111"] * 6 + ["222"] * 6 + ["399", "499", "599"], "s": [*"ab" * 7, "a"]}
    )
    config = {
        "quasi_identifiers": {"q": {"hierarchy": "mask", "max_level": 0}},
        "sensitive": ["s"],
        "privacy": {"k": 5},
        "suppression_limit": 0.25,
        "suppressed_records": "mask",
    }
    result = Anonymizer(config).fit(frame)

    assert result.suppressed == 3 and result.rows_out == 12
    assert result.suppressed_records == "remove"
    assert "(*)" not in result.frame["q"].tolist() and "*" not in result.frame["q"].tolist()
    assert "k=5" in result.notes[0] and "removed instead" in result.notes[0]
    check_claims(result, ["q"], frame)


def test_masked_records_that_keep_every_model_stay_masked() -> None:
    frame = pd.DataFrame(
        {"q": ["111"] * 6 + ["222"] * 6 + [f"{d}99" for d in range(3, 9)], "s": list("ab" * 9)}
    )
    config = {
        "quasi_identifiers": {"q": {"hierarchy": "mask", "max_level": 0}},
        "sensitive": ["s"],
        "privacy": {"k": 5, "l_diversity": {"attribute": "s", "l": 2}},
        "suppression_limit": 0.4,
        "suppressed_records": "mask",
    }
    result = Anonymizer(config).fit(frame)

    assert result.suppressed_records == "mask" and result.notes == ()
    assert (result.frame["q"] == "*").sum() == 6 and result.rows_out == 18
    assert sorted(result.class_sizes.tolist()) == [6, 6, 6]
    check_claims(result, ["q"], frame)


@needs_shared
def test_adult_masked_suppression_as_written() -> None:
    assert SHARED is not None
    folder = SHARED / "adult-arx"
    frame = pd.read_csv(folder / "adult.csv", sep=";", dtype=str)
    frame = frame.rename(columns={"salary-class": "s"})
    qis = ["sex", "age", "race", "marital-status"]
    config = {
        "quasi_identifiers": {
            c: {"hierarchy": str(folder / f"adult_hierarchy_{c}.csv")} for c in qis
        },
        "sensitive": ["s"],
        "privacy": {"k": 50, "l_diversity": {"attribute": "s", "l": 2}},
        "suppression_limit": 0.01,
        "suppressed_records": "mask",
        "other_columns": "drop",
    }
    result = Anonymizer(config).fit(frame)

    # masked, the 33 suppressed records would have been one class of 33 < 50
    assert result.suppressed == 33 and result.suppressed_records == "remove"
    assert result.rows_out == len(frame) - 33
    check_claims(result, qis, frame)


def test_ordered_t_closeness_on_text_without_an_order_is_refused() -> None:
    frame = pd.DataFrame({"q": ["111", "112"] * 10, "s": ["High", "Low", "Medium", "Low"] * 5})
    config = {
        "quasi_identifiers": {"q": {"hierarchy": "mask"}},
        "sensitive": ["s"],
        "privacy": {"k": 2, "t_closeness": {"attribute": "s", "t": 0.3, "distance": "ordered"}},
    }
    with pytest.raises(AnonymizationError, match="needs the order of its values") as caught:
        Anonymizer(config).fit(frame)
    assert "High" not in str(caught.value)
    ordered = {**config, "sensitive": {"s": {"order": ["Low", "Medium", "High"]}}}
    [outcome] = [m for m in Anonymizer(ordered).fit(frame).models if m.name == "t-closeness"]
    assert "from the input table's distribution" in outcome.parameters
    short = {**config, "sensitive": {"s": {"order": ["Low", "High"]}}}
    with pytest.raises(
        AnonymizationError, match="1 distinct value\\(s\\) of the data are no"
    ) as caught:
        Anonymizer(short).fit(frame)
    assert "Medium" not in str(caught.value)  # (counted, never quoted: it is data)
