"""The group-by under the search: keys at a node, dense relabelling, distinct rows."""

import numpy as np
import pytest

from safeshare.anonymize.grouping import dense_limit, marking_limit, relabel
from safeshare.anonymize.hierarchy import Hierarchy
from safeshare.anonymize.models import KAnonymity
from safeshare.anonymize.problem import Problem


def _hierarchy(name: str, size: int, rng: np.random.Generator) -> Hierarchy:
    """``size`` values in three levels: themselves, one of four groups, ``*``."""
    groups = rng.integers(0, 4, size)
    return Hierarchy.from_rows(name, [[f"v{i}", f"g{groups[i]}", "*"] for i in range(size)])


def _partition(keys: np.ndarray) -> set[frozenset[int]]:
    classes: dict[int, set[int]] = {}
    for row, key in enumerate(keys.tolist()):
        classes.setdefault(key, set()).add(row)
    return {frozenset(rows) for rows in classes.values()}


@pytest.mark.parametrize(("seed", "columns"), [(0, 5), (1, 5), (2, 11)])
def test_keys_group_the_rows_that_share_their_labels(seed, columns):
    # 40**5 keys are too many to count in; 40**11 too many for float64 too
    rng = np.random.default_rng(seed)
    hs = [_hierarchy(f"q{c}", 40, rng) for c in range(columns)]
    codes = [rng.integers(0, 40, 3000) for _ in hs]
    problem = Problem.build(hs, codes, models=[KAnonymity(2)])
    nodes = [(0, 0, 0, 0, 0), (0, 1, 0, 2, 0), (1, 1, 2, 1, 0), (2, 2, 2, 2, 2)]
    tails = [rng.integers(0, 3, columns - 5).tolist() for _ in nodes]
    for node in [(0,) * columns] + [(*a, *b) for a, b in zip(nodes, tails, strict=True)]:
        keys, space = problem.keys(node, problem.chunks)
        assert keys.min() >= 0 and keys.max() < space
        labels = np.stack(
            [problem.maps[c][level][problem.codes[c]] for c, level in enumerate(node)], axis=1
        )
        _, expected = np.unique(labels, axis=0, return_inverse=True)
        assert _partition(keys) == _partition(expected.ravel())


def test_relabel_by_counting_and_by_sorting_agree():
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 500, 2000)
    counted, groups = relabel(keys, 500)
    spread = keys * 10**9 + 7  # the same groups in a space far too large to count in
    sorted_, sorted_groups = relabel(spread, 500 * 10**9)
    assert 500 <= dense_limit(2000) < 500 * 10**9
    assert groups == sorted_groups == len(np.unique(keys))
    assert (counted == sorted_).all()
    assert (np.diff(counted[np.argsort(keys, kind="stable")]) >= 0).all()  # in key order


def test_build_keeps_each_record_on_its_distinct_row():
    rng = np.random.default_rng(3)
    hs = [_hierarchy(f"q{c}", 30, rng) for c in range(4)]
    codes = [rng.integers(0, 30, 5000).astype(np.int32) for _ in hs]
    problem = Problem.build(hs, codes, models=[KAnonymity(2)])
    assert problem.record_rows is not None
    for c, column in enumerate(codes):
        assert (problem.codes[c][problem.record_rows] == column).all()
    assert problem.weights.sum() == 5000
    assert len(problem.weights) == len({tuple(row) for row in np.stack(codes, axis=1).tolist()})
    # 30**4 keys are too many to mark at once: the first three columns are relabelled first,
    # and the distinct rows still come in the order of their codes
    rows = np.stack(problem.codes, axis=1).tolist()
    assert marking_limit(5000) < 30**4 and rows == sorted(rows)
