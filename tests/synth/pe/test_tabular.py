"""The tabular APIs and embedder over a public Domain."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from safeshare.data import Domain
from safeshare.data.domain import Column, Kind
from safeshare.errors import InputError
from safeshare.synth.pe.tabular import DomainAPI, TabularEmbedder


def test_random_api_is_uniform_over_each_column(adult_pgm) -> None:
    domain = adult_pgm.domain
    samples = DomainAPI(domain).random(40_000, np.random.default_rng(0))
    for column in domain:
        observed = np.bincount(samples[column.name], minlength=column.size)
        assert stats.chisquare(observed).pvalue > 1e-5, column.name


def test_variation_changes_only_the_chosen_share_of_columns(fair_table) -> None:
    domain = fair_table.domain
    api = DomainAPI(domain, crossover=0.0)
    base = pd.DataFrame({c: fair_table.column(c) for c in domain.names}).iloc[:2000]
    varied = api.vary(base, 0.25, np.random.default_rng(1))
    changed = (varied.to_numpy() != base.to_numpy()).sum(axis=1)
    allowed = max(1, round(0.25 * len(domain)))
    assert changed.max() <= allowed
    assert changed.mean() > 0.5 * allowed  # a uniform redraw can land on the same code
    assert list(varied.columns) == list(domain.names)


def test_ordered_columns_step_to_nearby_bins() -> None:
    domain = Domain((Column("x", Kind.ORDINAL, categories=tuple("abcdefghijklmnopqrst")),))
    base = pd.DataFrame({"x": np.full(500, 10)})
    varied = DomainAPI(domain, crossover=0.0).vary(base, 0.2, np.random.default_rng(2))
    steps = np.abs(varied["x"].to_numpy() - 10)
    assert steps.min() >= 1 and steps.max() <= 2


def test_embedding_distance_counts_mismatches(fair_table) -> None:
    domain = fair_table.domain
    embedder = TabularEmbedder(domain)
    frame = pd.DataFrame({c: fair_table.column(c) for c in domain.names}).iloc[:300]
    vectors = embedder.embed(frame).astype(float)
    codes = frame.to_numpy()
    squared = ((vectors[:, None] - vectors[None]) ** 2).sum(-1)
    categorical = [c.kind is not Kind.ORDINAL and c.kind is not Kind.NUMERIC for c in domain]
    mismatches = (codes[:, None, categorical] != codes[None, :, categorical]).sum(-1)
    ordered = ~np.array(categorical)
    assert (squared >= mismatches - 1e-6).all()
    assert (squared <= mismatches + ordered.sum() + 1e-6).all()


def test_bad_codes_and_columns_are_refused(fair_table) -> None:
    domain = fair_table.domain
    frame = pd.DataFrame({c: fair_table.column(c) for c in domain.names}).iloc[:5].copy()
    first = domain.names[0]
    frame[first] = domain[first].size  # one past the last code
    with pytest.raises(InputError, match=f"column {first!r} has codes outside"):
        TabularEmbedder(domain).embed(frame)
    with pytest.raises(InputError, match="not in the domain"):
        DomainAPI(domain, ordinal=["nope"])
    with pytest.raises(InputError, match="lack"):
        TabularEmbedder(domain).embed(frame.drop(columns=[first]))
