"""The DP nearest-neighbour histogram: sensitivity, noise, selection, neighbours."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from safeshare.dp.randomness import Randomness
from safeshare.errors import InputError
from safeshare.synth.pe.histogram import NearestNeighbourHistogram, select, systematic, vote_vector
from safeshare.synth.pe.neighbors import nearest
from safeshare.synth.pe.tabular import DomainAPI, TabularEmbedder


@pytest.mark.parametrize("k", [1, 3, 8])
def test_one_record_moves_the_votes_by_at_most_one(fair_table, k: int) -> None:
    domain = fair_table.domain
    embedder = TabularEmbedder(domain)
    private = embedder.embed(_frame(fair_table))
    synthetic = embedder.embed(DomainAPI(domain).random(300, np.random.default_rng(1)))
    full = vote_vector(nearest(private, synthetic, k), len(synthetic))
    for record in np.random.default_rng(2).choice(len(private), 25, replace=False):
        without = np.delete(private, record, axis=0)
        neighbour = vote_vector(nearest(without, synthetic, k), len(synthetic))
        assert np.linalg.norm(full - neighbour) == pytest.approx(1.0)


def test_noise_has_scale_sigma_and_no_bias() -> None:
    private = np.repeat(np.array([[0.0], [10.0]]), [40, 60], axis=0)
    synthetic = np.array([[0.0], [10.0], [20.0]])
    histogram = NearestNeighbourHistogram(sigma=3.0, k=1)
    rand = Randomness(5)
    draws = np.array([histogram.noisy(private, synthetic, rand) for _ in range(400)])
    assert draws.mean(axis=0) == pytest.approx([40, 60, 0], abs=0.6)  # 4.5 standard errors
    assert draws.std(axis=0) == pytest.approx([3.0] * 3, rel=0.12)
    assert stats.normaltest(draws[:, 0] - 40).pvalue > 1e-4
    clipped = NearestNeighbourHistogram(sigma=3.0).release(private, synthetic, Randomness(6))
    assert clipped.min() >= 0  # the default threshold 0 zeroes negative votes


def test_k_neighbours_share_a_unit_vote_and_threshold_zeroes() -> None:
    private = np.array([[0.0]])
    synthetic = np.array([[0.0], [1.0], [2.0], [3.0]])
    votes = NearestNeighbourHistogram(sigma=1e-6, k=4).release(private, synthetic, Randomness(0))
    assert votes == pytest.approx([0.5] * 4)
    assert np.linalg.norm(votes) == pytest.approx(1.0)
    high = NearestNeighbourHistogram(sigma=1e-6, k=4, threshold=0.6)
    assert high.release(private, synthetic, Randomness(0)).tolist() == [0.0] * 4
    # PE's threshold subtracts H: max(h - H, 0), so a vote just above H keeps only its excess
    low = NearestNeighbourHistogram(sigma=1e-6, k=4, threshold=0.2)
    assert low.release(private, synthetic, Randomness(0)) == pytest.approx([0.3] * 4)
    assert high.event.rho == pytest.approx(1 / (2 * 1e-12))


def test_nearest_agrees_across_methods() -> None:
    rng = np.random.default_rng(3)
    points, queries = rng.random((200, 5)), rng.random((300, 5))
    brute = np.argsort(((queries[:, None, :] - points[None]) ** 2).sum(-1), axis=1)[:, :3]
    assert (nearest(queries, points, 3, "kdtree") == brute).all()
    assert (nearest(queries, points, 3, "blas") == brute).mean() > 0.99  # float32 ties aside
    with pytest.raises(InputError, match="dimensions"):
        nearest(queries, points[:, :4])
    with pytest.raises(InputError, match="k=201"):
        nearest(queries, points, 201)


def test_selection_by_sampling_follows_the_votes() -> None:
    votes = np.array([10.0, 30.0, 60.0, -5.0])
    rows = select(votes, 20_000, "sample", np.random.default_rng(4)).rows
    observed = np.bincount(rows, minlength=4)
    assert observed[3] == 0
    assert stats.chisquare(observed[:3], 20_000 * np.array([0.1, 0.3, 0.6])).pvalue > 1e-4


def test_selection_by_rank_keeps_the_most_voted_and_varies_them() -> None:
    votes = np.array([1.0, 5.0, 3.0, 0.0, 4.0, 2.0])
    rng = np.random.default_rng(0)
    chosen = select(votes, 6, "rank", rng, offspring=3)
    assert chosen.rows.tolist() == [1, 1, 1, 4, 4, 4]  # the top 6/3 = 2, three samples each
    assert chosen.kept.tolist() == [True, False, False, True, False, False]
    assert chosen.varied.tolist() == [1, 1, 4, 4]
    every = select(votes, 6, "rank", rng, offspring=2, keep=False)
    assert every.rows.tolist() == [1, 1, 4, 4, 2, 2] and not every.kept.any()
    assert select(votes, 5, "rank", rng, offspring=2).rows.tolist() == [1, 1, 4, 4, 2]
    # a constant population selects: n of n samples would be every sample, so L >= 2
    with pytest.raises(InputError, match="at least 2 for rank selection"):
        select(votes, 6, "rank", rng, offspring=1)
    # ties in random order: no sample wins by its position
    zeros = np.zeros(10)
    tied = [
        select(zeros, 2, "rank", np.random.default_rng(s), offspring=2).rows[0] for s in range(200)
    ]
    assert stats.chisquare(np.bincount(tied, minlength=10)).pvalue > 1e-4


def test_selection_by_sampling_varies_every_draw_and_systematic_draws() -> None:
    votes = np.array([1.0, 5.0, 3.0])
    assert not select(votes, 5, "sample", np.random.default_rng(0)).kept.any()
    rows = systematic(np.array([1.0, 0.0, 3.0]), 1000, np.random.default_rng(0))
    assert np.bincount(rows, minlength=3).tolist() == [250, 0, 750]
    with pytest.raises(InputError, match="selection"):
        select(votes, 2, "best", np.random.default_rng(0))  # type: ignore[arg-type]


def _frame(table):
    import pandas as pd

    return pd.DataFrame({c: table.column(c) for c in table.columns})


def test_the_noise_event_matches_the_scale() -> None:
    histogram = NearestNeighbourHistogram(sigma=4.0, k=9)
    assert histogram.event.rho == pytest.approx(1 / 32)
    assert math.isclose(histogram.event.l2_sensitivity, 1.0)
