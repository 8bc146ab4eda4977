"""The lattice search returns exactly the optimum: against exhaustive enumeration, and on Adult."""

from unittest import mock

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from safeshare.anonymize.grouping import NonZero, group_sums
from safeshare.anonymize.guide import SuppressionGuide
from safeshare.anonymize.hierarchy import Hierarchy
from safeshare.anonymize.lattice import Lattice
from safeshare.anonymize.models import (
    AverageRisk,
    BetaLikeness,
    DeltaDisclosure,
    DeltaPresence,
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    NoSolutionError,
    PopulationUniqueness,
    RecursiveCLDiversity,
    SampleUniqueness,
    SensitiveInfo,
    TCloseness,
)
from safeshare.anonymize.quality import QUALITY_MODELS
from safeshare.anonymize.search import (
    Evaluator,
    Problem,
    _Search,
    exhaustive_search,
    group_rows,
    optimal_search,
)
from tests.conftest import SHARED, needs_shared


@st.composite
def hierarchies(draw, name):
    size = draw(st.integers(2, 6))
    height = draw(st.integers(1, 3))
    rows = [[f"v{i}"] for i in range(size)]
    current = list(range(size))  # each value's label id at the current level
    for level in range(1, height):
        labels = sorted(set(current))
        parent = {label: draw(st.integers(0, max(len(labels) - 2, 0))) for label in labels}
        current = [parent[c] for c in current]
        for row, c in zip(rows, current, strict=True):
            row.append(f"L{level}-{c}")
    for row in rows:
        row.append("*")
    return Hierarchy.from_rows(name, rows)


def _sensitive_info(totals: np.ndarray) -> SensitiveInfo:
    """Values a, b, c (ordered c < a < b; a and b share a parent, c its own, then the top)."""
    parents = (np.array([0, 0, 1]), np.array([0, 0]))
    return SensitiveInfo("s", ("a", "b", "c"), totals, np.array([2, 0, 1]), parents)


@st.composite
def problems(draw):
    d = draw(st.integers(1, 3))
    hs = [draw(hierarchies(f"q{c}")) for c in range(d)]
    n = draw(st.integers(3, 40))
    codes = [
        np.array(draw(st.lists(st.integers(0, len(h.values) - 1), min_size=n, max_size=n)))
        for h in hs
    ]
    sensitive = np.array(draw(st.lists(st.integers(0, 2), min_size=n, max_size=n)))
    totals = np.bincount(sensitive, minlength=3)
    info = _sensitive_info(totals)
    models = [KAnonymity(draw(st.integers(1, 6)))]
    extra = draw(
        st.sampled_from(
            [
                *("none", "distinct", "entropy", "recursive", "risk"),
                *("t-equal", "t-ordered", "t-hierarchical"),
                *("beta", "beta-enhanced", "delta", "sample-unique", "population-unique"),
                "presence",
            ]
        )
    )
    if extra == "distinct":
        models.append(DistinctLDiversity("s", draw(st.integers(1, 2))))
    elif extra == "entropy":
        models.append(EntropyLDiversity("s", draw(st.sampled_from([1.2, 1.5, 2.0]))))
    elif extra == "recursive":
        models.append(RecursiveCLDiversity("s", draw(st.sampled_from([1.5, 3.0])), 2))
    elif extra.startswith("t-"):
        models.append(TCloseness("s", draw(st.sampled_from([0.2, 0.4, 0.6])), extra[2:]))
    elif extra == "risk":
        models.append(AverageRisk(draw(st.sampled_from([0.2, 0.5]))))
    elif extra.startswith("beta"):
        beta = draw(st.sampled_from([0.5, 1.0, 2.0]))
        models.append(BetaLikeness("s", beta, enhanced=extra == "beta-enhanced"))
    elif extra == "delta":
        models.append(DeltaDisclosure("s", draw(st.sampled_from([0.8, 1.5]))))
    elif extra == "sample-unique":
        models.append(SampleUniqueness(draw(st.sampled_from([0.0, 0.1]))))
    elif extra == "population-unique":
        models.append(PopulationUniqueness(draw(st.sampled_from([0.01, 0.05])), 400))
    population = None
    if extra == "presence":  # the data are a sample of a population with more people
        more = draw(st.integers(0, 3 * n))
        population = [
            np.concatenate([c, draw(st.lists(st.integers(0, len(h.values) - 1), min_size=more,
                                             max_size=more))]).astype(np.int64)
            for c, h in zip(codes, hs, strict=True)
        ]  # fmt: skip
        low = draw(st.sampled_from([0.0, 0.0, 0.2]))
        models.append(DeltaPresence(low, draw(st.sampled_from([0.4, 0.7, 1.0]))))
    limit = draw(st.sampled_from([0.0, 0.0, 0.1, 0.3]))
    metric = draw(st.sampled_from(QUALITY_MODELS))
    importance = draw(
        st.none() | st.lists(st.sampled_from([0.5, 1.0, 4.0]), min_size=d, max_size=d)
    )
    problem = Problem.build(
        hs,
        codes,
        models=models,
        sensitive={"s": sensitive},
        infos={"s": info},
        suppression_limit=limit,
        importance=importance,
        population=population,
        target="s" if metric == "classification" else None,
    )
    return problem, metric


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(problems())
def test_search_matches_exhaustive_enumeration(case):
    problem, metric = case
    try:
        expected = exhaustive_search(problem, metric)
    except NoSolutionError:
        with pytest.raises(NoSolutionError):
            optimal_search(problem, metric)
        return
    found = optimal_search(problem, metric)
    assert found.score == pytest.approx(expected.score, abs=1e-9)
    assert found.node in {expected.node, *expected.ties}


