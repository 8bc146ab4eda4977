"""PrivateEvolution end to end on real data: cost up front, learning, resume, bad input."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from safeshare.dp.accountant import Accountant
from safeshare.dp.gdp import gdp_epsilon
from safeshare.errors import BudgetError, InputError, NotFittedError, RefitError
from safeshare.synth.pe import PrivateEvolution
from safeshare.synth.pe.checkpoint import Checkpoint
from safeshare.synth.pe.tabular import DomainAPI, TabularEmbedder


def _model(domain, **options) -> PrivateEvolution:
    settings = {"epsilon": 2.0, "iterations": 4, "samples_per_iteration": 300, "rng": 11}
    settings.update(options)
    return PrivateEvolution(api=DomainAPI(domain), embedder=TabularEmbedder(domain), **settings)


def test_cost_is_stated_before_data_and_matches_epsilon(fair_table) -> None:
    model = _model(fair_table.domain, delta=1e-6)
    events = model.privacy_events()
    sigma = model.noise_scale()
    assert [e.sigma for e in events] == [sigma] * 4
    assert Accountant(events).rho == pytest.approx(4 / (2 * sigma**2))
    assert gdp_epsilon(math.sqrt(4) / sigma, 1e-6) == pytest.approx(2.0)
    assert model.describe()["epsilon_exact_gdp"] == pytest.approx(2.0)
    share = _model(fair_table.domain, rho=0.05)
    assert Accountant(share.privacy_events()).rho == pytest.approx(0.05)


def _one_way_tvd(a: pd.DataFrame, b: pd.DataFrame, column: str, size: int) -> float:
    pa = np.bincount(a[column], minlength=size) / len(a)
    pb = np.bincount(b[column], minlength=size) / len(b)
    return 0.5 * float(np.abs(pa - pb).sum())


def test_evolution_moves_towards_the_private_data(fair_table) -> None:
    domain = fair_table.domain
    real = pd.DataFrame({c: fair_table.column(c) for c in domain.names})
    first = DomainAPI(domain).random(len(real), np.random.default_rng(0))
    model = _model(domain, epsilon=4.0, iterations=6).fit(fair_table)
    synthetic = model.sample(len(real))
    out = pd.DataFrame({c: synthetic.column(c) for c in domain.names})
    before = np.mean([_one_way_tvd(real, first, c.name, c.size) for c in domain])
    after = np.mean([_one_way_tvd(real, out, c.name, c.size) for c in domain])
    assert after < 0.6 * before
    assert model.population_.iteration == 5 and model.population_.measured


class _Line:
    """A random API on the line: draws from N(0, 5), variations move by N(0, 3 x degree)."""

    def random(self, n, rng):
        return pd.DataFrame({"x": rng.normal(0.0, 5.0, n)})

    def vary(self, samples, degree, rng):
        return samples + rng.normal(0.0, 3.0 * degree, samples.shape)

    def embed(self, samples):
        return samples[["x"]].to_numpy()


@pytest.mark.parametrize("selection", ["sample", "rank"])
def test_the_votes_move_the_population(selection) -> None:
    """Private records at 6 and a start centred on 0: the votes, not the start, decide where
    the population ends; with the records at -6 it ends there instead."""
    ends = {}
    for centre in (6.0, -6.0):
        private = pd.DataFrame({"x": np.random.default_rng(1).normal(centre, 0.5, 2000)})
        model = PrivateEvolution(
            _Line(), _Line(), epsilon=4.0, delta=1e-6, iterations=6, samples_per_iteration=200,
            selection=selection, rng=3,
        ).fit(private)  # fmt: skip
        ends[centre] = model.sample(2000)["x"]
    assert abs(ends[6.0].mean() - 6.0) < 1.0 and abs(ends[-6.0].mean() + 6.0) < 1.0
    assert ends[6.0].std() < 2.0  # the start's spread was 5


class _Stuck(_Line):
    """Variations that change nothing: repeats can only stay.  Counts the calls."""

    calls = 0

    def vary(self, samples, degree, rng):
        self.calls += 1
        return samples.copy()


def test_sampled_texts_repeat_at_most_the_stated_share() -> None:
    """1,000 rows from a population of 200 repeat most samples; the repeats are varied at the
    finest degree until at most ``max_duplicates`` remain, where the votes put the population."""
    private = pd.DataFrame({"x": np.random.default_rng(1).normal(6.0, 0.5, 2000)})
    settings = {"epsilon": 4.0, "delta": 1e-6, "iterations": 3, "samples_per_iteration": 200}
    model = PrivateEvolution(_Line(), _Line(), rng=3, **settings).fit(private)
    drawn = model.sample(1000)
    assert len(drawn) == 1000 and drawn.duplicated().mean() <= 0.05
    assert abs(drawn["x"].mean() - 6.0) < 1.0 and model.describe()["max_duplicates"] == 0.05
    unique = PrivateEvolution(_Line(), _Line(), rng=3, max_duplicates=0.0, **settings)
    assert not unique.fit(private).sample(1000).duplicated().any()
    # an API whose variations repeat their input: one round of redraws shows it, no more
    api = _Stuck()
    stuck = PrivateEvolution(api, _Line(), rng=3, **settings).fit(private)
    fitting = api.calls
    kept = stuck.sample(1000)
    assert len(kept) == 1000 and kept.duplicated().mean() > 0.5 and api.calls == fitting + 1
    with pytest.raises(InputError, match="max_duplicates"):  # refused before the data
        PrivateEvolution(_Line(), _Line(), rng=3, max_duplicates=2.0, **settings).fit(private)


def test_rank_selection_keeps_the_selected_samples(fair_table) -> None:
    history = []
    model = _model(
        fair_table.domain, selection="rank", offspring=3, iterations=3,
        callbacks=[lambda info: history.append(info.population)],
    ).fit(fair_table)  # fmt: skip
    last = model.population_
    assert len(last) == 300 and len(np.unique(last.parents)) == 100
    parent = history[-2]  # the measured population the last one came from
    kept = last.samples.iloc[:100].reset_index(drop=True)  # the kept first, then variations
    assert kept.equals(parent.samples.iloc[last.parents[:100]].reset_index(drop=True))
    top = np.argsort(-parent.votes, kind="stable")[:100]
    assert parent.votes[last.parents[:100]].min() >= parent.votes[top].min()
    assert model.describe()["offspring"] == 3 and model.describe()["keep_selected"]


def test_resume_after_an_interruption_gives_the_same_population(fair_table, tmp_path) -> None:
    domain = fair_table.domain
    whole = _model(domain, checkpoint=tmp_path / "whole").fit(fair_table)

    class StopError(Exception):
        pass

    def stop_at_two(info) -> None:
        if info.iteration == 2:
            raise StopError

    folder = tmp_path / "resumed"
    with pytest.raises(StopError):
        _model(domain, checkpoint=folder, callbacks=[stop_at_two]).fit(fair_table)
    seen: list[int] = []
    resumed = _model(domain, checkpoint=folder, callbacks=[lambda i: seen.append(i.iteration)])
    resumed.fit(fair_table)
    assert seen == [3, 4]  # the measured histograms 1 and 2 are not drawn again
    pd.testing.assert_frame_equal(resumed.population_.samples, whole.population_.samples)
    assert np.array_equal(resumed.population_.votes, whole.population_.votes)
    assert np.array_equal(resumed.population_.parents, whole.population_.parents)
    assert sorted(p.name for p in folder.iterdir()) == [
        *(f"population-{t:03d}.parquet" for t in range(4)),
        "state.json",
    ]
    with pytest.raises(InputError, match="iterations=4"):
        _model(domain, checkpoint=folder, iterations=5).fit(fair_table)


def test_fit_once_and_sample_after(fair_table) -> None:
    model = _model(fair_table.domain)
    with pytest.raises(NotFittedError):
        model.sample(5)
    model.fit(fair_table)
    assert len(model.sample(7)) == 7
    with pytest.raises(RefitError):
        model.fit(fair_table)


def test_a_budget_too_small_says_what_would_work(fair_table) -> None:
    model = _model(fair_table.domain, epsilon=0.01, samples_per_iteration=3000)
    with pytest.raises(BudgetError, match=r"samples_per_iteration <= \d+.*epsilon >="):
        model.fit(fair_table)


def test_bad_settings_and_apis_are_refused(fair_table) -> None:
    domain = fair_table.domain
    with pytest.raises(InputError, match="samples_per_iteration"):
        _model(domain, samples_per_iteration=[100, 100]).fit(fair_table)
    with pytest.raises(InputError, match="variation_degrees"):
        _model(domain, variation_degrees=1.5).fit(fair_table)

    class Short(DomainAPI):
        def vary(self, samples, degree, rng):
            return super().vary(samples, degree, rng).iloc[:-1]

    broken = PrivateEvolution(
        api=Short(domain),
        embedder=TabularEmbedder(domain),
        iterations=3,
        samples_per_iteration=200,
        rng=0,
    )
    with pytest.raises(InputError, match="199 samples where 200"):
        broken.fit(fair_table)


def test_checkpoint_refuses_reserved_columns(tmp_path) -> None:
    from safeshare.synth.pe.population import Population

    store = Checkpoint(tmp_path, {})
    with pytest.raises(InputError, match="reserved"):
        store.save(Population.random(pd.DataFrame({"__pe_votes__": [1]})))


def test_importing_pe_does_not_import_torch() -> None:
    code = "import sys, safeshare, safeshare.synth.pe; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


def test_a_table_alone_gives_tabular_pe_as_the_pipeline_needs(fair_table) -> None:
    model = PrivateEvolution(rho=0.05, iterations=3, samples_per_iteration=200, rng=0)
    assert Accountant(model.privacy_events()).rho == pytest.approx(0.05)  # before any data
    synthetic = model.fit(fair_table).sample(50)
    assert synthetic.domain == fair_table.domain and len(synthetic) == 50
    frame = pd.DataFrame({c: fair_table.column(c) for c in fair_table.columns})
    with pytest.raises(InputError, match="give api= and embedder="):
        PrivateEvolution(rho=0.05, iterations=3, samples_per_iteration=200).fit(frame)
