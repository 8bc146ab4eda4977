"""Privacy models on hand-made classes, and earth mover's distances against hand computation."""

import numpy as np
import pytest

from safeshare.anonymize.models import (
    AnonymizationError,
    AverageRisk,
    Classes,
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    KMap,
    MaxRisk,
    RecursiveCLDiversity,
    SensitiveInfo,
    TCloseness,
    emd,
)

COUNTS = np.array([[3, 0, 0], [1, 1, 1], [2, 1, 0]])
CLASSES = Classes(COUNTS.sum(axis=1), {"s": COUNTS}, population=np.array([10, 2, 5]))
INFO = SensitiveInfo("s", ("low", "mid", "high"), COUNTS.sum(axis=0), np.array([0, 1, 2]))


def test_k_anonymity_and_risk():
    assert KAnonymity(3).class_ok(CLASSES, None).tolist() == [True, True, True]
    assert MaxRisk(0.25).k == 4
    assert AverageRisk(0.4).table_ok(CLASSES, np.ones(3, bool))  # 3 classes / 9 records
    assert not AverageRisk(0.3).table_ok(CLASSES, np.ones(3, bool))
    assert KMap(5).class_ok(CLASSES, None).tolist() == [True, False, True]


def test_l_diversity_variants():
    assert DistinctLDiversity("s", 2).class_ok(CLASSES, None).tolist() == [False, True, True]
    assert EntropyLDiversity("s", 3).class_ok(CLASSES, None).tolist() == [False, True, False]
    # recursive (c=2, l=2): r1 < 2 * (r2 + r3): [3 < 0, 1 < 4, 2 < 2]
    assert RecursiveCLDiversity("s", 2, 2).class_ok(CLASSES, None).tolist() == [False, True, False]
    kept = np.array([False, True, True])
    assert DistinctLDiversity("s", 2).achieved(CLASSES, kept, None) == {"l": 2}


def test_emd_equal_and_ordered_by_hand():
    # overall: 6 low, 2 mid, 1 high = (2/3, 2/9, 1/9); class 0 = (1, 0, 0)
    equal = emd(COUNTS, INFO, "equal")
    assert equal[0] == pytest.approx(1 / 3)
    ordered = emd(COUNTS, INFO, "ordered")
    # cumulative differences (1/3, 1/3 - 2/9, 0) -> (1/3 + 1/9) / 2
    assert ordered[0] == pytest.approx((1 / 3 + 1 / 9) / 2)


def test_emd_hierarchical_by_hand():
    # values low, mid -> "small"; high -> "big"; both -> "*" (height 2)
    info = SensitiveInfo(
        "s",
        ("low", "mid", "high"),
        COUNTS.sum(axis=0),
        None,
        (np.array([0, 0, 1]), np.array([0, 0])),
    )
    distance = emd(COUNTS, info, "hierarchical")
    # class 0: extras (1/3, -2/9, -1/9): inside "small" 2/9 moves at cost 1/2; then 1/9 at cost 1
    assert distance[0] == pytest.approx(2 / 9 * 0.5 + 1 / 9 * 1.0)
    assert TCloseness("s", 0.3, "hierarchical").class_ok(CLASSES, info)[0]


def test_bad_parameters():
    with pytest.raises(AnonymizationError):
        KAnonymity(0)
    with pytest.raises(AnonymizationError):
        TCloseness("s", 0.2, "manhattan")
    with pytest.raises(AnonymizationError):
        MaxRisk(1.5)
