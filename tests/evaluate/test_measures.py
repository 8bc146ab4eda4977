"""Copula uniqueness, generalized values, fidelity and membership metrics by hand."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest

from safeshare.data import Column, Domain, Kind, Table
from safeshare.evaluate.copula import box_probability, copula_uniqueness
from safeshare.evaluate.fidelity import association_differences, cramers_v, kmarginal_score
from safeshare.evaluate.generalized import cell_sets
from safeshare.evaluate.linkage import linkage
from safeshare.evaluate.membership import auc_score, tpr_at_fpr
from safeshare.evaluate.neighbors import nearest_distances, nearest_neighbors


def test_ghk_matches_the_product_of_marginals_without_correlation():
    rng = np.random.default_rng(0)
    lower, upper = np.array([[-1.0, 0.0, 0.5]]), np.array([[0.0, 1.0, 2.0]])
    from scipy.stats import norm

    exact = np.prod(norm.cdf(upper) - norm.cdf(lower))
    assert box_probability(lower, upper, np.eye(3), rng, draws=64)[0] == pytest.approx(exact)


def test_copula_uniqueness_and_correctness_formulas():
    domain = Domain((Column("a", Kind.CATEGORICAL, categories=("x", "y")),))
    table = Table({"a": np.array([0] * 90 + [1] * 10)}, domain)
    result = copula_uniqueness(table, ["a"], np.random.default_rng(0), population_size=50)
    p = result.probability
    assert sorted(np.unique(np.round(p, 6))) == [0.1, 0.9]
    rare = p == p.min()
    assert result.uniqueness[rare][0] == pytest.approx(0.9**49)
    assert result.correctness[rare][0] == pytest.approx((1 - 0.9**50) / (50 * 0.1))


def test_copula_on_correlated_quasi_identifiers(train):
    result = copula_uniqueness(
        train, ["region", "age", "education", "sex"], np.random.default_rng(0), max_records=300
    )
    assert len(result.uniqueness) == 300
    assert np.all((result.correctness >= 0) & (result.correctness <= 1))
    # 3000 records over ~3000 combinations: a sizeable share is unique
    assert 0.05 < float(np.mean(result.uniqueness)) < 0.9


def test_generalized_values_by_containment():
    domain = Domain(
        (
            Column("age", Kind.NUMERIC, edges=tuple(range(0, 101)), integer=True),
            Column("zip", Kind.CATEGORICAL, categories=("13053", "13068", "14850")),
            Column(
                "marital", Kind.CATEGORICAL, categories=("Married", "Divorced", "Never-married")
            ),
        )
    )
    frame = pd.DataFrame(
        {
            "age": ["[30, 40)", "30-39", "*", "45", "spouse-node"],
            "zip": ["130**", "14850", "*", "13068", "13053"],
            "marital": ["Never-married|Divorced", "*", "Married", "Married", "Married"],
        }
    )
    cells = cell_sets(frame, domain)
    assert cells.mask("age", 0).nonzero()[0].tolist() == list(range(30, 40))
    assert cells.mask("age", 1).nonzero()[0].tolist() == list(range(30, 40))
    assert cells.mask("age", 2).all() and cells.mask("age", 3).nonzero()[0].tolist() == [45]
    assert cells.mask("zip", 0).nonzero()[0].tolist() == [0, 1]
    assert cells.mask("marital", 0).nonzero()[0].tolist() == [1, 2]
    assert cells.unexplained == {"age": 1, "zip": 0, "marital": 0}
    imputed = cells.impute(np.random.default_rng(0))
    assert 30 <= imputed.column("age")[0] < 40


def test_the_labels_the_cuts_builder_writes_are_read_as_their_ranges():
    from safeshare.anonymize.anonymizer import Anonymizer

    visits = [str(v) for v in [0, 0, 0, 2, 3, 3, 5, 9, 12, 16, 20, 30]]
    config = {
        "quasi_identifiers": {"visits": {"hierarchy": {"cuts": [[1, 4, 16], [16]]}}},
        "privacy": {"k": 3},
    }
    written = Anonymizer(config).fit(pd.DataFrame({"visits": visits})).frame
    assert {"<1", ">=16"} <= set(written["visits"].astype(str))
    domain = Domain((Column("visits", Kind.NUMERIC, edges=tuple(range(0, 42)), integer=True),))
    cells = cell_sets(written.astype(str), domain)
    assert cells.unexplained == {"visits": 0}
    for row, label in enumerate(written["visits"].astype(str)):
        covered = cells.mask("visits", row).nonzero()[0].tolist()
        expected = {"<1": [0], ">=16": list(range(16, 41)), "[1, 4)": [1, 2, 3],
                    "[4, 16)": list(range(4, 16))}[label]  # fmt: skip
        assert covered == expected, label


def test_linkage_through_a_generalized_release():
    domain = Domain(
        (
            Column("age", Kind.NUMERIC, edges=tuple(range(0, 101)), integer=True),
            Column("zip", Kind.CATEGORICAL, categories=tuple(f"1{i:04d}" for i in range(500))),
            Column("disease", Kind.CATEGORICAL, categories=tuple("abcdef")),
        )
    )
    rng = np.random.default_rng(0)

    def people(n: int) -> Table:
        return Table(
            {
                "age": rng.integers(20, 80, n),
                "zip": rng.integers(0, 500, n),
                "disease": rng.integers(0, 6, n),
            },
            domain,
        )

    train, holdout = people(600), people(600)
    raw = train.decode(rng)
    decade = (raw["age"].astype(int) // 10) * 10
    generalized = raw.assign(age=[f"[{d}, {d + 10})" for d in decade])
    cells = cell_sets(generalized.astype(str), domain)
    exact = linkage(cells, train, holdout, ["age", "zip"], np.random.default_rng(1), attacks=300)
    assert exact.significant and exact.risk > 0.3
    coarse = raw.assign(age="*", zip="*")
    hidden = linkage(
        cell_sets(coarse.astype(str), domain),
        train,
        holdout,
        ["age", "zip"],
        np.random.default_rng(1),
        attacks=300,
    )
    assert hidden.interval[0] <= 0 <= hidden.interval[1]


def test_cramers_v_by_hand():
    assert cramers_v(np.array([[10, 0], [0, 10]])) == pytest.approx(1.0)
    assert cramers_v(np.array([[5, 5], [5, 5]])) == pytest.approx(0.0)
    # chi2 of [[20, 10], [10, 20]] is 60 * (1/3)^2 = 6.667: V = sqrt(6.667 / 60)
    assert cramers_v(np.array([[20, 10], [10, 20]])) == pytest.approx(math.sqrt(6.6667 / 60), 1e-4)


def test_kmarginal_calibration_orders_subsamples(train):
    rng = np.random.default_rng(0)
    score = kmarginal_score(train.take(np.arange(300)), train, rng)
    tvds = [t for _, t in score.curve]
    assert all(a > b for a, b in itertools.pairwise(tvds))
    assert 0.05 < score.equivalent_fraction < 0.2  # 300 of 3000 records: about a 10% subsample
    assert "as faithful as" in score.reading
    assert association_differences(train, train).max_difference == 0.0


def test_auc_and_tpr_by_hand():
    scores = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4])
    labels = np.array([True, True, False, True, False, False])
    assert auc_score(scores, labels) == pytest.approx(8 / 9)
    assert tpr_at_fpr(scores, labels, 0.0) == pytest.approx(2 / 3)
    tied = np.array([1.0, 1.0, 0.0, 0.0])
    assert tpr_at_fpr(tied, np.array([True, False, True, False]), 0.25) == pytest.approx(0.25)


def test_neighbors_by_hand():
    domain = Domain(
        (
            Column("a", Kind.CATEGORICAL, categories=("x", "y")),
            Column("b", Kind.ORDINAL, categories=("1", "2", "3")),
            Column("c", Kind.NUMERIC, edges=(0, 1, 2, 3, 4), integer=True),
        )
    )
    ref = Table({"a": [0, 1, 1], "b": [0, 2, 1], "c": [0, 3, 4]}, domain)  # c=4: missing code
    query = Table({"a": [1], "b": [2], "c": [2]}, domain)
    # to row 1: (0 + 0 + 1/3) / 3; to row 2: (0 + 1/2 + 1) / 3; to row 0: (1 + 1 + 2/3) / 3
    assert nearest_distances(query, ref)[0] == pytest.approx(1 / 9)
    indices, distances = nearest_neighbors(query, ref, k=3)
    assert indices[0].tolist() == [1, 2, 0]
    assert distances[0] == pytest.approx([1 / 9, 1.5 / 3, (2 + 2 / 3) / 3])


def test_pruned_search_equals_brute_force(train, fresh):
    """The blocked search with lower bounds skips blocks, never the closest record."""
    from safeshare.evaluate.neighbors import GowerIndex

    reference = train.take(np.arange(2500))
    index = GowerIndex(reference)
    pruned = index.nearest(fresh)
    brute = GowerIndex(reference)
    codes = brute.encode(fresh.matrix(brute.columns))
    full = np.concatenate(
        [brute.distances(codes, r0, min(r0 + 500, brute.size)) for r0 in range(0, brute.size, 500)],
        axis=1,
    )
    assert np.array_equal(pruned, full.min(axis=1))
    indices, _ = index.kneighbors(fresh.take(np.arange(50)), 1)
    assert np.array_equal(full[np.arange(50), indices[:, 0]], pruned[:50])