@st.composite
def far_classes(draw):
    """t-closeness with suppression on sensitive values that cluster with the quasi-identifiers
    (classes far from the table's distribution): what the forced shares prune."""
    hs = [draw(hierarchies(f"q{c}")) for c in range(draw(st.integers(2, 3)))]
    n = draw(st.integers(30, 120))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    codes = [rng.integers(0, len(h.values), n) for h in hs]
    noise = draw(st.sampled_from([0.3, 0.6, 0.9]))
    sensitive = np.where(rng.random(n) < noise, rng.integers(0, 3, n), codes[0] % 3)
    totals = np.bincount(sensitive, minlength=3)
    info = _sensitive_info(totals)
    distance = draw(st.sampled_from(["equal", "ordered", "hierarchical"]))
    models = [
        KAnonymity(draw(st.integers(1, 4))),
        TCloseness("s", draw(st.sampled_from([0.1, 0.2, 0.3, 0.45])), distance),
    ]
    limit = draw(st.sampled_from([0.05, 0.1, 0.2, 0.4]))
    problem = Problem.build(
        hs, codes, models=models, sensitive={"s": sensitive}, infos={"s": info},
        suppression_limit=limit,
    )  # fmt: skip
    return problem, draw(st.sampled_from(["precision", "loss", "entropy"]))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(far_classes())
def test_what_a_node_suppresses_bounds_every_node_below(case):
    """The floor the search prunes with: every node at or below a checked one suppresses at
    least its ``suppressed_below`` (its monotone suppression and the forced shares)."""
    problem, _ = case
    evaluator = Evaluator(problem)
    lattice = problem.lattice
    suppressed = np.array(
        [evaluator.assess(lattice.node(i)).suppressed for i in range(lattice.size)]
    )
    grid = suppressed.reshape(lattice.shape)
    for index in range(lattice.size):
        node = lattice.node(index)
        floor = evaluator.assess(node, complete=False).suppressed_below
        assert grid[lattice.below(node)].min() >= floor


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(far_classes())
def test_forced_shares_judge_their_models_on_the_way(case):
    """Where the shares t-closeness forces out are computed (at a node satisfying the monotone
    models), they judge it too: the monotone-only assessment is then the complete one."""
    problem, _ = case
    quick, full = Evaluator(problem), Evaluator(problem)
    for index in range(problem.lattice.size):
        node = problem.lattice.node(index)
        partial, complete = quick.assess(node, complete=False), full.assess(node)
        assert partial.complete == partial.feasible_monotone
        if partial.complete:
            assert partial.feasible == complete.feasible
            assert partial.suppressed == complete.suppressed
            assert (partial.kept == complete.kept).all()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(far_classes())
def test_search_with_forced_shares_matches_exhaustive_enumeration(case):
    test_search_matches_exhaustive_enumeration.hypothesis.inner_test(case)


class _NoisyGuide(SuppressionGuide):
    """A guide whose guesses are noise: they may cost checks, never the optimum."""

    seed = 0

    @property
    def terms(self) -> list[float]:
        rng = np.random.default_rng(self.seed)
        type(self).seed += 1
        return rng.normal(0.0, 3.0, self.offsets[-1] + 1).tolist()  # (+ the intercept)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(), st.integers(0, 2**16))
