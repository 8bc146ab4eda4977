"""Quality models by hand: precision, loss, NCP, non-uniform entropy, discernibility, AECS."""

import math

import numpy as np
import pytest

from safeshare.anonymize.hierarchy import Hierarchy, intervals
from safeshare.anonymize.quality import QualityContext

# values a, b, c: a and b share "ab" at level 1; counts 2, 1, 1 (n = 4)
H = Hierarchy.from_rows("x", [["a", "ab", "*"], ["b", "ab", "*"], ["c", "c", "*"]])
CTX = QualityContext([H], [np.array([2, 1, 1])])


def scores(level: int, suppressed: int = 0, sizes=None, labels=None):
    labels = labels if labels is not None else H.maps[level][[0, 1, 2]]
    sizes = sizes if sizes is not None else np.array([2, 1, 1])
    levels = np.full(len(sizes), level)
    return CTX.scores([levels], [np.asarray(labels)], np.asarray(sizes), suppressed)


def test_precision_and_loss_at_level_one():
    # classes at level 1: "ab" (3 records), "c" (1 record)
    result = scores(1, sizes=np.array([3, 1]), labels=np.array([0, 1]))
    assert result.overall["precision"] == pytest.approx(0.5)
    # loss: "ab" covers 2 of 3 leaves -> (2-1)/(3-1) = 0.5 for 3 records; "c" 0
    assert result.overall["loss"] == pytest.approx(3 * 0.5 / 4)
    assert result.overall["aecs"] == pytest.approx(2.0)
    assert result.overall["discernibility"] == pytest.approx((9 + 1) / 16)


def test_suppressed_records_count_as_fully_generalized():
    # one class "ab" of 3 kept at level 1, the "c" record suppressed
    result = scores(1, suppressed=1, sizes=np.array([3]), labels=np.array([0]))
    assert result.overall["precision"] == pytest.approx((3 * 0.5 + 1) / 4)
    assert result.overall["loss"] == pytest.approx((3 * 0.5 + 1) / 4)
    assert result.overall["discernibility"] == pytest.approx((9 + 4) / 16)


def test_non_uniform_entropy_by_hand():
    # at level 1: records a, a, b share "ab" (3 of 4): -log2(2/3) * 2 - log2(1/3); c stays
    result = scores(1, sizes=np.array([3, 1]), labels=np.array([0, 1]))
    raw = -2 * math.log2(2 / 3) - math.log2(1 / 3)
    top = -2 * math.log2(2 / 4) - math.log2(1 / 4) - math.log2(1 / 4)
    assert result.overall["entropy"] == pytest.approx(raw / top)


def test_ncp_uses_interval_width_for_numbers():
    h = intervals("age", [20, 24, 30, 60], widths=[10])
    ctx = QualityContext([h], [np.array([1, 1, 1, 1])])
    # level 1: "20-29" spans 20..24 (width 4), "30-39" 30..30, "60-69" 60..60; range 40
    labels = h.maps[1]
    sizes = np.array([2, 1, 1])
    result = ctx.scores([np.full(3, 1)], [np.array([0, 1, 2])], sizes, 0)
    assert result.per_attribute["age"]["ncp"] == pytest.approx(2 * 4 / 40 / 4)
    assert result.per_attribute["age"]["loss"] == pytest.approx(2 * (1 / 3) / 4)
    assert labels.tolist() == [0, 0, 1, 2]


def test_bounds_are_the_unsuppressed_values():
    bounds = CTX.bounds("loss")
    assert bounds is not None and bounds[0][1] == pytest.approx(3 * 0.5 / 4)
    assert CTX.bounds("discernibility") is None


def test_attribute_weights_weigh_the_columns():
    # two copies of H: one at level 1 (precision 0.5, loss 3 * 0.5 / 4), one at level 0 (0)
    weighted = QualityContext([H, H], [np.array([2, 1, 1])] * 2, importance=[3.0, 1.0])
    levels = [np.array([1, 1, 1]), np.array([0, 0, 0])]
    labels = [H.maps[1][[0, 1, 2]], H.maps[0][[0, 1, 2]]]
    result = weighted.scores(levels, labels, np.array([2, 1, 1]), 0)
    assert result.overall["precision"] == pytest.approx(3 / 4 * 0.5)
    assert result.overall["loss"] == pytest.approx(3 / 4 * (3 * 0.5 / 4))
    assert result.per_attribute["x"]["precision"] in (0.5, 0.0)
    with pytest.raises(ValueError, match="positive number per quasi-identifier"):
        QualityContext([H], [np.array([2, 1, 1])], importance=[0.0])


def test_a_weight_moves_the_optimum_to_spare_the_heavier_column():
    import pandas as pd

    from safeshare.anonymize.anonymizer import Anonymizer

    # k = 2 is reached by generalizing either column one level: a heavy column is spared
    frame = pd.DataFrame({"a": ["11", "12", "11", "12"], "b": ["21", "21", "22", "22"]})
    rows = lambda c: {"rows": [[f"{c}1", f"{c}*", "*"], [f"{c}2", f"{c}*", "*"]]}  # noqa: E731
    config = {
        "quasi_identifiers": {"a": {"hierarchy": rows("1")}, "b": {"hierarchy": rows("2")}},
        "privacy": {"k": 2},
    }
    plain = Anonymizer(config).fit(frame)
    config["quasi_identifiers"]["a"]["weight"] = 5
    spared_a = Anonymizer(config).fit(frame)
    assert spared_a.transformation == {"a": 0, "b": 1}
    config["quasi_identifiers"]["a"]["weight"] = 1
    config["quasi_identifiers"]["b"]["weight"] = 5
    assert Anonymizer(config).fit(frame).transformation == {"a": 1, "b": 0}
    assert plain.search["ties"]  # unweighted, the two tie
