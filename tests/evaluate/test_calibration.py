"""Calibration under the null: harmless releases are rarely flagged, by any one attack or all.

A release made of other records of the population tells nothing about which records are the
training ones, so train and control are exchangeable: every attack's 95% interval must miss 0
in about 2.5% of re-splits, and the family of them (intervals widened together, Bonferroni)
in at most 2.5% of re-splits together.
"""

import numpy as np
import pytest

from safeshare.data import Column, Domain, Kind, Table
from safeshare.data.examples import load_example
from safeshare.evaluate.assessment import EvaluationOptions, run_attacks
from safeshare.evaluate.attack_risk import attack_risk, confidence_in_family, family_wise
from safeshare.evaluate.membership import auc_score, delong_standard_error
from safeshare.evaluate.neighbors import GowerIndex
from safeshare.evaluate.singling_out import (
    EQ,
    GE,
    LE,
    Bitsets,
    Predicates,
    _univariate_predicates,
    singling_out,
)


@pytest.fixture(scope="module")
def survey() -> Table:
    """The RAND health survey that ships with statsmodels: few distinct values, many ties."""
    frame, schema = load_example("randhie")
    table, _ = Table.from_frame(frame, schema.domain())
    return table.take(np.random.default_rng(0).permutation(len(table)))


def test_independent_releases_are_flagged_at_most_at_the_nominal_rate(survey):
    rows, resplits = 1200, 40
    release, pool = survey.take(np.arange(rows)), survey.take(np.arange(rows, 3 * rows))
    options = EvaluationOptions(attacks=200)
    flagged, alone = 0, 0
    for seed in range(resplits):
        rng = np.random.default_rng(seed)
        order = rng.permutation(2 * rows)
        train, control = pool.take(np.sort(order[:rows])), pool.take(np.sort(order[rows:]))
        family = run_attacks(release, train, control, rng, options)
        flagged += bool(family.flagged)
        alone += sum(a.at_family(1).significant for a in family.attacks)
    # the family: 2.5% expected, so 3 of 40 would be a 1-in-70 chance; each test alone: 2.5%
    # of 7 x 40 = 7 expected
    assert flagged <= 2
    assert alone <= 14
    copied = run_attacks(train, train, control, rng, options).flagged
    # the power stays: a copy is flagged (linkage and linkability find little on a survey
    # where many people share every value)
    expected = {"singling out (3 columns)", "inference of mdvis"}
    assert expected | {"membership: distance to closest record"} <= set(copied)


def test_family_wise_intervals_hold_together_under_the_null():
    rng = np.random.default_rng(1)
    draws, family = 4000, 8
    main, control = rng.binomial(500, 0.3, draws), rng.binomial(500, 0.3, draws)
    alone = [
        attack_risk("a", "t", main=m, control=c, baseline=0, attacks=500)
        for m, c in zip(main, control, strict=True)
    ]
    together = family_wise(alone, family)
    share_alone = np.mean([r.significant for r in alone])
    share_family = np.mean([r.significant for r in together])
    assert 0.015 < share_alone < 0.035  # one-sided 2.5%
    assert share_family < 0.025 / family * 2.5
    assert together[0].confidence == confidence_in_family(family) == 1 - 0.05 / family
    assert "family-wise" in together[0].reading and "95% interval" in alone[0].reading


def test_a_single_test_is_left_alone_and_no_attack_counts_for_nothing():
    ran = attack_risk("a", "t", main=30, control=10, baseline=5, attacks=100)
    empty = attack_risk("b", "t", main=0, control=0, baseline=0, attacks=0)
    widened = family_wise([ran, empty])
    assert [r.family for r in widened] == [1, 1]  # only one of the two could run
    assert widened[0].interval == ran.interval


def test_over_dispersed_predicates_widen_the_singling_out_interval():
    """Columns with few values: predicates crowd into the same cells and succeed together."""
    domain = Domain(tuple(Column(c, Kind.CATEGORICAL, categories=tuple("abc")) for c in "uvwxy"))
    rng = np.random.default_rng(0)

    def draw(rows: int) -> Table:
        skew = [0.9, 0.08, 0.02]
        return Table({c: rng.choice(3, rows, p=skew) for c in domain.names}, domain)

    result = singling_out(draw(800), draw(800), draw(800), np.random.default_rng(1), attacks=200)
    assert result.overdispersion > 1.5
    assert result.details["overdispersion"] == result.overdispersion
    binomial = attack_risk(
        "same counts", "t",
        main=round(result.main.value * result.main.trials),
        control=round(result.control.value * result.control.trials),
        baseline=0, attacks=result.main.trials,
    )  # fmt: skip
    excess = result.details["excess"]["interval"]
    assert (
        excess[1] - excess[0]
        > binomial.details["excess"]["interval"][1] - binomial.details["excess"]["interval"][0]
    )