def test_search_is_exact_whatever_the_guide_guesses(case, seed):
    problem, metric = case
    _NoisyGuide.seed = seed
    with mock.patch("safeshare.anonymize.search.SuppressionGuide", _NoisyGuide):
        try:
            expected = exhaustive_search(problem, metric)
        except NoSolutionError:
            with pytest.raises(NoSolutionError):
                optimal_search(problem, metric)
            return
        found = optimal_search(problem, metric)
    assert found.score == pytest.approx(expected.score, abs=1e-9)
    assert found.node in {expected.node, *expected.ties}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems(), st.integers(1, 4))
def test_search_is_exact_when_it_sorts_a_few_nodes_at_a_time(case, at_once):
    """The settling puts the open nodes in order a slice at a time (large lattices): with
    slices of a few nodes, the optimum is still the exhaustive one, and the nodes come in the
    order of one stable sort by bound."""
    with mock.patch("safeshare.anonymize.search._SORTED_AT_ONCE", at_once):
        test_search_matches_exhaustive_enumeration.hypothesis.inner_test(case)
        problem, metric = case
        search = _Search(problem, metric)  # (nothing checked: every node is open)
        sliced = np.concatenate(list(search._highest_first()))
    np.testing.assert_array_equal(sliced, np.argsort(-search.bounds, kind="stable"))


def test_group_rows_dense_and_sparse_agree():
    rng = np.random.default_rng(0)
    keys = rng.integers(0, 50, 200)
    weights = rng.integers(1, 5, 200)
    dense_first, dense = group_rows(keys, 50, [weights])
    sparse_first, sparse = group_rows(keys * 10**9, 50 * 10**9, [weights])
    assert dense[0].tolist() == sparse[0].tolist()
    assert (keys[dense_first] == keys[sparse_first]).all()


def test_group_sums_by_non_zero_cells_equal_the_dense_sums():
    rng = np.random.default_rng(1)
    keys = rng.integers(0, 40, 300)
    sizes = rng.integers(1, 4, 300)
    counts = np.zeros((300, 7), dtype=np.int64)
    np.add.at(counts, (np.arange(300), rng.integers(0, 7, 300)), sizes)  # one value per row
    assert NonZero.worth(counts) and not NonZero.worth(counts + 1)
    present, (totals, dense) = group_sums(keys, 40, [sizes, counts])
    again, (_, by_cells) = group_sums(keys, 40, [sizes, NonZero.of(counts)])
    assert (present == again).all() and (by_cells == dense).all()
    assert (dense.sum(axis=1) == totals).all()
    with pytest.raises(TypeError):
        group_sums(keys, 40, [NonZero.of(counts)])


def test_lattice_minimal_nodes():
    lattice = Lattice((2, 2))
    grid = np.zeros(lattice.shape, dtype=bool)
    grid[lattice.above((1, 0))] = True
    grid[lattice.above((0, 2))] = True
    minimal = {tuple(lattice.levels(i).tolist()) for i in lattice.minimal(grid)}
    assert minimal == {(1, 0), (0, 2)}


def test_lattice_minimal_among_a_few_nodes_agrees_with_the_whole_lattice():
    rng = np.random.default_rng(3)
    lattice = Lattice((3, 1, 4, 2))
    grid = np.zeros(lattice.shape, dtype=bool)
    for _ in range(4):  # an up-closed mask: the union of four cones
        grid[lattice.above(tuple(int(rng.integers(0, h + 1)) for h in lattice.hi))] = True
    flat = grid.ravel()
    everywhere = {  # (by brute force: the nodes of the mask with no direct predecessor in it)
        i
        for i in np.flatnonzero(flat).tolist()
        if not any(
            level > 0 and flat[i - stride]
            for level, stride in zip(lattice.levels(i).tolist(), lattice.strides, strict=True)
        )
    }
    assert set(lattice.minimal(grid).tolist()) == everywhere
    some = np.flatnonzero(flat)[::2]
    assert set(some[~lattice.has_lower_in(some, flat)].tolist()) == everywhere & set(some.tolist())


def _chain(name: str, height: int) -> Hierarchy:
    """Values 0 .. 2**height - 1, halved at each level."""
    rows = [
        [f"v{i}", *(f"L{lv}-{i >> lv}" for lv in range(1, height)), "*"] for i in range(2**height)
    ]
    return Hierarchy.from_rows(name, rows)


