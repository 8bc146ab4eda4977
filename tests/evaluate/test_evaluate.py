"""Planted cases with known answers."""

import numpy as np
import pytest

from safeshare.data import Column, Domain, Kind, Table
from safeshare.errors import InputError
from safeshare.evaluate import (
    Proportion,
    evaluate_release,
    marginal_tvd,
    memorization_risk,
    nearest_distances,
    train_holdout_split,
    tvd,
)


def population(rows: int, seed: int) -> Table:
    rng = np.random.default_rng(seed)
    domain = Domain(
        (
            Column("a", Kind.CATEGORICAL, categories=tuple("abcdefghij")),
            Column("b", Kind.NUMERIC, edges=tuple(range(0, 21)), integer=True),
            Column("c", Kind.ORDINAL, categories=tuple("123456")),
            Column("d", Kind.CATEGORICAL, categories=tuple("xyzw")),
        )
    )
    return Table(
        {
            "a": rng.integers(0, 10, rows),
            "b": rng.integers(0, 20, rows),
            "c": rng.integers(0, 6, rows),
            "d": rng.integers(0, 4, rows),
        },
        domain,
    )


def test_tvd_by_hand():
    assert tvd(np.array([2, 2]), np.array([1, 3])) == pytest.approx(0.25)
    assert tvd(np.array([1, 0]), np.array([0, 1])) == 1.0
    assert tvd(np.array([0, 0]), np.array([0, 0])) == 0.0


def test_wilson_interval_by_hand():
    p = Proportion.of(0, 20)
    assert p.value == 0 and p.interval[0] == 0 and p.interval[1] == pytest.approx(0.1611, abs=1e-4)
    assert Proportion.of(50, 100).contains(0.5)


def test_gower_distance_by_hand():
    table = population(2, 0)
    first = table.take(np.array([0]))
    assert nearest_distances(first, first)[0] == 0.0
    domain = table.domain
    left = Table({"a": [0], "b": [0], "c": [0], "d": [0]}, domain)
    right = Table({"a": [1], "b": [19], "c": [5], "d": [0]}, domain)
    # a differs (1), b is 19 bins of 19 away (1), c 5 ranks of 5 (1), d equal (0): mean 0.75
    assert nearest_distances(left, right)[0] == pytest.approx(0.75)


def test_a_release_that_copies_training_rows_is_flagged():
    train, holdout = population(3000, 1), population(1000, 2)
    copies = train.take(np.arange(1500))
    risk = memorization_risk(copies, train, holdout, np.random.default_rng(0))
    assert (
        risk.copies_of_train.value > 0.25
    )  # a train subsample of holdout size holds a third of them
    assert risk.closer_to_train.value > 0.6 and risk.closer_to_train.interval[0] > 0.5
    assert risk.verdict()[0] == "bad" and "no sign" not in risk.readings[0]


def test_an_independent_sample_is_not_flagged():
    train, holdout, fresh = population(3000, 1), population(1000, 2), population(1500, 3)
    risk = memorization_risk(fresh, train, holdout, np.random.default_rng(0))
    # 0.474 here (sd about 0.011 over seeds, mean 0.499): exact ties count half, so the 95%
    # interval can miss 0.5 on the low side by chance; only the high side is a flag
    assert abs(risk.closer_to_train.value - 0.5) < 0.05 and risk.verdict()[0] == "good"
    assert risk.copies_of_holdout is not None
    train_share, holdout_share = risk.copies_of_train.interval, risk.copies_of_holdout.interval
    assert (
        train_share[0] <= holdout_share[1] and holdout_share[0] <= train_share[1]
    )  # intervals overlap
    assert "no sign of memorization" in risk.readings[0]


def test_suite_reports_the_sampling_floor():
    train, holdout = population(4000, 1), population(1000, 2)
    utility, risk = evaluate_release(population(4000, 5), train, holdout, np.random.default_rng(0))
    assert [d.ways for d in utility.vs_holdout] == [1, 2, 3]
    card = utility.to_dict()
    assert set(card) == {"tvd_vs_train", "tvd_vs_holdout", "tvd_train_vs_holdout_baseline"}
    assert risk.to_dict()["dcr"]["ideal"] == 0.5


def test_many_marginals_are_sampled_not_skipped():
    table = population(200, 1)
    distances = marginal_tvd(table, table, ways=(2,), max_marginals=3, rng=np.random.default_rng(0))
    assert distances[0].marginals == 3 and distances[0].sampled and distances[0].mean == 0.0


def test_split_is_a_partition():
    train, holdout = train_holdout_split(101, 0.2, np.random.default_rng(0))
    assert len(holdout) == 20 and not set(train) & set(holdout)
    with pytest.raises(InputError, match="holdout fraction"):
        train_holdout_split(10, 1.0, np.random.default_rng(0))
    with pytest.raises(InputError, match="too small"):
        train_holdout_split(1, 0.6, np.random.default_rng(0))


def mixture(train: Table, share: float, seed: int, nudge: bool) -> Table:
    """A release of fresh records and ``share`` training records (nudged by one bin, or exact)."""
    rng = np.random.default_rng(seed)
    n, k = 2000, int(share * 2000)
    fresh = population(n - k, 10 + seed)
    picked = train.take(rng.choice(len(train), k, replace=False))
    columns = {c: np.concatenate([fresh.column(c), picked.column(c)]) for c in train.columns}
    if nudge:
        columns["b"][n - k :] = np.clip(columns["b"][n - k :] + rng.choice([-1, 1], k), 0, 19)
    return Table(columns, train.domain)


def test_near_copies_of_some_training_records_warn():
    train, holdout = population(3000, 1), population(1000, 2)
    release = mixture(train, 0.3, seed=3, nudge=True)
    risk = memorization_risk(release, train, holdout, np.random.default_rng(3))
    assert risk.closer_to_train.interval[0] > 0.5 and risk.closer_to_train.value < 0.6
    assert risk.verdict()[0] == "warn"
    assert "near-copies" in risk.readings[0]


def test_an_excess_of_exact_copies_is_flagged_even_when_distances_look_mild():
    train, holdout = population(3000, 1), population(1000, 2)
    release = mixture(train, 0.25, seed=1, nudge=False)
    risk = memorization_risk(release, train, holdout, np.random.default_rng(1))
    assert risk.closer_to_train.value < 0.6
    assert risk.verdict() == (
        "bad",
        "released records copy training records more often than chance",
    )