def test_univariate_singling_out_writes_every_predicate_that_singles_out_a_record():
    domain = Domain(
        (
            Column("code", Kind.CATEGORICAL, categories=tuple("abcd")),
            Column("age", Kind.NUMERIC, edges=tuple(range(0, 101, 10)), integer=True),
        )
    )
    # code: 'c' and 'd' held by one record each; age: bins 0 (lowest, once), 3 (once), 9 (twice)
    release = Table(
        {"code": np.array([0, 0, 1, 1, 2, 3]), "age": np.array([0, 3, 5, 5, 9, 9])}, domain
    )
    codes = release.matrix()
    found = _univariate_predicates(domain, codes, {}, 100, np.random.default_rng(0))
    written = sorted(
        zip(found.columns[:, 0], found.operators[:, 0], found.values[:, 0], strict=True)
    )
    assert written == sorted([(0, EQ, 2), (0, EQ, 3), (1, EQ, 0), (1, EQ, 3), (1, LE, 0)])
    assert len(_univariate_predicates(domain, codes, {}, 2, np.random.default_rng(0))) == 2


def test_identical_queries_break_their_ties_on_their_own():
    domain = Domain((Column("x", Kind.CATEGORICAL, categories=tuple("ab")),))
    reference = Table({"x": np.zeros(50, dtype=np.int64)}, domain)
    queries = Table({"x": np.zeros(200, dtype=np.int64)}, domain)
    nearest, _ = GowerIndex(reference).kneighbors(queries, 1, np.random.default_rng(0))
    assert len(np.unique(nearest[:, 0])) > 40  # one shared draw would give one neighbour


def test_delong_error_matches_the_bootstrap():
    rng = np.random.default_rng(2)
    labels = np.r_[np.ones(400, dtype=bool), np.zeros(400, dtype=bool)]
    scores = np.r_[rng.normal(0.4, 1, 400), rng.normal(0, 1, 400)].round(1)  # with ties
    boot = []
    for _ in range(400):
        rows = np.r_[rng.choice(400, 400), 400 + rng.choice(400, 400)]
        boot.append(auc_score(scores[rows], labels[rows]))
    assert delong_standard_error(scores, labels) == pytest.approx(np.std(boot), rel=0.15)


def test_the_default_linkability_split_gives_each_source_people_apart():
    """Alternating columns put both identifying ones on one side: the other side is shared by
    hundreds of records and a copy links poorly.  The balanced split links it."""
    from safeshare.evaluate.linkability import balanced_split, linkability

    sizes = {"id1": 800, "c1": 2, "id2": 800, "c2": 2, "c3": 3}
    domain = Domain.from_sizes(sizes)
    rng = np.random.default_rng(0)
    copy = Table({c: rng.integers(0, n, 1200) for c, n in sizes.items()}, domain)
    control = Table({c: rng.integers(0, n, 1200) for c, n in sizes.items()}, domain)
    first, second = balanced_split(copy)
    assert {"id1", "id2"} & set(first) and {"id1", "id2"} & set(second)
    names = list(sizes)
    halves = {"columns_a": names[0::2], "columns_b": names[1::2]}
    alternating = linkability(copy, copy, control, rng, attacks=300, **halves)
    balanced = linkability(copy, copy, control, rng, attacks=300)
    assert balanced.details["split"] == "balanced by the release's entropy"
    assert balanced.interval[0] > alternating.interval[1]
    assert balanced.risk > 0.5 > alternating.risk


def test_predicates_over_generalized_cells_match_the_records_inside_them():
    """Every (column, operator, code) condition, a wide cell's among them, counted by the
    bitsets as a direct scan of the records counts it: records by containment, the
    release's own cells by identity."""
    domain = Domain(
        (
            Column("age", Kind.NUMERIC, edges=tuple(range(0, 101, 10)), integer=True),
            Column("status", Kind.CATEGORICAL, categories=tuple("abcde")),
        )
    )
    rng = np.random.default_rng(4)
    sizes = [c.size for c in domain]
    sets = {
        "age": np.arange(sizes[0])[None, :] // 3 == np.arange(4)[:, None],  # [0, 30), ...
        "status": rng.random((3, sizes[1])) < 0.5,
    }
    records = np.stack([rng.integers(0, s, 70) for s in sizes], axis=1)
    cells = np.stack(
        [rng.integers(0, s + len(m), 70) for s, m in zip(sizes, sets.values(), strict=True)], axis=1
    )

    def holds(code: int, op: int, value: int, j: int, as_cells: bool) -> bool:
        if value >= sizes[j]:  # a wide cell
            wide = value - sizes[j]
            return code == value if as_cells else bool(list(sets.values())[j][wide, code])
        if code >= sizes[j]:
            return False
        return {EQ: code == value, LE: code <= value, GE: code >= value}[op]

    conditions = [(j, op, v) for j, s in enumerate(sizes)
                  for v in range(s + len(list(sets.values())[j])) for op in (EQ, LE, GE)]  # fmt: skip
    pairs = [(a, b) for a in conditions for b in conditions if a[0] < b[0]]
    predicates = Predicates(*(np.array([[a[f], b[f]] for a, b in pairs]) for f in range(3)))
    for table, as_cells in ((records, False), (cells, True)):
        counted = Bitsets(domain, table, sets, cells=as_cells).count(predicates)
        scanned = [
            sum(all(holds(row[j], op, v, j, as_cells) for j, op, v in pair) for row in table)
            for pair in pairs
        ]
        assert counted.tolist() == scanned