@pytest.mark.parametrize("at_once", [50, 200])
def test_large_lattices_are_sliced_from_a_sample_in_the_order_of_one_sort(at_once):
    """On a lattice much larger than a slice, each slice's lowest bound is estimated from a
    sample: the slices still come in the order of one stable sort (every node tied with a
    slice's last is in it), and they hold about as many nodes as asked."""
    heights = (2, 3, 4, 5, 6)  # 2,520 nodes, 247 distinct bounds
    hs = [_chain(f"c{h}", h) for h in heights]
    problem = Problem.build(hs, [np.arange(64) % 2**h for h in heights], models=[KAnonymity(2)])
    search = _Search(problem, "precision")  # (nothing checked: every node is open)
    with mock.patch("safeshare.anonymize.search._SORTED_AT_ONCE", at_once):
        slices = list(search._highest_first())
    np.testing.assert_array_equal(np.concatenate(slices), np.argsort(-search.bounds, kind="stable"))
    assert len(slices) > 1
    assert at_once / 2 <= np.median([len(s) for s in slices]) <= 2 * at_once


def _adult_problem(limit: float) -> Problem:
    assert SHARED is not None
    folder = SHARED / "adult-arx"
    frame = pd.read_csv(folder / "adult.csv", sep=";", dtype=str)
    qis = [c for c in frame.columns if c != "salary-class"]
    hs = [Hierarchy.from_csv(c, folder / f"adult_hierarchy_{c}.csv") for c in qis]
    codes = [h.encode(frame[c]) for h, c in zip(hs, qis, strict=True)]
    return Problem.build(hs, codes, models=[KAnonymity(5)], suppression_limit=limit)


@needs_shared
def test_adult_optimum_without_suppression():
    result = optimal_search(_adult_problem(0.0), "precision")
    # sex, age, race, marital-status, education, native-country, workclass, occupation
    both = {(0, 4, 0, 1, 3, 2, 2, 2), (0, 4, 0, 2, 3, 2, 2, 1)}
    assert result.score == pytest.approx(0.6875, abs=1e-12)
    assert result.suppressed == 0
    assert {result.node, *result.ties} == both
    assert result.checked < 400  # the lattice has 6,480 transformations


@needs_shared
def test_adult_optimum_with_one_percent_suppression():
    result = optimal_search(_adult_problem(0.01), "precision")
    assert result.node == (0, 4, 0, 1, 3, 2, 0, 1)
    assert result.score == pytest.approx(0.503431, abs=5e-7)
    assert result.suppressed == 207
    assert result.ties == ()
    assert result.checked < 1500


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(problems())
def test_local_recoding_satisfies_the_models(case):
    from safeshare.anonymize.mondrian import mondrian

    problem, _ = case
    if any(m.reads_population for m in problem.models):
        return
    try:
        recoding = mondrian(problem)
    except NoSolutionError:
        return
    classes = recoding.classes
    assert classes.sizes.sum() == problem.n
    for model in problem.models:
        info = problem.infos.get(getattr(model, "attribute", ""))
        if model.per_class:
            assert model.class_ok(classes, info).all()
        else:
            assert model.table_ok(classes, np.ones(len(classes), dtype=bool))
    # every class's levels generalize each of its rows consistently: one label per column
    for c in range(len(problem.hierarchies)):
        labels = np.array(
            [
                problem.maps[c][recoding.class_levels[g, c]][problem.codes[c][row]]
                for row, g in enumerate(recoding.row_class)
            ]
        )
        for g in range(len(classes)):
            assert len(set(labels[recoding.row_class == g].tolist())) == 1


def test_huge_lattice_is_refused_by_the_search_but_not_by_local_recoding():
    from safeshare.anonymize.hierarchy import masking
    from safeshare.anonymize.models import AnonymizationError
    from safeshare.anonymize.mondrian import mondrian

    rng = np.random.default_rng(0)
    values = [f"{v:05d}" for v in rng.integers(0, 99999, 40)]
    hs = [masking(f"zip{c}", values) for c in range(12)]  # 6 levels each: 6**12 nodes
    codes = [h.encode(values) for h in hs]
    problem = Problem.build(hs, codes, models=[KAnonymity(2)])
    with pytest.raises(AnonymizationError, match="lattice has"):
        optimal_search(problem)
    assert mondrian(problem).classes.sizes.min() >= 2
