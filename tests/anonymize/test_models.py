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
    # entropy exactly log 3 (three values alike, whatever the class size) meets l = 3, where
    # rounding in the entropy's sum would put some of them a hair under it (ARX rejects these)
    even = np.array([[2, 2, 2], [7, 7, 7], [33, 33, 33]])
    assert EntropyLDiversity("s", 3).class_ok(Classes(even.sum(axis=1), {"s": even}), None).all()
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


def _transport_cost(p: np.ndarray, q: np.ndarray, ground: np.ndarray) -> float:
    """The earth mover's distance from p to q by linear programming (the reference)."""
    from scipy.optimize import linprog

    m = len(p)
    rows = np.zeros((2 * m, m * m))
    for i in range(m):
        rows[i, i * m : (i + 1) * m] = 1  # what leaves i
        rows[m + i, i::m] = 1  # what reaches i
    done = linprog(ground.ravel(), A_eq=rows, b_eq=np.concatenate([p, q]), bounds=(0, None))
    return float(done.fun)


def _random_parents(rng: np.random.Generator, m: int) -> list[np.ndarray]:
    """A random hierarchy over ``m`` values: each level merges the labels below into fewer
    parents, up to one top."""
    parents = []
    labels = m
    for _ in range(int(rng.integers(1, 4))):
        parent = rng.integers(0, max(labels // 2, 1), labels)
        parent = np.unique(parent, return_inverse=True)[1]
        parents.append(parent)
        labels = int(parent.max()) + 1
    parents.append(np.zeros(labels, dtype=np.int64))  # the top
    return parents


@pytest.mark.parametrize("seed", range(20))
def test_emd_equals_the_transport_problem_for_every_distance(seed):
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 9))
    parents = _random_parents(rng, m)
    ancestor = np.arange(m)
    height = len(parents)
    path = [np.arange(m)]
    for parent in parents:
        ancestor = parent[ancestor]
        path.append(ancestor)
    lca = np.array(
        [[next(level for level in range(height + 1) if path[level][i] == path[level][j])
          for j in range(m)] for i in range(m)]
    )  # fmt: skip
    totals = rng.integers(1, 20, m)
    counts = rng.integers(0, 6, (5, m))
    counts[counts.sum(axis=1) == 0, 0] = 1
    order = rng.permutation(m)
    info = SensitiveInfo("s", tuple(f"v{i}" for i in range(m)), totals, order, tuple(parents))
    q = totals / totals.sum()
    rank = np.empty(m)
    rank[order] = np.arange(m)
    grounds = {
        "equal": 1.0 - np.eye(m),
        "ordered": np.abs(rank[:, None] - rank[None, :]) / (m - 1),
        "hierarchical": lca / height,
    }
    for distance, ground in grounds.items():
        found = emd(counts, info, distance)
        assert (emd(counts, info, distance, counts.sum(axis=1)) == found).all()  # (sizes given)
        for g, row in enumerate(counts):
            expected = _transport_cost(row / row.sum(), q, ground)
            assert found[g] == pytest.approx(expected, abs=1e-9), distance


@pytest.mark.parametrize("seed", range(30))
def test_a_far_class_loses_its_forced_share_however_it_splits(seed):
    """t-closeness's forced share is a floor: however a class's records are split into finer
    classes, those the model drops hold at least that share of them."""
    rng = np.random.default_rng(seed)
    m = int(rng.integers(2, 8))
    totals = rng.integers(1, 30, m)
    info = SensitiveInfo(
        "s", tuple(f"v{i}" for i in range(m)), totals, rng.permutation(m),
        tuple(_random_parents(rng, m)),
    )  # fmt: skip
    values = rng.choice(m, size=int(rng.integers(2, 60)), p=rng.dirichlet(np.full(m, 0.4)))
    whole = np.bincount(values, minlength=m)[None, :]
    for distance in ("equal", "ordered", "hierarchical"):
        model = TCloseness("s", float(rng.uniform(0.05, 0.6)), distance)
        share = model.forced_share(Classes(whole.sum(axis=1), {"s": whole}), info)[0]
        assert (share == 0) == model.class_ok(Classes(whole.sum(axis=1), {"s": whole}), info)[0]
        splits = [values, np.arange(len(values))]  # (by value; one record each)
        for _ in range(60):  # (at random; the values of a random subset apart)
            splits.append(rng.integers(0, int(rng.integers(1, len(values) + 1)), len(values)))
            apart = rng.random(m) < 0.5
            splits.append(np.where(apart[values], np.arange(len(values)) + 1, 0))
        for part in splits:
            counts = np.zeros((int(part.max()) + 1, m), dtype=np.int64)
            np.add.at(counts, (part, values), 1)
            counts = counts[counts.sum(axis=1) > 0]
            parts = Classes(counts.sum(axis=1), {"s": counts})
            dropped = counts.sum(axis=1)[~model.class_ok(parts, info)].sum()
            assert dropped >= share * len(values) - 1e-9, distance


def test_the_farthest_class_holds_one_value():
    # overall (2/3, 2/9, 1/9): a class of "high" alone lies 8/9 away (equal distance)
    assert INFO.farthest("equal") == pytest.approx(8 / 9)
    assert INFO.farthest("ordered") == pytest.approx(emd(np.eye(3), INFO, "ordered").max())
