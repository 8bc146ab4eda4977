"""The faiss and numpy neighbour searches give the same neighbours, ties included."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from safeshare.synth.pe.histogram import vote_vector
from safeshare.synth.pe.neighbors import faiss_available, nearest

needs_faiss = pytest.mark.skipif(
    not faiss_available(), reason="faiss is not installed (pip install faiss-cpu)"
)


def _reference(q: np.ndarray, p: np.ndarray, k: int) -> np.ndarray:
    """Exact for small integers: squared distances in float64, then the lower index."""
    squared = ((q[:, None, :] - p[None, :, :]) ** 2).sum(axis=2)
    rows = np.arange(len(p))
    return np.array([np.lexsort((rows, row))[:k] for row in squared], dtype=np.int64)


@st.composite
def _searches(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, int]:
    seed = draw(st.integers(0, 2**32 - 1))
    n_points = draw(st.integers(1, 60))
    n_queries = draw(st.integers(1, 80))
    dims = draw(st.integers(1, 24))
    spread = draw(st.sampled_from([1, 2, 3, 50]))  # small spreads: many exact ties
    k = draw(st.integers(1, min(4, n_points)))
    rng = np.random.default_rng(seed)
    points = rng.integers(-spread, spread + 1, size=(n_points, dims)).astype(float)
    queries = rng.integers(-spread, spread + 1, size=(n_queries, dims)).astype(float)
    return queries, points, k


@given(_searches())
@settings(max_examples=150, deadline=None)
def test_numpy_search_is_exact_and_breaks_ties_by_the_lower_index(search) -> None:
    queries, points, k = search
    assert np.array_equal(
        nearest(queries, points, k, method="blas"), _reference(queries, points, k)
    )


@needs_faiss
@given(_searches())
@settings(max_examples=150, deadline=None)
def test_faiss_and_numpy_give_the_same_neighbours_and_votes(search) -> None:
    queries, points, k = search
    numpy_rows = nearest(queries, points, k, method="blas")
    faiss_rows = nearest(queries, points, k, method="faiss")
    assert np.array_equal(faiss_rows, numpy_rows)
    assert np.array_equal(
        vote_vector(faiss_rows, len(points)), vote_vector(numpy_rows, len(points))
    )


@needs_faiss
@pytest.mark.parametrize("k", [1, 3])
def test_same_neighbours_on_unit_vectors_with_duplicates_and_near_ties(k: int) -> None:
    rng = np.random.default_rng(5)
    points = rng.normal(size=(1500, 96))
    points[1::5] = points[0::5][: len(points[1::5])]  # exact duplicates (ties)
    points[2::5] = points[0::5][: len(points[2::5])] + 1e-7  # near ties below float32 noise
    points /= np.linalg.norm(points, axis=1, keepdims=True)
    queries = points[rng.integers(0, len(points), 700)] + rng.normal(scale=0.3, size=(700, 96))
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    numpy_rows = nearest(queries, points, k, method="blas")
    assert np.array_equal(nearest(queries, points, k, method="faiss"), numpy_rows)
    assert (numpy_rows[:, 0] % 5 != 1).all()  # a duplicate never beats its lower twin


@needs_faiss
def test_the_histogram_releases_the_same_votes_with_either_search() -> None:
    from safeshare.dp.randomness import Randomness
    from safeshare.synth.pe.histogram import NearestNeighbourHistogram

    rng = np.random.default_rng(9)
    private, synthetic = rng.normal(size=(800, 32)), rng.normal(size=(200, 32))
    released = [
        NearestNeighbourHistogram(2.0, 2, search=search).release(private, synthetic, Randomness(3))
        for search in ("blas", "faiss")
    ]
    assert np.array_equal(released[0], released[1])
