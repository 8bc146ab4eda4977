"""Sampling records from a graphical model, and decoding folded values: close to the model in
every sample, and following it exactly on average (statistical tests)."""

import numpy as np
from scipy import stats

from safeshare.data.domain import Domain
from safeshare.synth.compress import Compression
from safeshare.synth.marginals import GraphicalModel, Measurement, estimate, sample_records
from tests.synth.test_estimation import marginal, random_joint

SIZES = {"a": 4, "b": 3, "c": 5}
CLIQUES = [("a", "b"), ("b", "c")]  # a and c independent given b


def chain_model(total: float) -> GraphicalModel:
    joint = random_joint(SIZES, CLIQUES, seed=4)
    measured = [Measurement(c, total * marginal(joint, list(SIZES), c), 1.0) for c in CLIQUES]
    return estimate(SIZES, measured, total=total, iterations=3000, tolerance=1e-13).model


def joint_counts(rows: dict[str, np.ndarray]) -> np.ndarray:
    counts = np.zeros(tuple(SIZES.values()))
    np.add.at(counts, (rows["a"], rows["b"], rows["c"]), 1)
    return counts


def test_attributes_independent_given_the_separator_stay_so_in_each_sample():
    model = chain_model(3000.0)
    expected = model.project(("a", "b", "c"))
    for seed in range(5):
        counts = joint_counts(sample_records(model, 3000, np.random.default_rng(seed)))
        # drawn in random order within each b group, the largest miss was 8-22 records
        assert np.abs(counts - expected).max() <= 3.0, seed


def test_sampled_records_follow_the_model_on_average():
    model = chain_model(1000.0)
    p = model.project(("a", "b", "c")).ravel() / model.total
    repeats, n = 400, 30  # small samples: whole groups are a record or two
    total = sum(
        joint_counts(sample_records(model, n, np.random.default_rng(seed))).ravel()
        for seed in range(repeats)
    )
    keep = p * repeats * n >= 5
    observed = np.append(total[keep], total[~keep].sum())
    expected = np.append(p[keep], p[~keep].sum()) * repeats * n
    # systematic sampling has at most multinomial variance, so the test is conservative
    assert stats.chisquare(observed, expected).pvalue > 1e-3


def test_folded_values_decode_in_proportion_to_their_weights():
    fold = Compression.from_noisy_counts({"a": np.array([500.0, 30.0, 10.0, 0.0, -4.0])}, 20.0)
    assert fold.sizes == {"a": 2}
    folded = np.ones(1000, dtype=np.int64)  # every record holds the folded code
    decoded = fold.invert("a", folded, np.random.default_rng(0))
    # weights 30 : 10 : 0 : 0 -> exactly 750 and 250 (systematic), never a zero-weight value
    assert np.bincount(decoded, minlength=5).tolist() == [0, 750, 250, 0, 0]


def test_folded_values_spread_over_records_alike():
    fold = Compression.from_noisy_counts(
        {"a": np.array([800.0, 50.0, 50.0]), "b": np.array([600.0, 600.0])}, 20.0
    )
    rng = np.random.default_rng(1)
    codes = {"a": np.ones(400, dtype=np.int64), "b": np.repeat([0, 1], [100, 300])}
    table = fold.invert_table(codes, Domain.from_sizes({"a": 3, "b": 2}), rng)
    a, b = table.column("a"), table.column("b")
    # half of each b group gets each folded value (to a record), not a chance split
    for group, size in [(0, 100), (1, 300)]:
        assert abs(int(np.sum((a == 1) & (b == group))) - size / 2) <= 1
