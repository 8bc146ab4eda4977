"""PrivateEvolution(neighbour_search=...): the neighbour search is a choice, with the same votes."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from safeshare.errors import InputError, MissingDependencyError
from safeshare.synth.pe import PrivateEvolution
from safeshare.synth.pe import neighbors as neighbors_module
from safeshare.synth.pe.neighbors import faiss_available, nearest
from safeshare.synth.pe.tabular import DomainAPI, TabularEmbedder

needs_faiss = pytest.mark.skipif(
    not faiss_available(), reason="faiss is not installed (pip install 'safeshare[faiss]')"
)


class CountingEmbedder:
    """The tabular embedder, counting its calls (to see that no data was read)."""

    def __init__(self, embedder: TabularEmbedder) -> None:
        self.embedder = embedder
        self.calls = 0

    def embed(self, samples: pd.DataFrame) -> np.ndarray:
        self.calls += 1
        return self.embedder.embed(samples)


def _model(domain, embedder=None, **options) -> PrivateEvolution:
    settings = {"epsilon": 2.0, "iterations": 3, "samples_per_iteration": 200, "rng": 5}
    settings.update(options)
    return PrivateEvolution(
        api=DomainAPI(domain), embedder=embedder or TabularEmbedder(domain), **settings
    )


def _search_methods(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the method every histogram's search runs with."""
    seen: list[str] = []

    def recording(queries, points, k=1, method="auto"):
        seen.append(method)
        return nearest(queries, points, k, method)

    monkeypatch.setattr("safeshare.synth.pe.histogram.nearest", recording)
    return seen


@pytest.mark.parametrize("choice", ["auto", "numpy", pytest.param("faiss", marks=needs_faiss)])
def test_each_search_gives_the_same_population(fair_table, choice, monkeypatch) -> None:
    reference = _model(fair_table.domain).fit(fair_table).population_
    seen = _search_methods(monkeypatch)
    model = _model(fair_table.domain, neighbour_search=choice).fit(fair_table)
    assert seen == [choice] * 3  # the histogram searched with the chosen method
    pd.testing.assert_frame_equal(model.population_.samples, reference.samples)
    assert np.array_equal(model.population_.votes, reference.votes)
    assert model.describe()["neighbour_search"] == choice


def test_faiss_asked_for_but_missing_says_how_to_install(fair_table, monkeypatch) -> None:
    monkeypatch.setattr(neighbors_module, "faiss_available", lambda: False)
    embedder = CountingEmbedder(TabularEmbedder(fair_table.domain))
    model = _model(fair_table.domain, embedder, neighbour_search="faiss")
    with pytest.raises(MissingDependencyError, match=r"pip install 'safeshare\[faiss\]'"):
        model.fit(fair_table)
    assert embedder.calls == 0 and not model.fitted_  # refused before any data was read
    with pytest.raises(MissingDependencyError, match="faiss"):
        nearest(np.zeros((2, 20)), np.ones((3, 20)), method="faiss")


@pytest.mark.parametrize("bad", ["fast", "blas", 2, None])
def test_an_unknown_search_is_refused(fair_table, bad) -> None:
    with pytest.raises(InputError, match=r"one of \['auto', 'numpy', 'faiss'\]"):
        _model(fair_table.domain, neighbour_search=bad).fit(fair_table)


def test_numpy_never_picks_faiss(monkeypatch) -> None:
    monkeypatch.setattr(neighbors_module, "FAISS_MIN_PAIRS", 1)
    monkeypatch.setattr(neighbors_module, "faiss_available", lambda: True)

    def no_faiss(*args: object) -> None:
        raise AssertionError("faiss was used")

    monkeypatch.setattr(neighbors_module, "_faiss", no_faiss)
    rng = np.random.default_rng(0)
    points, queries = rng.normal(size=(50, 32)), rng.normal(size=(40, 32))
    expected = np.argmin(((queries[:, None] - points[None]) ** 2).sum(axis=2), axis=1)
    assert np.array_equal(nearest(queries, points, 1, "numpy")[:, 0], expected)
    with pytest.raises(AssertionError, match="faiss was used"):
        nearest(queries, points, 1, "auto")  # auto takes faiss above FAISS_MIN_PAIRS
