"""The marginal engine: junction trees, exact recovery from noise-free measurements, sampling."""

import itertools

import numpy as np
import pytest

from safeshare.synth.marginals import (
    JunctionTree,
    Measurement,
    estimate,
    noise_loss,
    sample_records,
)
from safeshare.synth.marginals.factor import sum_to


def random_joint(sizes: dict[str, int], cliques: list[tuple[str, ...]], seed: int) -> np.ndarray:
    """A joint distribution that factorizes over ``cliques`` (so a model on them is exact)."""
    rng = np.random.default_rng(seed)
    names = list(sizes)
    log = np.zeros([sizes[a] for a in names])
    for clique in cliques:
        factor = rng.normal(0, 1.0, [sizes[a] for a in clique])
        shape = [sizes[a] if a in clique else 1 for a in names]
        order = [clique.index(a) for a in names if a in clique]
        log = log + np.transpose(factor, order).reshape(shape)
    joint = np.exp(log)
    return joint / joint.sum()


def marginal(joint: np.ndarray, names: list[str], attrs: tuple[str, ...]) -> np.ndarray:
    return sum_to(joint, tuple(names), attrs)


def test_junction_tree_has_running_intersection():
    sizes = {a: 3 for a in "abcdef"}
    cliques = [("a", "b"), ("b", "c"), ("c", "d"), ("a", "d"), ("d", "e"), ("f",)]
    tree = JunctionTree.build(list(sizes), sizes, cliques)
    for clique in cliques:
        assert tree.clique_containing(clique) is not None
    # every attribute's cliques form a connected subtree
    for attr in sizes:
        holding = {i for i, c in enumerate(tree.cliques) if attr in c}
        reached, frontier = set(), [next(iter(holding))]
        while frontier:
            node = frontier.pop()
            reached.add(node)
            frontier += [n for n in tree.neighbors(node) if n in holding and n not in reached]
        assert reached == holding, attr


@pytest.mark.parametrize(
    "cliques",
    [
        [("a", "b"), ("b", "c"), ("b", "d")],  # a tree, as MST builds
        [("a", "b", "c"), ("c", "d")],  # a 3-way clique
        [("a", "b"), ("b", "c"), ("a", "c"), ("c", "d")],  # a cycle: triangulated
    ],
)
def test_noise_free_measurements_are_recovered_exactly(cliques):
    sizes = {"a": 3, "b": 4, "c": 2, "d": 5}
    names = list(sizes)
    total = 10_000.0
    joint = random_joint(sizes, cliques, seed=len(cliques))
    measured = [Measurement(c, total * marginal(joint, names, c), 1.0) for c in cliques]
    fit = estimate(sizes, measured, total=total, iterations=3000, tolerance=1e-12)
    for clique in cliques:
        assert np.allclose(
            fit.model.project(clique), total * marginal(joint, names, clique), atol=0.5
        )
    for a, b in itertools.combinations(names, 2):
        index = fit.model.tree.clique_containing((a, b))
        if index is not None:
            assert np.allclose(
                fit.model.project((a, b)), total * marginal(joint, names, (a, b)), atol=0.5
            )


def test_noisy_inconsistent_measurements_give_consistent_non_negative_marginals():
    rng = np.random.default_rng(0)
    sizes = {"a": 4, "b": 3, "c": 5}
    measured = [
        Measurement(("a", "b"), rng.normal(20, 15, (4, 3)), 5.0),
        Measurement(("b", "c"), rng.normal(20, 15, (3, 5)), 5.0),
        Measurement(("b",), rng.normal(80, 15, 3), 5.0),
    ]
    model = estimate(sizes, measured, iterations=500).model
    ab, bc = model.project(("a", "b")), model.project(("b", "c"))
    assert (ab >= 0).all() and (bc >= 0).all()
    assert np.allclose(ab.sum(axis=0), bc.sum(axis=1))
    assert ab.sum() == pytest.approx(model.total)


def test_fit_stops_at_the_noise_level_after_the_minimum_iterations():
    sizes = {"a": 6, "b": 5, "c": 4}
    joint = random_joint(sizes, [("a", "b"), ("b", "c")], seed=3) * 10_000
    names = list(sizes)
    rng = np.random.default_rng(1)
    measured = [
        Measurement(r, marginal(joint, names, r) + rng.normal(0, 2.0, [sizes[a] for a in r]), 2.0)
        for r in [("a", "b"), ("b", "c"), ("a",), ("c",)]
    ]
    target = noise_loss(measured)
    assert target == pytest.approx(0.5 * (30 + 20 + 6 + 4))
    full = estimate(sizes, measured, iterations=2000)
    assert full.loss < target  # to convergence, the fit goes below the noise: it fits the noise
    early = estimate(sizes, measured, iterations=2000, target_loss=target, min_iterations=5)
    assert 5 <= early.iterations < full.iterations
    assert full.loss < early.loss <= target
    floor = estimate(sizes, measured, iterations=2000, target_loss=1e12, min_iterations=40)
    assert floor.iterations == 40


def test_systematic_sampling_matches_counts_to_one_record():
    sizes = {"a": 3, "b": 4, "c": 2}
    cliques = [("a", "b"), ("b", "c")]
    joint = random_joint(sizes, cliques, seed=9)
    measured = [Measurement(c, 5000 * marginal(joint, list(sizes), c), 1.0) for c in cliques]
    model = estimate(sizes, measured, total=5000, iterations=2000, tolerance=1e-12).model
    rows = sample_records(model, 5000, np.random.default_rng(1))
    counts = np.zeros((3, 4))
    np.add.at(counts, (rows["a"], rows["b"]), 1)
    assert np.abs(counts - model.project(("a", "b"))).max() <= 1.5
    assert np.abs(np.bincount(rows["b"], minlength=4) - model.project(("b",))).max() <= 1.0


def test_sampling_is_random_across_generators():
    sizes = {"a": 2, "b": 2}
    measured = [Measurement(("a", "b"), np.array([[10.0, 20.0], [30.0, 40.0]]), 1.0)]
    model = estimate(sizes, measured, total=100, iterations=500).model
    first = sample_records(model, 100, np.random.default_rng(1))["a"]
    second = sample_records(model, 100, np.random.default_rng(2))["a"]
    assert first.tolist() != second.tolist() and first.sum() == second.sum()


def test_marginals_across_cliques_by_variable_elimination():
    sizes = {"a": 3, "b": 4, "c": 2, "d": 5, "e": 3, "f": 2}
    cliques = [("a", "b"), ("b", "c"), ("c", "d"), ("b", "e"), ("f",)]  # f: its own component
    names = list(sizes)
    joint = random_joint(sizes, cliques, seed=3)
    measured = [Measurement(c, 1000 * marginal(joint, names, c), 1.0) for c in cliques]
    model = estimate(sizes, measured, total=1000, iterations=3000, tolerance=1e-13).model
    for query in [("a", "d"), ("d", "a", "e"), ("a", "c", "e"), ("e", "d", "f"), ("f", "a")]:
        assert np.allclose(model.project(query), 1000 * marginal(joint, names, query), atol=1e-3), (
            query
        )
    with pytest.raises(ValueError, match="unknown or repeated"):
        model.project(("a", "a"))
